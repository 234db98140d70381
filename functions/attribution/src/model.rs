//! The values an attribution is made of, spelled the same in storage and on the wire: the
//! shaping strategy, the method, the reward statistics. Records (`repo`, `compute`) and
//! views (`wire`) both hold them; the request bodies that name them are parsed in `wire`.

use agentrl_core::attribution::{DistributionStats, Shaping};
use serde::{Deserialize, Serialize};
use utoipa::{
    ToSchema,
    openapi::{
        RefOr, Schema,
        schema::{
            AdditionalProperties, KnownFormat, ObjectBuilder, OneOfBuilder, SchemaFormat, Type,
        },
    },
};

/// A strategy by name, with default parameters.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, ToSchema, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub(crate) enum StrategyName {
    Linear,
    Exponential,
    Sigmoid,
}

fn one() -> f64 {
    1.0
}

/// A reward-shaping strategy with its parameters (the form every response uses).
///
/// Its schema is written out below: utoipa leaves serde's `deny_unknown_fields` off the
/// variants of a tagged enum, and the parameters' ranges with it.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
pub(crate) enum Strategy {
    /// Proportional to credit, shifted to a minimum of 0 when any credit is negative.
    // A struct variant so that unknown fields are refused here too.
    Linear {},
    /// Proportional to exp((z − max z)/temperature) of the standardised credits.
    Exponential {
        /// τ > 0 (default 1).
        #[serde(default = "one")]
        temperature: f64,
    },
    /// Proportional to 1/(1 + e^(−steepness·(z − midpoint))).
    Sigmoid {
        /// k ≥ 0 (default 1).
        #[serde(default = "one")]
        steepness: f64,
        /// x0 (default 0).
        #[serde(default)]
        midpoint: f64,
    },
}

impl utoipa::PartialSchema for Strategy {
    fn schema() -> RefOr<Schema> {
        let variant = |kind: &str, description: &str| {
            ObjectBuilder::new()
                .schema_type(Type::Object)
                .description(Some(description))
                .property(
                    "kind",
                    ObjectBuilder::new()
                        .schema_type(Type::String)
                        .enum_values(Some([kind])),
                )
                .required("kind")
                .additional_properties(Some(AdditionalProperties::FreeForm(false)))
        };
        let number = |description: &str| {
            ObjectBuilder::new()
                .schema_type(Type::Number)
                .format(Some(SchemaFormat::KnownFormat(KnownFormat::Double)))
                .description(Some(description))
        };
        OneOfBuilder::new()
            .description(Some(
                "A reward-shaping strategy with its parameters (the form every response uses).",
            ))
            .item(variant(
                "linear",
                "Proportional to credit, shifted to a minimum of 0 when any credit is negative.",
            ))
            .item(
                variant(
                    "exponential",
                    "Proportional to exp((z − max z)/temperature) of the standardised credits.",
                )
                .property(
                    "temperature",
                    number("τ > 0 (default 1).").exclusive_minimum(Some(0)),
                ),
            )
            .item(
                variant(
                    "sigmoid",
                    "Proportional to 1/(1 + e^(−steepness·(z − midpoint))).",
                )
                .property("steepness", number("k ≥ 0 (default 1).").minimum(Some(0)))
                .property("midpoint", number("x0 (default 0).")),
            )
            .into()
    }
}

impl ToSchema for Strategy {}

impl Strategy {
    pub(crate) fn name(self) -> StrategyName {
        match self {
            Self::Linear {} => StrategyName::Linear,
            Self::Exponential { .. } => StrategyName::Exponential,
            Self::Sigmoid { .. } => StrategyName::Sigmoid,
        }
    }

    pub(crate) fn shaping(self) -> Shaping {
        match self {
            Self::Linear {} => Shaping::Linear,
            Self::Exponential { temperature } => Shaping::Exponential { temperature },
            Self::Sigmoid {
                steepness,
                midpoint,
            } => Shaping::Sigmoid {
                steepness,
                midpoint,
            },
        }
    }
}

/// How an attribution was computed.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, ToSchema, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub(crate) enum MethodName {
    /// Enumeration of every coalition of a table.
    Exact,
    /// The closed form of an additive or pairwise game.
    ClosedForm,
    /// Permutation sampling.
    MonteCarlo,
}

/// Min, max, mean and Gini coefficient of the shaped rewards.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, ToSchema, PartialEq)]
pub(crate) struct RewardStats {
    pub min: f64,
    pub max: f64,
    pub mean: f64,
    /// 0 for an equal split, up to 1 − 1/n when one agent gets everything.
    pub gini: f64,
}

impl From<DistributionStats> for RewardStats {
    fn from(s: DistributionStats) -> Self {
        Self {
            min: s.min,
            max: s.max,
            mean: s.mean,
            gini: s.gini,
        }
    }
}
