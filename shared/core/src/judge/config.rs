//! A tenant's judge settings (`GET`/`PUT /v1/config/judges`). The provider's API key is never
//! part of them: it comes from the deployment (Secrets Manager on AWS, an environment
//! variable locally), so a config document can be shown, logged and exported safely.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use regex::Regex;
use serde::{Deserialize, Serialize};

use crate::FieldError;
use crate::budget::DEFAULT_MAX_LOOPS;

use super::Stage;

/// What a tenant's `base_url` must match, and the document's pattern for it: `https` to a
/// host name, or `http` to a loopback host (`localhost`, 127.0.0.0/8 dotted, `[::1]`); then
/// an optional port and path, and no credentials, query or fragment. An `https` host is a
/// name whose last label starts with a letter, so no IP address in any spelling the URL
/// parser reads (`169.254.169.254`, `0xa9fea9fe`, `2852039166`, `[fd00:ec2::254]`) can reach
/// the instance metadata or another address chosen by number.
pub const BASE_URL_PATTERN: &str = r"^(?:https://(?:[A-Za-z0-9_-]+\.)*[A-Za-z][A-Za-z0-9_-]*|http://(?:localhost|127(?:\.(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])){3}|\[::1\]))(?::[0-9]{1,5})?(?:/[^?#]*)?$";
/// What a `base_url` not matching [`BASE_URL_PATTERN`] is told.
const BASE_URL_RULE: &str = "must be https://HOST[:PORT][/PATH] with HOST a name (not an IP \
                             address), or http:// to localhost, 127.x.x.x or [::1]; no \
                             credentials, query or fragment";
/// Longest `base_url`, in characters.
pub const MAX_BASE_URL_CHARS: usize = 2048;
/// Longest model name, in characters.
pub const MAX_MODEL_CHARS: usize = 200;
/// Most models with a price.
pub const MAX_PRICED_MODELS: usize = 100;

static BASE_URL: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(BASE_URL_PATTERN).expect("the base URL pattern compiles"));

/// Judge settings of one tenant.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct JudgeConfig {
    /// Base URL of an OpenAI-compatible API (`…/v1`; `/chat/completions` is appended), at
    /// most 2048 characters: `https` to a host name (not an IP address), or `http` to
    /// `localhost`, 127.0.0.0/8 or `[::1]` (a local model server); an optional port and path,
    /// no credentials, query or fragment. Null: the deployment's provider
    /// (`AGENTRL_JUDGE_BASE_URL`), and with none, every judge abstains (or falls back to rules).
    /// Only the deployment's provider is sent the deployment's API key.
    #[cfg_attr(
        feature = "openapi",
        schema(
            max_length = 2048,
            pattern = r"^(?:https://(?:[A-Za-z0-9_-]+\.)*[A-Za-z][A-Za-z0-9_-]*|http://(?:localhost|127(?:\.(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])){3}|\[::1\]))(?::[0-9]{1,5})?(?:/[^?#]*)?$"
        )
    )]
    pub base_url: Option<String>,
    /// The strong model (faithfulness and safety judges): 1 to 200 characters, not blank.
    #[cfg_attr(
        feature = "openapi",
        schema(
            max_length = 200,
            pattern = r"^[\u0009-\u000D \u0085\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]*[^\u0009-\u000D \u0085\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000][\s\S]*$"
        )
    )]
    pub judge_model: String,
    /// The cheap model (relevance, minimality and creativity judges; every critic gate): 1 to
    /// 200 characters, not blank.
    #[cfg_attr(
        feature = "openapi",
        schema(
            max_length = 200,
            pattern = r"^[\u0009-\u000D \u0085\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]*[^\u0009-\u000D \u0085\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000][\s\S]*$"
        )
    )]
    pub critic_model: String,
    /// Pass marks of the critic gates on the 1–10 scale.
    pub gates: GateThresholds,
    /// Refinements a gate allows before it escalates to a human (the budget's loop rule):
    /// 1 to 100.
    #[cfg_attr(feature = "openapi", schema(minimum = 1, maximum = 100))]
    pub max_refinements: u32,
    /// How long a judgment is reused for the same artifact, kind, model and rubric version:
    /// 60 s to 90 days.
    #[cfg_attr(feature = "openapi", schema(minimum = 60, maximum = 7_776_000))]
    pub cache_ttl_seconds: u64,
    /// Timeout of one provider call: 100 ms to 5 minutes.
    #[cfg_attr(feature = "openapi", schema(minimum = 100, maximum = 300_000))]
    pub timeout_ms: u64,
    /// Retries after a 429, a 5xx, a timeout or a dropped connection: 0 to 10.
    #[cfg_attr(feature = "openapi", schema(minimum = 0, maximum = 10))]
    pub max_retries: u32,
    /// Provider calls in flight per tenant and process: 1 to 64.
    #[cfg_attr(feature = "openapi", schema(minimum = 1, maximum = 64))]
    pub max_concurrency: u32,
    /// What a judge that cannot answer gives.
    pub fallback: Fallback,
    /// Prices by model (at most 100), for the usage report; unpriced models report tokens
    /// and no cost.
    #[cfg_attr(feature = "openapi", schema(schema_with = prices_schema))]
    pub prices: BTreeMap<String, Price>,
}

