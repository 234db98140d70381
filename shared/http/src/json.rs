//! `ValidJson<T>`: the JSON body extractor whose every rejection is a precise problem+json.

use axum::{
    body::Bytes,
    extract::{FromRequest, Request},
    http::{StatusCode, header},
};
use serde::de::DeserializeOwned;

use crate::ApiError;

/// A JSON body deserialised into `T`; malformed JSON, wrong types and unknown fields are 400
/// naming the field, a body over the limit is 413, a non-JSON content type is 415.
///
/// The body must be a JSON object unless `OBJECT` is `false`: serde reads a struct from an
/// array of its fields in order, so `[]` would otherwise pass as a struct whose fields are all
/// optional, and `[1, 2]` as one with two fields, while the document says object.
#[derive(Debug, Clone)]
pub struct ValidJson<T, const OBJECT: bool = true>(pub T);

impl<S: Send + Sync, T: DeserializeOwned, const OBJECT: bool> FromRequest<S>
    for ValidJson<T, OBJECT>
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        decode::<T, OBJECT>(&json_bytes(req, state).await?).map(ValidJson)
    }
}

/// An optional JSON body: a request without a body and without a `Content-Type` is `None`, and
/// so is a JSON `null` (what a client serialising an absent optional body sends); anything
/// else must be valid JSON as for [`ValidJson`].
impl<S: Send + Sync, T: DeserializeOwned, const OBJECT: bool> axum::extract::OptionalFromRequest<S>
    for ValidJson<T, OBJECT>
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Option<Self>, Self::Rejection> {
        if req.headers().contains_key(header::CONTENT_TYPE) {
            let bytes = json_bytes(req, state).await?;
            if bytes.trim_ascii() == b"null" {
                return Ok(None);
            }
            return decode::<T, OBJECT>(&bytes).map(|v| Some(ValidJson(v)));
        }
        let bytes = Bytes::from_request(req, state)
            .await
            .map_err(|rejection| ApiError::new(rejection.status(), rejection.body_text()))?;
        if bytes.is_empty() {
            Ok(None)
        } else {
            Err(ApiError::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "the body must be JSON (Content-Type: application/json)",
            ))
        }
    }
}

/// The body of a request that says it is JSON: 415 for any other content type, 413 over the
/// size limit.
async fn json_bytes<S: Send + Sync>(req: Request, state: &S) -> Result<Bytes, ApiError> {
    let json_type = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .map(str::trim)
        .is_some_and(|v| v.eq_ignore_ascii_case("application/json") || v.ends_with("+json"));
    if !json_type {
        return Err(ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "the body must be JSON (Content-Type: application/json)",
        ));
    }
    Bytes::from_request(req, state).await.map_err(|rejection| {
        if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "the body is over the size limit",
            )
        } else {
            ApiError::new(StatusCode::BAD_REQUEST, rejection.body_text())
        }
    })
}

/// `bytes` as a `T`, refused unless a JSON object when `OBJECT`.
fn decode<T: DeserializeOwned, const OBJECT: bool>(bytes: &[u8]) -> Result<T, ApiError> {
    if OBJECT && bytes.trim_ascii_start().first() != Some(&b'{') {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "the body must be a JSON object",
        ));
    }
    parse(bytes)
}

/// A stable fingerprint (SHA-256, hex) of a request body, for idempotency checks.
pub fn fingerprint<T: serde::Serialize>(body: &T) -> String {
    use sha2::{Digest, Sha256};
    let bytes = serde_json::to_vec(body).unwrap_or_default();
    Sha256::digest(&bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Deserialises `bytes`, reporting the JSON path of the first error.
///
/// JSON has one number type, and JSON Schema calls `82.0` an integer, but serde refuses it
/// for an integer field; a body refused for its data (not its syntax) is read again with
/// every integral float written as an integer. The first read stays the only one for bodies
/// that don't need it.
///
/// # Errors
/// 400 with the field path and serde's reason.
pub(crate) fn parse<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    let de = &mut serde_json::Deserializer::from_slice(bytes);
    serde_path_to_error::deserialize(de).or_else(|first| {
        if first.inner().is_data()
            && let Ok(mut value) = serde_json::from_slice::<serde_json::Value>(bytes)
            && integral_floats_as_integers(&mut value)
        {
            return serde_path_to_error::deserialize(value).map_err(problem);
        }
        Err(problem(first))
    })
}

/// An optional JSON body: an empty (or all-whitespace) one is `T`'s default, another is
/// read as [`ValidJson`] reads a body.
///
/// # Errors
/// 400 with the field path and serde's reason.
pub fn optional_body<T: DeserializeOwned + Default>(bytes: &[u8]) -> Result<T, ApiError> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        Ok(T::default())
    } else {
        parse(bytes)
    }
}

