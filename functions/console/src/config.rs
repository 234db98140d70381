//! How the console signs in, from the environment: through an OIDC provider (authorization
//! code with PKCE) when `AGENTRL_CONSOLE_OIDC_CLIENT_ID` is set, with the API key otherwise.
//! The same variables configure `agentrl serve` and the console's Lambda function.
//!
//! | variable | |
//! | --- | --- |
//! | `AGENTRL_CONSOLE_OIDC_CLIENT_ID` | the console's client id at the provider (a public client: no secret) |
//! | `AGENTRL_CONSOLE_OIDC_ISSUER` | the provider's issuer (what the API's tokens carry in `iss`) |
//! | `AGENTRL_CONSOLE_OIDC_AUTHORIZATION_ENDPOINT` | where the browser is sent to sign in |
//! | `AGENTRL_CONSOLE_OIDC_TOKEN_ENDPOINT` | where the page trades the code for tokens (its origin joins `connect-src`) |
//! | `AGENTRL_CONSOLE_OIDC_SCOPES` | space-separated scopes, `openid` by default |
//! | `AGENTRL_CONSOLE_OIDC_REDIRECT_URI` | the redirect URI registered at the provider; by default the page's origin + `/console/callback` |
//!
//! Every URL must be https (http only on a loopback host), or the configuration is refused.

use agentrl_http::oidc::secure_origin;
use serde::Serialize;

/// Environment variable prefix of the settings.
const PREFIX: &str = "AGENTRL_CONSOLE_OIDC_";

/// How the page signs in.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConsoleConfig {
    oidc: Option<OidcClient>,
    /// The token endpoint's origin, validated and written anew.
    token_origin: Option<String>,
}

/// The console as a public OIDC client of the provider the API trusts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OidcClient {
    /// The provider's issuer.
    pub issuer: String,
    /// The authorization endpoint.
    pub authorization_endpoint: String,
    /// The token endpoint.
    pub token_endpoint: String,
    /// The console's client id.
    pub client_id: String,
    /// Space-separated scopes.
    pub scopes: String,
    /// The redirect URI; none: the page's origin + `/console/callback`.
    pub redirect_uri: Option<String>,
}

/// A setting that is missing or not a URL the console may use.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("{PREFIX}{name}: {reason}")]
pub struct ConfigError {
    name: &'static str,
    reason: &'static str,
}

/// What `/console/config.json` answers.
#[derive(Serialize)]
struct Document<'a> {
    /// The provider to sign in with; null: the API key.
    oidc: Option<&'a OidcClient>,
}

impl ConsoleConfig {
    /// API-key sign-in only.
    pub fn api_key() -> Self {
        Self::default()
    }

    /// The settings from the environment.
    ///
    /// # Errors
    /// When a client id is set and a URL is missing or not https (http only on loopback).
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_lookup(|name| std::env::var(format!("{PREFIX}{name}")).ok())
    }

    /// The settings from `get` (a variable's name without the prefix → its value).
    ///
    /// # Errors
    /// As [`ConsoleConfig::from_env`].
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let get = |name: &str| {
            get(name)
                .map(|v| v.trim().to_owned())
                .filter(|v| !v.is_empty())
        };
        let Some(client_id) = get("CLIENT_ID") else {
            return Ok(Self::api_key());
        };
        let url = |name: &'static str| {
            let value = get(name).ok_or(ConfigError {
                name,
                reason: "required with a client id",
            })?;
            let origin = secure_origin(&value).ok_or(ConfigError {
                name,
                reason: "not an https URL (http only on 127.0.0.1, ::1 or localhost)",
            })?;
            Ok((value, origin))
        };
        let (issuer, _) = url("ISSUER")?;
        let (authorization_endpoint, _) = url("AUTHORIZATION_ENDPOINT")?;
        let (token_endpoint, token_origin) = url("TOKEN_ENDPOINT")?;
        let redirect_uri = match get("REDIRECT_URI") {
            Some(_) => Some(url("REDIRECT_URI")?.0),
            None => None,
        };
        let scopes = get("SCOPES").unwrap_or_else(|| "openid".to_owned());
        if !scopes.split(' ').all(is_scope_token) {
            return Err(ConfigError {
                name: "SCOPES",
                reason: "space-separated scope tokens (RFC 6749 §3.3)",
            });
        }
        Ok(Self {
            oidc: Some(OidcClient {
                issuer,
                authorization_endpoint,
                token_endpoint,
                client_id,
                scopes,
                redirect_uri,
            }),
            token_origin: Some(token_origin),
        })
    }

    /// The provider, when the console signs in through one.
    pub fn oidc(&self) -> Option<&OidcClient> {
        self.oidc.as_ref()
    }

    /// The one other origin the page may fetch: the token endpoint's.
    pub fn connect_origin(&self) -> Option<&str> {
        self.token_origin.as_deref()
    }

    /// The page's view of the settings.
    pub(crate) fn document(&self) -> serde_json::Value {
        serde_json::to_value(Document {
            oidc: self.oidc.as_ref(),
        })
        .expect("strings serialize")
    }
}

