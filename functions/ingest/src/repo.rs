//! The trajectory index: a summary of every trajectory the worker wrote, per tenant, so that
//! trajectories can be listed and one's turn rows found without scanning the turn table.
//!
//! Layout (single table), for a trajectory accepted at `RECEIVED` (epoch ms):
//!
//! | partition | sort key | what |
//! |---|---|---|
//! | `tenant#trajectory#ID` | `summary` | the summary, read by id |
//! | `tenant#trajectories#all` | `RECEIVED#ID` | the summary again, in the tenant's listing |
//! | `tenant#trajectories-agent#AGENT` | `RECEIVED#ID` | in its agent's listing |
//! | `tenant#trajectories-conversation#CONVERSATION` | `RECEIVED#ID` | in its conversation's |
//!
//! `RECEIVED` is written with 20 digits (every u64 fits), so a descending query is newest
//! first and a time window is a sort-key range. The listings hold the whole summary (a few
//! hundred bytes): a page is one query, with no read per item.
//!
//! A trajectory is indexed once: its four items go in one transaction conditioned on the
//! summary being absent, so a redelivered message — or the same trajectory id posted again —
//! adds nothing, and the summary keeps naming the object of the first copy indexed.

use agentrl_core::{TenantId, envelope::Source};
use agentrl_store::{
    StoreError,
    keys::partition,
    ports::{Condition, Item, Key, Page, Put, Query, SortRange, Table, Write, encode},
};
use agentrl_turns::TurnRow;
use serde::{Deserialize, Serialize};

/// A trajectory as the index keeps it: what its rows say about the whole, with where they
/// are. Every id is as stored (anonymised: an id that held PII is a keyed hash).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Summary {
    pub trajectory_id: String,
    pub agent_id: String,
    pub conversation_id: String,
    pub user_id: Option<String>,
    pub group_id: Option<String>,
    pub policy_version: Option<String>,
    /// `None` for messages of envelopes before version 2, which did not say.
    pub source: Option<Source>,
    /// When the trajectory was accepted (epoch ms): its rows' `ingested_at`.
    pub received_at_ms: i64,
    pub success: Option<bool>,
    /// The released episode reward: noisy under differential privacy, `None` when suppressed.
    pub reward: Option<f64>,
    pub dp_epsilon: Option<f64>,
    pub termination_reason: Option<String>,
    pub truncated: bool,
    pub turn_count: u32,
    pub tool_call_count: u32,
    /// Sums of the usage the model calls reported; `None` when no turn reported any.
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    /// Turns whose total a safety rule forced to −1.
    pub safety_violations: u32,
    pub pii_replacements: u32,
    /// The queue message the rows came from: an object may hold two copies of one
    /// trajectory id (posted twice into one batch), told apart by it.
    pub message_id: String,
    /// The turn-table objects holding the rows.
    pub objects: Vec<String>,
}

impl Summary {
    /// The summary of one trajectory's `rows` (non-empty, in turn order), written to `object`.
    pub(crate) fn of(rows: &[TurnRow], source: Option<Source>, object: &str) -> Option<Self> {
        let first = rows.first()?;
        let count = |f: &dyn Fn(&TurnRow) -> bool| {
            u32::try_from(rows.iter().filter(|r| f(r)).count()).unwrap_or(u32::MAX)
        };
        let tokens = |f: &dyn Fn(&TurnRow) -> Option<i64>| {
            rows.iter()
                .filter_map(f)
                .map(|n| u64::try_from(n).unwrap_or(0))
                .reduce(u64::saturating_add)
        };
        Some(Self {
            trajectory_id: first.trajectory_id.clone(),
            agent_id: first.agent_id.clone(),
            conversation_id: first.conversation_id.clone(),
            user_id: first.user_id.clone(),
            group_id: first.group_id.clone(),
            policy_version: first.policy_version.clone(),
            source,
            received_at_ms: first.ingested_at_ms,
            success: first.episode_success,
            reward: first.episode_reward,
            dp_epsilon: first.dp_epsilon,
            termination_reason: first.termination_reason.clone(),
            truncated: first.truncated,
            turn_count: u32::try_from(rows.len()).unwrap_or(u32::MAX),
            tool_call_count: u32::try_from(rows.iter().map(|r| r.tool_calls.len()).sum::<usize>())
                .unwrap_or(u32::MAX),
            input_tokens: tokens(&|r| r.input_tokens),
            output_tokens: tokens(&|r| r.output_tokens),
            safety_violations: count(&|r| r.safety_violation),
            pii_replacements: u32::try_from(first.pii_replacements).unwrap_or(0),
            message_id: first.message_id.clone(),
            objects: vec![object.to_owned()],
        })
    }

    fn sort_key(&self) -> String {
        sort_key(self.received_at_ms, &self.trajectory_id)
    }
}

/// A trajectory's outcome as a listing filters by it: `unknown` when no final outcome was
/// posted.
// The schema documents the `outcome` parameter; the route parses the text itself, so that a
// bad value is a problem naming the field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
#[schema(as = TrajectoryOutcome)]
pub(crate) enum Outcome {
    Success,
    Failure,
    /// No final outcome was posted.
    Unknown,
}

