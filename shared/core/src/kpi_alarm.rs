//! Per-tenant alarms on the loop's KPIs: a threshold on one KPI, evaluated per UTC day as
//! CloudWatch evaluates its alarms (`OK`, `ALARM`, `INSUFFICIENT_DATA`), from the same daily
//! counts `GET /v1/kpis` sums, so the state is the same locally and on AWS.

use serde::{Deserialize, Serialize};

use crate::{
    FieldError,
    kpi::{KpiCounts, Kpis, kpis},
};

/// Alarms a tenant may set: enough for every KPI in both directions, with room to spare.
pub const MAX_ALARMS: usize = 20;

/// Longest alarm name, in characters.
pub const MAX_NAME_CHARS: usize = 64;

/// A KPI an alarm watches: one of those `GET /v1/kpis` returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum KpiName {
    /// Trajectories with a tool call / trajectories.
    ToolAdoptionRate,
    /// Tokens used / tokens allocated, over closed budgets.
    ThinkingEfficiency,
    /// Closed budgets that escalated / closed budgets.
    EscalationRate,
    /// Scored changes flagged as reward hacking (a count: a day without any is 0).
    RewardHackingIncidents,
    /// Those / scored changes.
    RewardHackingRate,
    /// Budgets closed with success / budgets closed.
    TaskCompletionRate,
    /// Trajectories ending in success / trajectories.
    TrajectorySuccessRate,
}

impl KpiName {
    /// This KPI's value in `k`; `None` for a rate with nothing to divide by.
    pub fn value(self, k: &Kpis) -> Option<f64> {
        match self {
            Self::ToolAdoptionRate => k.tool_adoption_rate,
            Self::ThinkingEfficiency => k.thinking_efficiency,
            Self::EscalationRate => k.escalation_rate,
            // Counts stay far below 2^53, where f64 is exact.
            Self::RewardHackingIncidents => Some(k.reward_hacking_incidents as f64),
            Self::RewardHackingRate => k.reward_hacking_rate,
            Self::TaskCompletionRate => k.task_completion_rate,
            Self::TrajectorySuccessRate => k.trajectory_success_rate,
        }
    }
}

/// Which side of the threshold is the alarm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum KpiComparison {
    /// `ALARM` when the value is greater than the threshold.
    Above,
    /// `ALARM` when the value is less than the threshold.
    Below,
}

/// One alarm: `kpi` compared with `threshold`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct KpiAlarm {
    /// What the console shows it as, 1 to 64 characters.
    #[cfg_attr(feature = "openapi", schema(min_length = 1, max_length = 64))]
    pub name: String,
    /// The KPI it watches.
    pub kpi: KpiName,
    /// `above`: alarm when the KPI is greater than the threshold; `below`: less than.
    pub comparison: KpiComparison,
    /// A finite number (a rate is between 0 and 1).
    pub threshold: f64,
}

/// A tenant's KPI alarms (`GET`/`PUT /v1/config/kpi-alarms`); none by default.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(default, deny_unknown_fields)]
pub struct KpiAlarms {
    /// At most 20.
    #[cfg_attr(feature = "openapi", schema(max_items = 20))]
    pub alarms: Vec<KpiAlarm>,
}

impl KpiAlarms {
    /// Checks every alarm; the error names the field, e.g. `alarms[2].threshold`.
    ///
    /// # Errors
    /// Too many alarms, an empty or long name, a threshold that is not finite (which JSON
    /// cannot carry, but a caller in Rust can).
    pub fn validate(&self) -> Result<(), FieldError> {
        if self.alarms.len() > MAX_ALARMS {
            return Err(FieldError::new(
                "alarms",
                format!("at most {MAX_ALARMS} alarms"),
            ));
        }
        for (i, alarm) in self.alarms.iter().enumerate() {
            let chars = alarm.name.chars().count();
            if chars == 0 || chars > MAX_NAME_CHARS {
                return Err(FieldError::new(
                    format!("alarms[{i}].name"),
                    format!("must be 1 to {MAX_NAME_CHARS} characters"),
                ));
            }
            if !alarm.threshold.is_finite() {
                return Err(FieldError::new(
                    format!("alarms[{i}].threshold"),
                    "must be a finite number",
                ));
            }
        }
        Ok(())
    }
}

/// An alarm's state on a day, named as CloudWatch names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum AlarmState {
    /// The KPI is on the good side of the threshold (or on it).
    Ok,
    /// The KPI crossed the threshold.
    Alarm,
    /// A rate with nothing to divide by that day.
    InsufficientData,
}

/// An alarm's state on one day, with the KPI's value it was decided on.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AlarmDay {
    /// The UTC day, `YYYY-MM-DD`.
    pub date: String,
    /// The state that day.
    pub state: AlarmState,
    /// The KPI's value that day; absent with `INSUFFICIENT_DATA`.
    pub value: Option<f64>,
}

/// An alarm and its state on each day asked for.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AlarmHistory {
    /// The alarm as the tenant set it.
    #[serde(flatten)]
    pub alarm: KpiAlarm,
    /// One entry per day, oldest first.
    pub days: Vec<AlarmDay>,
}

