//! Versions of the request bodies clients write (`schema_version` of trajectories and learning
//! events), so a client and a server of different releases agree on what a body means: a
//! reader takes the current version and every older one it can upgrade, and refuses the rest
//! naming the field (a 400 at the API, a dead letter with the reason on a queue).
//!
//! | `schema_version` | shape | read as |
//! |---|---|---|
//! | absent or 0 | the body before versions | upgraded: the same fields |
//! | 1 | current | as is |
//!
//! The queue envelopes around these bodies have their own version ([`crate::envelope`]).

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, de};

/// The version of a request body's shape; reading refuses a version newer than
/// [`SchemaVersion::CURRENT`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct SchemaVersion(u8);

impl SchemaVersion {
    /// The version this build writes and reads as is.
    pub const CURRENT: Self = Self(1);

    /// The version as a number.
    #[must_use]
    pub fn get(self) -> u8 {
        self.0
    }
}

impl fmt::Display for SchemaVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl<'de> Deserialize<'de> for SchemaVersion {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = u64::deserialize(d)?;
        match u8::try_from(v) {
            Ok(v) if v <= Self::CURRENT.0 => Ok(Self(v)),
            _ => Err(de::Error::custom(format!(
                "schema_version {v} is not supported: this reader takes versions 0 to {}",
                Self::CURRENT
            ))),
        }
    }
}

#[cfg(feature = "openapi")]
impl utoipa::PartialSchema for SchemaVersion {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use utoipa::openapi::{ObjectBuilder, Type};
        ObjectBuilder::new()
            .schema_type(Type::Integer)
            .minimum(Some(0))
            .maximum(Some(Self::CURRENT.0))
            .description(Some(format!(
                "The version of this body's shape: {} (current), or 0 and absent for the shape \
                 before versions, read the same way. A newer version is a 400 naming \
                 `schema_version`.",
                Self::CURRENT
            )))
            .into()
    }
}

#[cfg(feature = "openapi")]
impl utoipa::ToSchema for SchemaVersion {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn current_and_older_versions_read_and_newer_ones_are_named() {
        for v in [0, 1] {
            let read: SchemaVersion = serde_json::from_str(&v.to_string()).expect("supported");
            assert_eq!(read.get(), v);
        }
        for v in ["2", "256", "18446744073709551615"] {
            let e = serde_json::from_str::<SchemaVersion>(v).expect_err("newer");
            assert!(
                e.to_string()
                    .starts_with(&format!("schema_version {v} is not supported")),
                "{e}"
            );
        }
        assert!(serde_json::from_str::<SchemaVersion>("-1").is_err());
        assert!(serde_json::from_str::<SchemaVersion>("\"1\"").is_err());
        assert_eq!(serde_json::to_string(&SchemaVersion::CURRENT).unwrap(), "1");
    }
}
