//! Request bodies. The report is the domain's own type: it is already the wire shape.

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
    /// Parse every file as this language instead of by extension.
    pub language: Option<Lang>,
}

impl From<ScoreRequest> for Change {
    fn from(body: ScoreRequest) -> Self {
        Self {
            before: body.before.files,
            after: body.after.files,
            tests_passed: body.tests_passed.unwrap_or(false),
            lang: body.language,
        }
    }
}
