//! `GET /v1/kpis?from=&to=`: the tenant's loop KPIs over a range of UTC days.

use agentrl_core::{
    calendar::{date_start_ms, utc_date},
    kpi::{Kpis, kpis},
};
use agentrl_http::{ApiError, Problem, Tenant};
use agentrl_store::clock::now_ms_i64;
use axum::{
    Json,
    extract::{Query, State},
};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::TrainingState;

/// Days the default range covers (today included).
const DEFAULT_DAYS: i64 = 7;

/// `?from=&to=`.
#[derive(Debug, Deserialize)]
pub(crate) struct Range {
    from: Option<String>,
    to: Option<String>,
}

/// The KPIs of a range of days.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct KpiView {
    /// First day (UTC, `YYYY-MM-DD`).
    from: String,
    /// Last day, included.
    to: String,
    kpis: Kpis,
}

/// The first millisecond of the calendar date `value`, or a 400 naming `field`.
fn day(field: &str, value: &str) -> Result<i64, ApiError> {
    date_start_ms(value).ok_or_else(|| ApiError::invalid(field, "must be a date YYYY-MM-DD"))
}

/// The tenant's KPIs over `from`..=`to` (UTC days; default: the last 7 days): tool adoption,
/// thinking efficiency and escalation rate, reward-hacking incidents and rate, task
/// completion, with the counts they come from.
#[utoipa::path(get, path = "/v1/kpis", tag = "training",
    params(
        ("from" = Option<String>, Query, format = Date, description = "First day, YYYY-MM-DD (default: 6 days before `to`)"),
        ("to" = Option<String>, Query, format = Date, description = "Last day, YYYY-MM-DD, included (default: today, UTC)"),
    ),
    responses(
        (status = 200, description = "The KPIs", body = KpiView),
        (status = 400, description = "A bad date", body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn read(
    State(state): State<TrainingState>,
    Tenant(tenant): Tenant,
    Query(range): Query<Range>,
) -> Result<Json<KpiView>, ApiError> {
    let to = match &range.to {
        Some(to) => day("to", to)?,
        None => now_ms_i64(),
    };
    let from = match &range.from {
        Some(from) => day("from", from)?,
        None => to - (DEFAULT_DAYS - 1) * 86_400_000,
    };
    let (from, to) = (utc_date(from), utc_date(to));
    let counts = state.kpis.sum(&tenant, &from, &to).await?;
    Ok(Json(KpiView {
        from,
        to,
        kpis: kpis(counts),
    }))
}
