//! `GET`/`PUT /v1/config/gateway`: where a tenant's agents' calls go.

use serde::{Deserialize, Serialize};

use crate::FieldError;

/// A tenant's gateway settings. No key is stored here: the deployment's own key goes only to
/// the deployment's own upstream, and a tenant-set URL gets no key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields, default)]
pub struct GatewayConfig {
    /// An OpenAI-compatible server's base URL (the part before `/chat/completions`), the
    /// judges' provider rules: `https` to a host name (not an IP address), or `http` to
    /// `localhost`, 127.0.0.0/8 or `[::1]`; no credentials, query or fragment. `null`: the
    /// deployment's upstream (`AGENTRL_GATEWAY_BASE_URL`), the only one sent the deployment's
    /// key.
    #[cfg_attr(
        feature = "openapi",
        schema(
            max_length = 2048,
            pattern = r"^(?:https://(?:[A-Za-z0-9_-]+\.)*[A-Za-z][A-Za-z0-9_-]*|http://(?:localhost|127(?:\.(?:25[0-5]|2[0-4][0-9]|1[0-9]{2}|[1-9]?[0-9])){3}|\[::1\]))(?::[0-9]{1,5})?(?:/[^?#]*)?$"
        )
    )]
    pub base_url: Option<String>,
    /// A call's whole upstream time, in milliseconds (1 s to 15 min).
    #[cfg_attr(feature = "openapi", schema(minimum = 1_000, maximum = 900_000))]
    pub request_timeout_ms: u64,
    /// A session without calls for this long is ended (seconds, 1 min to 1 day).
    #[cfg_attr(feature = "openapi", schema(minimum = 60, maximum = 86_400))]
    pub session_idle_seconds: u64,
    /// Ask the upstream for token ids and the sampled tokens' logprobs (vLLM:
    /// `return_token_ids`, `logprobs`), so the trainer never re-tokenises.
    pub token_ids: bool,
    /// Where the upstream's hosts read synced adapters (`agentrl models sync --dest`), an
    /// absolute path as those hosts see it. Set: promoting a version (or starting its canary)
    /// first has the upstream serve it (vLLM: `POST /v1/load_lora_adapter` with `lora_name`
    /// `{agent_id}-{version}` and `lora_path` `{lora_dir}/{tenant}/{agent_id}-{version}`), and
    /// versions no longer routed are unloaded. `null`: the tenant serves versions itself.
    #[cfg_attr(feature = "openapi", schema(max_length = 1024, pattern = r"^/"))]
    pub lora_dir: Option<String>,
}

impl Default for GatewayConfig {
    fn default() -> Self {
        Self {
            base_url: None,
            request_timeout_ms: 120_000,
            session_idle_seconds: 1_800,
            token_ids: true,
            lora_dir: None,
        }
    }
}

impl GatewayConfig {
    /// Checks every field.
    ///
    /// # Errors
    /// The first field out of its range, or a URL the provider rules refuse.
    pub fn validate(&self) -> Result<(), FieldError> {
        if let Some(url) = &self.base_url {
            crate::judge::check_base_url(url).map_err(|r| FieldError::new("base_url", r))?;
        }
        if !(1_000..=900_000).contains(&self.request_timeout_ms) {
            return Err(FieldError::new(
                "request_timeout_ms",
                "must be between 1000 and 900000",
            ));
        }
        if !(60..=86_400).contains(&self.session_idle_seconds) {
            return Err(FieldError::new(
                "session_idle_seconds",
                "must be between 60 and 86400",
            ));
        }
        if let Some(dir) = &self.lora_dir {
            let plain = dir.starts_with('/')
                && dir.len() <= 1024
                && !dir.chars().any(char::is_control)
                && !dir.split('/').any(|part| part == "..");
            if !plain {
                return Err(FieldError::new(
                    "lora_dir",
                    "must be an absolute path of at most 1024 characters, without `..`",
                ));
            }
        }
        Ok(())
    }

    /// Where the upstream reads the adapter served as `name` of `tenant`, when versions are
    /// loaded into it.
    #[must_use]
    pub fn lora_path(&self, tenant: &str, name: &str) -> Option<String> {
        let dir = self.lora_dir.as_deref()?.trim_end_matches('/');
        Some(format!("{dir}/{tenant}/{name}"))
    }

    /// The base URL without a trailing slash, when the tenant set one.
    #[must_use]
    pub fn base_url(&self) -> Option<&str> {
        self.base_url.as_deref().map(|u| u.trim_end_matches('/'))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(feature = "openapi")]
    #[test]
    fn the_documented_url_pattern_is_the_enforced_one() {
        use utoipa::PartialSchema;
        let schema = serde_json::to_value(GatewayConfig::schema()).unwrap();
        let pattern = &schema["properties"]["base_url"]["pattern"];
        assert_eq!(pattern, crate::judge::BASE_URL_PATTERN);
    }

    #[test]
    fn urls_follow_the_provider_rules_and_ranges_are_enforced() {
        assert!(GatewayConfig::default().validate().is_ok());
        for ok in ["https://vllm.example.com/v1", "http://127.0.0.1:8000/v1"] {
            let c = GatewayConfig {
                base_url: Some(ok.into()),
                ..GatewayConfig::default()
            };
            assert!(c.validate().is_ok(), "{ok}");
        }
        for bad in [
            "http://vllm.example.com/v1",
            "https://169.254.169.254/latest",
            "http://10.0.0.2:8000/v1",
        ] {
            let c = GatewayConfig {
                base_url: Some(bad.into()),
                ..GatewayConfig::default()
            };
            assert_eq!(c.validate().unwrap_err().field, "base_url", "{bad}");
        }
        let c = GatewayConfig {
            request_timeout_ms: 10,
            ..GatewayConfig::default()
        };
        assert_eq!(c.validate().unwrap_err().field, "request_timeout_ms");
        for bad in ["adapters", "/mnt/../etc", "/mnt/a\nb"] {
            let c = GatewayConfig {
                lora_dir: Some(bad.into()),
                ..GatewayConfig::default()
            };
            assert_eq!(c.validate().unwrap_err().field, "lora_dir", "{bad}");
        }
        let c = GatewayConfig {
            lora_dir: Some("/mnt/adapters/".into()),
            ..GatewayConfig::default()
        };
        assert!(c.validate().is_ok());
        assert_eq!(
            c.lora_path("tenant-a", "coder-7-v2").as_deref(),
            Some("/mnt/adapters/tenant-a/coder-7-v2")
        );
    }
}