/// Pass marks of the critic gates (1–10).
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GateThresholds {
    /// 1 to 10; default 6.
    #[cfg_attr(feature = "openapi", schema(minimum = 1, maximum = 10))]
    pub triage: f64,
    /// 1 to 10; default 5.
    #[cfg_attr(feature = "openapi", schema(minimum = 1, maximum = 10))]
    pub research: f64,
    /// 1 to 10; default 7.
    #[cfg_attr(feature = "openapi", schema(minimum = 1, maximum = 10))]
    pub response: f64,
}

/// A model's price in the provider's currency per million tokens.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    /// Per million prompt tokens, ≥ 0.
    #[cfg_attr(feature = "openapi", schema(minimum = 0))]
    pub input_per_million: f64,
    /// Per million completion tokens, ≥ 0.
    #[cfg_attr(feature = "openapi", schema(minimum = 0))]
    pub output_per_million: f64,
}

/// `prices`: a [`Price`] by model, at most [`MAX_PRICED_MODELS`].
#[cfg(feature = "openapi")]
fn prices_schema() -> utoipa::openapi::Schema {
    use utoipa::PartialSchema;
    use utoipa::openapi::schema::{ObjectBuilder, Type};
    ObjectBuilder::new()
        .schema_type(Type::Object)
        .description(Some(
            "Prices by model (at most 100), for the usage report; unpriced models report \
             tokens and no cost.",
        ))
        .additional_properties(Some(Price::schema()))
        .max_properties(Some(MAX_PRICED_MODELS))
        .into()
}

/// What a judge that cannot answer gives.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Fallback {
    /// An abstention with the reason (left out of the reward).
    #[default]
    Abstain,
    /// A rule-based score where the kind has one (marked `source: rules`, low confidence),
    /// else an abstention.
    Rules,
}

impl Default for GateThresholds {
    fn default() -> Self {
        Self {
            triage: 6.0,
            research: 5.0,
            response: 7.0,
        }
    }
}

impl GateThresholds {
    /// The pass mark of `stage`.
    #[must_use]
    pub fn of(&self, stage: Stage) -> f64 {
        match stage {
            Stage::Triage => self.triage,
            Stage::Research => self.research,
            Stage::Response => self.response,
        }
    }
}

impl Default for JudgeConfig {
    fn default() -> Self {
        Self {
            base_url: None,
            judge_model: "gpt-4.1".to_owned(),
            critic_model: "gpt-4.1-mini".to_owned(),
            gates: GateThresholds::default(),
            max_refinements: DEFAULT_MAX_LOOPS,
            cache_ttl_seconds: 7 * 24 * 3600,
            timeout_ms: 30_000,
            max_retries: 3,
            max_concurrency: 4,
            fallback: Fallback::Abstain,
            prices: BTreeMap::new(),
        }
    }
}

impl JudgeConfig {
    /// The model that answers `role`.
    #[must_use]
    pub fn model(&self, role: super::Role) -> &str {
        match role {
            super::Role::Judge => &self.judge_model,
            super::Role::Critic => &self.critic_model,
        }
    }

    /// Checks every field.
    ///
    /// # Errors
    /// The first field out of range, named.
    pub fn validate(&self) -> Result<(), FieldError> {
        if let Some(url) = &self.base_url {
            check_base_url(url).map_err(|reason| FieldError::new("base_url", reason))?;
        }
        for (field, model) in [
            ("judge_model", &self.judge_model),
            ("critic_model", &self.critic_model),
        ] {
            if model.trim().is_empty() || model.chars().count() > MAX_MODEL_CHARS {
                return Err(FieldError::new(
                    field,
                    format!("must be 1 to {MAX_MODEL_CHARS} characters, not blank"),
                ));
            }
        }
        for (field, mark) in [
            ("gates.triage", self.gates.triage),
            ("gates.research", self.gates.research),
            ("gates.response", self.gates.response),
        ] {
            if !(1.0..=10.0).contains(&mark) {
                return Err(FieldError::new(field, "must be within 1 and 10"));
            }
        }
        let ranges = [
            ("max_refinements", u64::from(self.max_refinements), 1, 100),
            (
                "cache_ttl_seconds",
                self.cache_ttl_seconds,
                60,
                90 * 24 * 3600,
            ),
            ("timeout_ms", self.timeout_ms, 100, 300_000),
            ("max_retries", u64::from(self.max_retries), 0, 10),
            ("max_concurrency", u64::from(self.max_concurrency), 1, 64),
        ];
        for (field, value, min, max) in ranges {
            if !(min..=max).contains(&value) {
                return Err(FieldError::new(
                    field,
                    format!("must be within {min} and {max}"),
                ));
            }
        }
        if self.prices.len() > MAX_PRICED_MODELS {
            return Err(FieldError::new(
                "prices",
                format!("at most {MAX_PRICED_MODELS} models"),
            ));
        }
        for (model, price) in &self.prices {
            for (name, value) in [
                ("input_per_million", price.input_per_million),
                ("output_per_million", price.output_per_million),
            ] {
                if !(value.is_finite() && value >= 0.0) {
                    return Err(FieldError::new(
                        format!("prices.{model}.{name}"),
                        "must be a finite number ≥ 0",
                    ));
                }
            }
        }
        Ok(())
    }
}