impl Outcome {
    /// `success`, `failure` or `unknown`.
    pub(crate) fn parse(s: &str) -> Option<Self> {
        match s {
            "success" => Some(Self::Success),
            "failure" => Some(Self::Failure),
            "unknown" => Some(Self::Unknown),
            _ => None,
        }
    }

    fn of(success: Option<bool>) -> Self {
        match success {
            Some(true) => Self::Success,
            Some(false) => Self::Failure,
            None => Self::Unknown,
        }
    }
}

/// Which trajectories a listing covers. `agent_id` and `conversation_id` choose the partition
/// read (the conversation's when both are given); the rest are applied to each page read.
#[derive(Debug, Default)]
pub(crate) struct Filter<'a> {
    pub agent_id: Option<&'a str>,
    pub conversation_id: Option<&'a str>,
    pub policy_version: Option<&'a str>,
    pub outcome: Option<Outcome>,
    /// Accepted in `[from, to)`, epoch ms.
    pub from: u64,
    pub to: u64,
}

impl Filter<'_> {
    /// Whether `s` passes the filters the partition does not apply.
    fn keeps(&self, s: &Summary) -> bool {
        self.agent_id.is_none_or(|a| a == s.agent_id)
            && self
                .policy_version
                .is_none_or(|v| Some(v) == s.policy_version.as_deref())
            && self.outcome.is_none_or(|o| o == Outcome::of(s.success))
    }

    fn partition(&self, t: &TenantId) -> String {
        match (self.conversation_id, self.agent_id) {
            (Some(c), _) => partition(t, "trajectories-conversation", c),
            (None, Some(a)) => partition(t, "trajectories-agent", a),
            (None, None) => all_pk(t),
        }
    }

    /// The sort-key range of `[from, to)`: `RECEIVED#ID` sorts after `RECEIVED` and before
    /// `RECEIVED+1`, so the inclusive bounds `from` and `to` (without an id) are exactly it.
    fn range(&self) -> SortRange {
        SortRange::Between(format!("{:020}", self.from), format!("{:020}", self.to))
    }
}

fn sort_key(received_at_ms: i64, trajectory_id: &str) -> String {
    format!("{:020}#{trajectory_id}", received_at_ms.max(0))
}

fn summary_key(t: &TenantId, trajectory_id: &str) -> Key {
    Key::new(partition(t, "trajectory", trajectory_id), "summary")
}

fn all_pk(t: &TenantId) -> String {
    partition(t, "trajectories", "all")
}

/// How many store pages one listing request reads at most while its filters keep nothing:
/// enough to step over a run of other trajectories without an unbounded request.
const MAX_PAGES_PER_REQUEST: usize = 8;

/// Indexes `s`; false when the trajectory was indexed before (nothing is written then).
pub(crate) async fn index(
    table: &dyn Table,
    t: &TenantId,
    s: &Summary,
) -> Result<bool, StoreError> {
    let doc = encode(s)?;
    let put = |key: Key, condition: Condition| {
        Write::Put(Put {
            key,
            doc: doc.clone(),
            expires_at: None,
            condition,
        })
    };
    let sk = s.sort_key();
    let writes = vec![
        put(summary_key(t, &s.trajectory_id), Condition::Absent),
        put(Key::new(all_pk(t), sk.clone()), Condition::None),
        put(
            Key::new(partition(t, "trajectories-agent", &s.agent_id), sk.clone()),
            Condition::None,
        ),
        put(
            Key::new(
                partition(t, "trajectories-conversation", &s.conversation_id),
                sk,
            ),
            Condition::None,
        ),
    ];
    match table.transact(writes).await {
        Ok(()) => Ok(true),
        Err(e) if e.is_condition_failed() => Ok(false),
        Err(e) => Err(e),
    }
}

/// The summary of `trajectory_id`, if the tenant has one.
pub(crate) async fn summary(
    table: &dyn Table,
    t: &TenantId,
    trajectory_id: &str,
) -> Result<Option<Summary>, StoreError> {
    table
        .get(&summary_key(t, trajectory_id))
        .await?
        .map(|i| Item::decode(i).map(|(s, _)| s))
        .transpose()
}