/// The state of `alarm` for a period whose KPIs are `k`, and the value it compared.
pub fn state(alarm: &KpiAlarm, k: &Kpis) -> (AlarmState, Option<f64>) {
    let Some(value) = alarm.kpi.value(k) else {
        return (AlarmState::InsufficientData, None);
    };
    let breached = match alarm.comparison {
        KpiComparison::Above => value > alarm.threshold,
        KpiComparison::Below => value < alarm.threshold,
    };
    let state = if breached {
        AlarmState::Alarm
    } else {
        AlarmState::Ok
    };
    (state, Some(value))
}

/// Each alarm's state on each of `days` (`(YYYY-MM-DD, that day's counts)`, oldest first; a
/// day nothing was counted on is given with zero counts).
pub fn history(alarms: &[KpiAlarm], days: &[(String, KpiCounts)]) -> Vec<AlarmHistory> {
    let daily: Vec<(&str, Kpis)> = days
        .iter()
        .map(|(date, counts)| (date.as_str(), kpis(counts.clone())))
        .collect();
    alarms
        .iter()
        .map(|alarm| AlarmHistory {
            alarm: alarm.clone(),
            days: daily
                .iter()
                .map(|(date, k)| {
                    let (state, value) = state(alarm, k);
                    AlarmDay {
                        date: (*date).to_owned(),
                        state,
                        value,
                    }
                })
                .collect(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alarm(name: &str, kpi: KpiName, comparison: KpiComparison, threshold: f64) -> KpiAlarm {
        KpiAlarm {
            name: name.into(),
            kpi,
            comparison,
            threshold,
        }
    }

    #[test]
    fn each_day_is_ok_alarm_or_insufficient_data() {
        let days = vec![
            (
                "2026-11-01".to_owned(),
                KpiCounts {
                    budgets_completed: 4,
                    budgets_succeeded: 1,
                    ..KpiCounts::default()
                },
            ),
            (
                "2026-11-02".to_owned(),
                KpiCounts {
                    budgets_completed: 4,
                    budgets_succeeded: 3,
                    diffs_scored: 2,
                    reward_hacking_flagged: 2,
                    ..KpiCounts::default()
                },
            ),
            ("2026-11-03".to_owned(), KpiCounts::default()),
        ];
        let alarms = [
            alarm(
                "completion",
                KpiName::TaskCompletionRate,
                KpiComparison::Below,
                0.5,
            ),
            alarm(
                "hacking",
                KpiName::RewardHackingIncidents,
                KpiComparison::Above,
                1.0,
            ),
        ];
        let h = history(&alarms, &days);
        let states = |i: usize| -> Vec<(AlarmState, Option<f64>)> {
            h[i].days.iter().map(|d| (d.state, d.value)).collect()
        };
        assert_eq!(
            states(0),
            [
                (AlarmState::Alarm, Some(0.25)),
                (AlarmState::Ok, Some(0.75)),
                (AlarmState::InsufficientData, None),
            ]
        );
        // A count has a value every day: a day without incidents is 0, not missing data.
        assert_eq!(
            states(1),
            [
                (AlarmState::Ok, Some(0.0)),
                (AlarmState::Alarm, Some(2.0)),
                (AlarmState::Ok, Some(0.0)),
            ]
        );
        assert_eq!(h[1].days[2].date, "2026-11-03");
    }

    #[test]
    fn on_the_threshold_is_ok() {
        let k = kpis(KpiCounts {
            trajectories: 2,
            trajectories_with_tools: 1,
            ..KpiCounts::default()
        });
        for comparison in [KpiComparison::Above, KpiComparison::Below] {
            let a = alarm("t", KpiName::ToolAdoptionRate, comparison, 0.5);
            assert_eq!(state(&a, &k), (AlarmState::Ok, Some(0.5)));
        }
    }

    #[test]
    fn validation_names_the_field() {
        let ok = alarm("a", KpiName::EscalationRate, KpiComparison::Above, 0.2);
        let with = |alarms: Vec<KpiAlarm>| KpiAlarms { alarms }.validate();
        assert!(with(vec![ok.clone()]).is_ok());
        let field = |r: Result<(), FieldError>| r.unwrap_err().field;
        let mut bad = ok.clone();
        bad.threshold = f64::NAN;
        assert_eq!(
            field(with(vec![ok.clone(), bad.clone()])),
            "alarms[1].threshold"
        );
        bad = alarm("", KpiName::EscalationRate, KpiComparison::Above, 0.2);
        assert_eq!(field(with(vec![bad])), "alarms[0].name");
        let many = (0..=MAX_ALARMS)
            .map(|i| {
                alarm(
                    &i.to_string(),
                    KpiName::EscalationRate,
                    KpiComparison::Above,
                    0.0,
                )
            })
            .collect();
        assert_eq!(field(with(many)), "alarms");
        let parsed: Result<KpiAlarms, _> = serde_json::from_str(
            r#"{"alarms":[{"name":"x","kpi":"nope","comparison":"above","threshold":1}]}"#,
        );
        assert!(parsed.is_err());
    }
}