/// Why a provider URL is refused: tenants choose it, so it must not reach into the
/// deployment's own network (instance metadata, private services) by address or over plain
/// HTTP, and `/chat/completions` must stay the end of its path (no query or fragment to
/// swallow it). [`BASE_URL_PATTERN`] is the whole rule, besides the length.
pub fn check_base_url(url: &str) -> Result<(), String> {
    if url.chars().count() > MAX_BASE_URL_CHARS {
        return Err(format!("must be at most {MAX_BASE_URL_CHARS} characters"));
    }
    if !BASE_URL.is_match(url) {
        return Err(BASE_URL_RULE.to_owned());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_are_valid_and_match_the_source_design() {
        let c = JudgeConfig::default();
        c.validate().expect("valid");
        assert_eq!(
            (c.gates.triage, c.gates.research, c.gates.response),
            (6.0, 5.0, 7.0)
        );
        assert_eq!(c.max_refinements, DEFAULT_MAX_LOOPS);
    }

    #[test]
    fn provider_urls_are_https_or_loopback() {
        for ok in [
            "https://api.openai.com/v1",
            "https://judge.internal.example:8443/v1",
            "http://127.0.0.1:8080/v1",
            "http://localhost:11434/v1",
            "http://[::1]:9000/v1",
            "http://127.255.0.1",
            "https://model_server.local",
        ] {
            check_base_url(ok).expect(ok);
        }
        for bad in [
            "api.openai.com/v1",
            "ftp://example.com",
            "http://example.com/v1",
            "http://10.0.0.5/v1",
            "https://169.254.169.254/latest",
            "http://169.254.169.254/latest",
            "https://[fd00:ec2::254]/",
            "https://user:pw@example.com/v1",
            "https://",
            "http://127.attacker.example/v1",
            "https://api.example.com/v1?x=",
            "https://api.example.com/v1#",
            "https://[fe80::1]/v1",
            // An address by number, in the spellings a URL parser reads as one.
            "https://10.0.0.5/v1",
            "https://0xa9fea9fe/latest",
            "https://2852039166/latest",
            "https://169.254.169.254./latest",
            "https://[::ffff:169.254.169.254]/",
            "https://%31%36%39.254.169.254/",
            "https://evil.example\\@169.254.169.254/",
            "http://127.0.0.01/v1",
            "http://localhost:8080?x",
        ] {
            assert!(check_base_url(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn out_of_range_fields_are_named() {
        type Edit = fn(&mut JudgeConfig);
        let table: [(Edit, &str); 7] = [
            (
                |c| c.base_url = Some("http://example.com".into()),
                "base_url",
            ),
            (|c| c.critic_model = " ".into(), "critic_model"),
            (|c| c.gates.response = 11.0, "gates.response"),
            (|c| c.max_refinements = 0, "max_refinements"),
            (|c| c.cache_ttl_seconds = 1, "cache_ttl_seconds"),
            (|c| c.max_concurrency = 0, "max_concurrency"),
            (
                |c| {
                    c.prices.insert(
                        "m".into(),
                        Price {
                            input_per_million: -1.0,
                            output_per_million: 1.0,
                        },
                    );
                },
                "prices.m.input_per_million",
            ),
        ];
        for (edit, field) in table {
            let mut c = JudgeConfig::default();
            edit(&mut c);
            assert_eq!(c.validate().expect_err(field).field, field);
        }
    }

    #[test]
    fn unknown_fields_are_refused_and_missing_ones_default() {
        let c: JudgeConfig =
            serde_json::from_str(r#"{"critic_model": "small"}"#).expect("partial config");
        assert_eq!(c.critic_model, "small");
        assert_eq!(c.judge_model, JudgeConfig::default().judge_model);
        assert!(serde_json::from_str::<JudgeConfig>(r#"{"api_key": "sk-1"}"#).is_err());
    }
}
