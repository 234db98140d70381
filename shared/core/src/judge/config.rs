//! A tenant's judge settings (`GET`/`PUT /v1/config/judges`). The provider's API key is never
//! part of them: it comes from the deployment (Secrets Manager on AWS, an environment
//! variable locally), so a config document can be shown, logged and exported safely.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::FieldError;
use crate::budget::DEFAULT_MAX_LOOPS;

use super::Stage;

/// Judge settings of one tenant.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct JudgeConfig {
    /// Base URL of an OpenAI-compatible API (`…/v1`; `/chat/completions` is appended). `https`,
    /// or `http` to a loopback address (a local model server). Null: the deployment's provider
    /// (`AGENTRL_JUDGE_BASE_URL`), and with none, every judge abstains (or falls back to rules).
    /// Only the deployment's provider is sent the deployment's API key.
    pub base_url: Option<String>,
    /// The strong model (faithfulness and safety judges).
    pub judge_model: String,
    /// The cheap model (relevance, minimality and creativity judges; every critic gate).
    pub critic_model: String,
    /// Pass marks of the critic gates on the 1–10 scale.
    pub gates: GateThresholds,
    /// Refinements a gate allows before it escalates to a human (the budget's loop rule).
    pub max_refinements: u32,
    /// How long a judgment is reused for the same artifact, kind, model and rubric version.
    pub cache_ttl_seconds: u64,
    /// Timeout of one provider call.
    pub timeout_ms: u64,
    /// Retries after a 429, a 5xx, a timeout or a dropped connection.
    pub max_retries: u32,
    /// Provider calls in flight per tenant and process.
    pub max_concurrency: u32,
    /// What a judge that cannot answer gives.
    pub fallback: Fallback,
    /// Prices by model, for the usage report; unpriced models report tokens and no cost.
    pub prices: BTreeMap<String, Price>,
}

/// Pass marks of the critic gates (1–10).
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GateThresholds {
    /// Default 6.
    pub triage: f64,
    /// Default 5.
    pub research: f64,
    /// Default 7.
    pub response: f64,
}

/// A model's price in the provider's currency per million tokens.
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    /// Per million prompt tokens.
    pub input_per_million: f64,
    /// Per million completion tokens.
    pub output_per_million: f64,
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
            if model.trim().is_empty() || model.len() > 200 {
                return Err(FieldError::new(field, "must be 1 to 200 characters"));
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
        if self.prices.len() > 100 {
            return Err(FieldError::new("prices", "at most 100 models"));
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
/// deployment's own network (instance metadata, private services) over plain HTTP, and
/// `/chat/completions` must stay the end of its path (no query or fragment to swallow it).
fn check_base_url(url: &str) -> Result<(), &'static str> {
    let (scheme, rest) = url
        .split_once("://")
        .ok_or("must be an absolute http(s) URL")?;
    if url.contains(['?', '#']) {
        return Err("must not have a query or a fragment");
    }
    let authority = rest.split('/').next().unwrap_or_default();
    if authority.is_empty() || authority.contains('@') || url.len() > 2048 {
        return Err("must be an absolute http(s) URL with a host and no credentials");
    }
    let host = match authority.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or_default(),
        None => authority.rsplit_once(':').map_or(authority, |(h, _)| h),
    }
    .to_ascii_lowercase();
    let ip = host.parse::<std::net::IpAddr>().ok();
    let link_local = match ip {
        Some(std::net::IpAddr::V4(v4)) => v4.is_link_local(),
        // fe80::/10, and fd00:ec2::254 (the instance metadata service over IPv6).
        Some(std::net::IpAddr::V6(v6)) => {
            (v6.segments()[0] & 0xffc0) == 0xfe80 || v6.segments()[..2] == [0xfd00, 0x0ec2]
        }
        None => false,
    };
    if link_local {
        return Err("must not be a link-local (instance metadata) address");
    }
    let loopback = host == "localhost" || ip.is_some_and(|ip| ip.is_loopback());
    match scheme {
        "https" => Ok(()),
        "http" if loopback => Ok(()),
        "http" => Err("must use https unless the host is a loopback address"),
        _ => Err("must be an absolute http(s) URL"),
    }
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