/// A page of summaries, newest first, and the cursor of the next. A page may hold fewer than
/// `limit` (even none) while a cursor follows: the filters the partition does not apply are
/// applied to the items read, and a request reads at most [`MAX_PAGES_PER_REQUEST`] pages.
pub(crate) async fn list(
    table: &dyn Table,
    t: &TenantId,
    filter: &Filter<'_>,
    limit: usize,
    mut cursor: Option<String>,
) -> Result<(Vec<Summary>, Option<String>), StoreError> {
    let mut kept = Vec::new();
    for _ in 0..MAX_PAGES_PER_REQUEST {
        let Page { items, next } = table
            .query(&Query {
                pk: filter.partition(t),
                range: filter.range(),
                limit,
                cursor,
                ascending: false,
            })
            .await?;
        for item in items {
            let (s, _) = Item::decode::<Summary>(item)?;
            if filter.keeps(&s) {
                kept.push(s);
            }
        }
        cursor = next;
        // Stopping at the first page that keeps anything keeps a page within `limit`.
        if !kept.is_empty() || cursor.is_none() {
            break;
        }
    }
    Ok((kept, cursor))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use agentrl_store::Stores;
    use agentrl_turns::RowToolCall;

    use super::*;

    fn rows(id: &str, agent: &str, at: i64, success: Option<bool>) -> Vec<TurnRow> {
        let row = |i: i32, role: &str| TurnRow {
            trajectory_id: id.into(),
            conversation_id: format!("c-{id}"),
            turn_index: i,
            turn_count: 2,
            agent_id: agent.into(),
            policy_version: Some("v2".into()),
            role: role.into(),
            episode_success: success,
            episode_reward: success.map(|s| if s { 1.0 } else { 0.0 }),
            message_id: format!("m-{id}"),
            ingested_at_ms: at,
            ..TurnRow::default()
        };
        let mut answer = row(1, "assistant");
        answer.tool_calls = vec![
            RowToolCall {
                id: None,
                name: "a".into(),
                arguments: "{}".into(),
            };
            2
        ];
        answer.input_tokens = Some(10);
        answer.output_tokens = Some(3);
        answer.safety_violation = true;
        vec![row(0, "user"), answer]
    }

    #[test]
    fn a_summary_counts_its_rows() {
        let s = Summary::of(&rows("t", "a", 5, Some(true)), Some(Source::Api), "o").unwrap();
        assert_eq!(
            (s.turn_count, s.tool_call_count, s.safety_violations),
            (2, 2, 1)
        );
        assert_eq!((s.input_tokens, s.output_tokens), (Some(10), Some(3)));
        assert_eq!((s.success, s.reward), (Some(true), Some(1.0)));
        assert_eq!(s.objects, ["o"]);
        assert_eq!(Summary::of(&[], None, "o"), None);
    }

    #[test]
    fn sort_keys_order_by_time_then_id() {
        assert!(sort_key(9, "z") < sort_key(10, "a"));
        assert!(sort_key(10, "a") < sort_key(10, "b"));
        let f = Filter {
            from: 10,
            to: 11,
            ..Filter::default()
        };
        let SortRange::Between(lo, hi) = f.range() else {
            unreachable!()
        };
        assert!(lo <= sort_key(10, "a") && sort_key(10, "a") <= hi);
        assert!(sort_key(11, "a") > hi && sort_key(9, "z") < lo);
        assert!(sort_key(i64::MAX, "a") <= format!("{:020}#", u64::MAX));
    }

    #[tokio::test]
    async fn a_trajectory_is_indexed_once_and_listed_newest_first() {
        let dir = tempfile::tempdir().unwrap();
        let table: Arc<dyn Table> = Stores::embedded(dir.path()).unwrap().table;
        let t = TenantId::parse("acme").unwrap();
        for (id, agent, at, success) in [
            ("t1", "a", 1, Some(true)),
            ("t2", "b", 2, Some(false)),
            ("t3", "a", 3, None),
        ] {
            let s = Summary::of(&rows(id, agent, at, success), None, "o").unwrap();
            assert!(index(table.as_ref(), &t, &s).await.unwrap());
        }
        let again = Summary::of(&rows("t1", "a", 7, Some(true)), None, "other").unwrap();
        assert!(!index(table.as_ref(), &t, &again).await.unwrap());
        let all = Filter {
            to: u64::MAX,
            ..Filter::default()
        };
        let ids = |page: &[Summary]| -> Vec<String> {
            page.iter().map(|s| s.trajectory_id.clone()).collect()
        };
        let (page, next) = list(table.as_ref(), &t, &all, 10, None).await.unwrap();
        assert_eq!(
            (ids(&page), next),
            (vec!["t3".into(), "t2".into(), "t1".into()], None)
        );
        assert_eq!(
            summary(table.as_ref(), &t, "t1")
                .await
                .unwrap()
                .unwrap()
                .objects,
            ["o"]
        );
        let agent_a = Filter {
            agent_id: Some("a"),
            ..all
        };
        let (page, next) = list(table.as_ref(), &t, &agent_a, 1, None).await.unwrap();
        assert_eq!(ids(&page), ["t3"]);
        let (page, _) = list(table.as_ref(), &t, &agent_a, 1, next).await.unwrap();
        assert_eq!(ids(&page), ["t1"]);
        let failures = Filter {
            outcome: Some(Outcome::Failure),
            to: u64::MAX,
            ..Filter::default()
        };
        // The failure is two items down: read past the first page rather than answer nothing.
        let (page, _) = list(table.as_ref(), &t, &failures, 1, None).await.unwrap();
        assert_eq!(ids(&page), ["t2"]);
        let window = Filter {
            from: 2,
            to: 3,
            ..Filter::default()
        };
        let (page, _) = list(table.as_ref(), &t, &window, 10, None).await.unwrap();
        assert_eq!(ids(&page), ["t2"]);
        let other = TenantId::parse("other").unwrap();
        assert_eq!(summary(table.as_ref(), &other, "t1").await.unwrap(), None);
    }
}
