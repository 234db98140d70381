//! `GET /v1/kpis?from=&to=`: the tenant's loop KPIs over a range of UTC days, and
//! `GET /v1/kpis/alarms?from=&to=`: its KPI alarms' state on each of those days.

use agentrl_core::{
    calendar::{date_start_ms, utc_date},
    kpi::{Kpis, kpis},
    kpi_alarm::{AlarmHistory, history},
};
use agentrl_http::{ApiError, Problem, Tenant};
use agentrl_store::clock::now_ms_i64;
use axum::{
    Json,
    extract::{Query, State},
};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::TrainingState;

/// Days the default range covers (today included).
const DEFAULT_DAYS: i64 = 7;

/// Most days `GET /v1/kpis/alarms` answers for: a month, one entry per day and alarm.
const MAX_ALARM_DAYS: i64 = 31;

const DAY_MS: i64 = 86_400_000;

/// `?from=&to=`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct Range {
    /// First day, YYYY-MM-DD (default: 6 days before `to`).
    #[param(format = Date)]
    from: Option<String>,
    /// Last day, YYYY-MM-DD, included (default: today, UTC).
    #[param(format = Date)]
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

impl Range {
    /// A millisecond of the first and of the last day asked for (default: the last 7 days).
    fn millis(&self) -> Result<(i64, i64), ApiError> {
        let to = match &self.to {
            Some(to) => day("to", to)?,
            None => now_ms_i64(),
        };
        let from = match &self.from {
            Some(from) => day("from", from)?,
            None => to - (DEFAULT_DAYS - 1) * DAY_MS,
        };
        Ok((from, to))
    }
}

/// The alarms' state over a range of days.
#[derive(Debug, Serialize, ToSchema)]
pub(crate) struct AlarmsView {
    /// First day (UTC, `YYYY-MM-DD`).
    from: String,
    /// Last day, included.
    to: String,
    /// Each of the tenant's alarms (`/v1/config/kpi-alarms`) with its state on each day.
    alarms: Vec<AlarmHistory>,
}

/// The tenant's KPIs over `from`..=`to` (UTC days; default: the last 7 days): tool adoption,
/// thinking efficiency and escalation rate, reward-hacking incidents and rate, task
/// completion, with the counts they come from.
#[utoipa::path(get, path = "/v1/kpis", tag = "training",
    params(Range),
    responses(
        (status = 200, description = "The KPIs", body = KpiView),
        (status = 400, description = "A bad date", body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn read(
    State(state): State<TrainingState>,
    Tenant(tenant): Tenant,
    Query(range): Query<Range>,
) -> Result<Json<KpiView>, ApiError> {
    let (from, to) = range.millis()?;
    let (from, to) = (utc_date(from), utc_date(to));
    let counts = state.kpis.sum(&tenant, &from, &to).await?;
    Ok(Json(KpiView {
        from,
        to,
        kpis: kpis(counts),
    }))
}

/// The state of each of the tenant's KPI alarms (`PUT /v1/config/kpi-alarms`) on each UTC day
/// of `from`..=`to` (default: the last 7 days; of a longer range, its last 31): `OK`, `ALARM` when the day's KPI
/// crossed the threshold, `INSUFFICIENT_DATA` for a rate with nothing to divide by that day;
/// with the day's value. Evaluated from the same daily counts as `GET /v1/kpis`, locally and
/// on AWS alike.
#[utoipa::path(get, path = "/v1/kpis/alarms", tag = "training", operation_id = "list_kpi_alarm_states",
    params(Range),
    responses(
        (status = 200, description = "Each alarm's state per day", body = AlarmsView),
        (status = 400, description = "A bad date", body = Problem, content_type = "application/problem+json"),
    ))]
pub(crate) async fn alarms(
    State(state): State<TrainingState>,
    Tenant(tenant): Tenant,
    Query(range): Query<Range>,
) -> Result<Json<AlarmsView>, ApiError> {
    let (from_ms, to_ms) = range.millis()?;
    // A longer range answers its last 31 days (the answer's `from` says so): a bound the
    // query's schema cannot state is not a 400.
    let from_ms = from_ms.max(to_ms - (MAX_ALARM_DAYS - 1) * DAY_MS);
    let (from, to) = (utc_date(from_ms), utc_date(to_ms));
    let alarms = state.kpi_alarms.get(&tenant).await?.alarms;
    let mut counted = state.kpis.daily(&tenant, &from, &to).await?;
    // Every day of the range, those nothing was counted on included (their rates have no data).
    let days: Vec<_> = (0..)
        .map(|i| utc_date(from_ms + i * DAY_MS))
        .take_while(|date| *date <= to)
        .map(|date| {
            let counts = counted.remove(&date).unwrap_or_default();
            (date, counts)
        })
        .collect();
    Ok(Json(AlarmsView {
        from,
        to,
        alarms: history(&alarms, &days),
    }))
}
