//! Request bodies. The report is the domain's own type: it is already the wire shape.

use agentrl_core::FieldError;
use agentrl_diff::{Lang, SnapshotBody};
use serde::Deserialize;
use utoipa::ToSchema;

use crate::scoring::Change;

/// A change to score.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ScoreRequest {
    pub before: SnapshotBody,
    pub after: SnapshotBody,
    /// Whether the solution passed its tests; omitted means not known to pass, and the
    /// multiplier is the floor (`minimality_score` still reports the formula).
    pub tests_passed: Option<bool>,
    /// Parse every file as this language (`typescript`, `tsx`, `javascript`, `python`,
    /// `rust`, `go`, `java`) instead of by extension.
    pub language: Option<String>,
}

/// The language, when given, must be one the scorer parses.
impl TryFrom<ScoreRequest> for Change {
    type Error = FieldError;

    fn try_from(body: ScoreRequest) -> Result<Self, FieldError> {
        let lang = body
            .language
            .as_deref()
            .map(|name| {
                Lang::from_name(name).ok_or_else(|| FieldError::new("language", Lang::NAMES))
            })
            .transpose()?;
        Ok(Self {
            before: body.before.files,
            after: body.after.files,
            tests_passed: body.tests_passed.unwrap_or(false),
            lang,
        })
    }
}