/// `scope-token = 1*( %x21 / %x23-5B / %x5D-7E )`.
fn is_scope_token(token: &str) -> bool {
    !token.is_empty()
        && token
            .bytes()
            .all(|b| b == 0x21 || (0x23..=0x5b).contains(&b) || (0x5d..=0x7e).contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(pairs: &[(&str, &str)]) -> Result<ConsoleConfig, ConfigError> {
        ConsoleConfig::from_lookup(|name| {
            pairs
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| (*v).to_owned())
        })
    }

    const COGNITO: &[(&str, &str)] = &[
        ("CLIENT_ID", "abc123"),
        (
            "ISSUER",
            "https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_X",
        ),
        (
            "AUTHORIZATION_ENDPOINT",
            "https://agentrl.auth.eu-west-1.amazoncognito.com/oauth2/authorize",
        ),
        (
            "TOKEN_ENDPOINT",
            "https://agentrl.auth.eu-west-1.amazoncognito.com/oauth2/token",
        ),
    ];

    #[test]
    fn no_client_id_is_the_api_key_sign_in() {
        let c = config(&[("ISSUER", "https://idp.example.com")]).unwrap();
        assert_eq!(c, ConsoleConfig::api_key());
        assert_eq!(c.connect_origin(), None);
        assert_eq!(c.document(), serde_json::json!({"oidc": null}));
    }

    #[test]
    fn a_provider_gives_the_page_its_endpoints_and_the_policy_its_token_origin() {
        let c = config(COGNITO).unwrap();
        assert_eq!(
            c.connect_origin(),
            Some("https://agentrl.auth.eu-west-1.amazoncognito.com")
        );
        let doc = c.document();
        assert_eq!(doc["oidc"]["client_id"], "abc123");
        assert_eq!(doc["oidc"]["scopes"], "openid");
        assert_eq!(doc["oidc"]["redirect_uri"], serde_json::Value::Null);
        assert_eq!(
            doc["oidc"]["token_endpoint"],
            "https://agentrl.auth.eu-west-1.amazoncognito.com/oauth2/token"
        );
    }

    #[test]
    fn missing_or_unsafe_urls_and_bad_scopes_are_refused_by_name() {
        let with = |name: &str, value: &str| {
            let mut pairs: Vec<(&str, &str)> = COGNITO
                .iter()
                .copied()
                .filter(|(n, _)| *n != name)
                .collect();
            if !value.is_empty() {
                pairs.push((name, value));
            }
            config(&pairs).map(|_| ()).map_err(|e| e.name)
        };
        for name in ["ISSUER", "AUTHORIZATION_ENDPOINT", "TOKEN_ENDPOINT"] {
            assert_eq!(with(name, ""), Err(name), "missing {name}");
            for bad in [
                "http://idp.example.com/x",
                "javascript:alert(1)",
                "not a url",
                "https://idp.example.com; script-src *",
            ] {
                assert_eq!(with(name, bad), Err(name), "{name}={bad}");
            }
        }
        assert_eq!(
            with("REDIRECT_URI", "http://evil.example/cb"),
            Err("REDIRECT_URI")
        );
        assert_eq!(with("SCOPES", "openid \"x\""), Err("SCOPES"));
        assert_eq!(with("SCOPES", "openid  email"), Err("SCOPES"));
        assert_eq!(with("SCOPES", "openid email agentrl/api"), Ok(()));
        assert_eq!(
            with("TOKEN_ENDPOINT", "http://127.0.0.1:9000/token"),
            Ok(())
        );
    }
}