/// The 400 of a deserialisation error, naming its field: the field at fault, a missing
/// field by its own path, and `body` for JSON that does not parse (whose path serde cannot
/// know).
fn problem(e: serde_path_to_error::Error<serde_json::Error>) -> ApiError {
    let path = e.path().to_string();
    let inner = e.into_inner();
    let malformed = inner.is_syntax() || inner.is_eof();
    let reason = if malformed {
        format!("malformed JSON: {inner}")
    } else {
        inner.to_string()
    };
    let field = if malformed {
        Some("body".to_owned())
    } else if let Some(name) = missing_field(&reason) {
        Some(if path == "." {
            name.to_owned()
        } else {
            format!("{path}.{name}")
        })
    } else {
        (path != ".").then_some(path)
    };
    let err = ApiError::new(StatusCode::BAD_REQUEST, reason);
    match field {
        Some(f) => err.with_field(f),
        None => err,
    }
}

/// The name in serde's "missing field `name`".
fn missing_field(reason: &str) -> Option<&str> {
    let rest = reason.strip_prefix("missing field `")?;
    rest.split_once('`').map(|(name, _)| name)
}

/// Rewrites every float with no fractional part that fits an `i64` or `u64` as that integer
/// (JSON Schema's integers, which serde refuses for an integer field when written `4.0`);
/// true when any was rewritten. For bodies read as a `Value` and deserialised later.
pub fn integral_floats_as_integers(value: &mut serde_json::Value) -> bool {
    use serde_json::Value;
    match value {
        Value::Number(n) if n.is_f64() => {
            let f = n.as_f64().unwrap_or(f64::NAN);
            // The bounds are exact powers of two, so the comparisons are exact in f64. The lower
            // one is open: an integer written just below −2^63 parses as the float −2^63, and
            // must stay out of range rather than become `i64::MIN`.
            let integer = if f.fract() != 0.0 {
                None
            } else if f > -(2f64.powi(63)) && f < 0.0 {
                Some(serde_json::Number::from(f as i64))
            } else if (0.0..2f64.powi(64)).contains(&f) {
                Some(serde_json::Number::from(f as u64))
            } else {
                None
            };
            integer.map(|i| *n = i).is_some()
        }
        Value::Array(items) => items
            .iter_mut()
            .fold(false, |any, v| integral_floats_as_integers(v) | any),
        Value::Object(fields) => fields
            .values_mut()
            .fold(false, |any, v| integral_floats_as_integers(v) | any),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)] // fields exist to be deserialised
    struct Body {
        task: Task,
    }

    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Task {
        tokens: u64,
    }

    #[test]
    fn errors_name_the_field() {
        let e = parse::<Body>(br#"{"task": {"tokens": -3}}"#).unwrap_err();
        assert_eq!(e.problem().field.as_deref(), Some("task.tokens"));
        assert_eq!(e.status(), StatusCode::BAD_REQUEST);
        let e = parse::<Body>(br#"{"task": {"tokens": 3, "extra": 1}}"#).unwrap_err();
        assert!(e.problem().detail.contains("extra"), "{e:?}");
        let e = parse::<Body>(b"{not json").unwrap_err();
        assert!(e.problem().detail.starts_with("malformed JSON"));
        assert_eq!(e.problem().field.as_deref(), Some("body"));
        let e = parse::<Body>(br#"{"task": {"tok"#).unwrap_err();
        assert_eq!(e.problem().field.as_deref(), Some("body"));
        // A missing field is named by its own path, at the top and nested.
        let e = parse::<Body>(b"{}").unwrap_err();
        assert_eq!(e.problem().field.as_deref(), Some("task"));
        let e = parse::<Body>(br#"{"task": {}}"#).unwrap_err();
        assert_eq!(e.problem().field.as_deref(), Some("task.tokens"));
    }

    #[test]
    fn integral_floats_read_as_integers() {
        let b = parse::<Body>(br#"{"task": {"tokens": 82.0}}"#).unwrap();
        assert_eq!(b.task.tokens, 82);
        let b = parse::<Body>(br#"{"task": {"tokens": 4e9}}"#).unwrap();
        assert_eq!(b.task.tokens, 4_000_000_000);
        // Fractions, negatives of an unsigned field and values past the type stay refused,
        // with the field named as before.
        for body in [
            &br#"{"task": {"tokens": 82.5}}"#[..],
            br#"{"task": {"tokens": -1.0}}"#,
            br#"{"task": {"tokens": 1e300}}"#,
        ] {
            let e = parse::<Body>(body).unwrap_err();
            assert_eq!(e.problem().field.as_deref(), Some("task.tokens"), "{e:?}");
        }
        // Integers past an i64 that round to a float in range stay refused too.
        #[derive(Debug, serde::Deserialize)]
        struct Signed {
            #[allow(dead_code)]
            v: i64,
        }
        assert!(parse::<Signed>(br#"{"v": -9223372036854775809}"#).is_err());
        assert!(parse::<Signed>(br#"{"v": -9223372036854775808}"#).is_ok());
        let e = parse::<Body>(br#"{"task": {"tokens": 1.0, "extra": 2.0}}"#).unwrap_err();
        assert!(e.problem().detail.contains("extra"), "{e:?}");
    }
}
