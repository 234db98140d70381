//! Turn rewards judged by a model, the pure part: what the critic model sees of each assistant
//! turn, and how its scores replace the heuristic's information gain and task progress.
//!
//! - **Subject**: the TASK block is the conversation before the turn (every turn, any role,
//!   as `[role]` then its text as information gain reads it); the OUTPUT block is the turn's
//!   text. A conversation longer than [`MAX_CONTEXT_CHARS`] keeps its first
//!   [`CONTEXT_HEAD_CHARS`] characters (where the task is stated) and its latest ones, and says
//!   how many characters between them are left out.
//! - **Scores**: a judgment on the judges' scale 1–10 becomes (score − 1) / 9 ∈ [0, 1] and
//!   replaces that component; the total is recomputed with the tenant's weights (a safety
//!   violation still overrides it to −1). A component no judgment scored keeps the heuristic's
//!   value, and its source says so.
//! - **Bound**: at most [`MAX_JUDGED_TURNS`] assistant turns of a trajectory are judged (the
//!   first ones); the rest keep the heuristic, marked.

use super::model::{Role, Trajectory};
use super::rewards::{TurnReward, TurnRewardWeights, turn_text, unit};
use crate::judge::{MAX_PART_CHARS, Rubric, Subject, TurnAspect};

/// Most assistant turns of one trajectory the critic model scores: each costs two judgments,
/// and the ingest worker's run is bounded. Later turns keep the heuristic, marked.
pub const MAX_JUDGED_TURNS: usize = 64;

/// Longest conversation context shown to the critic model, in characters (room left below
/// the prompt's part limit for the note on what is left out).
pub const MAX_CONTEXT_CHARS: usize = MAX_PART_CHARS - 200;

/// Characters of the conversation's start kept when its middle is left out.
pub const CONTEXT_HEAD_CHARS: usize = 4_000;

/// One assistant turn as the critic model sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnSubject {
    /// The turn's index in the trajectory.
    pub index: usize,
    /// The conversation before the turn.
    pub context: String,
    /// The turn's own text.
    pub output: String,
}

impl TurnSubject {
    /// The subject of a judgment of this turn.
    #[must_use]
    pub fn subject(&self) -> Subject<'_> {
        Subject {
            task: &self.context,
            output: Some(&self.output),
            change: None,
        }
    }
}

/// The subjects of the first [`MAX_JUDGED_TURNS`] assistant turns of `t`, in order.
#[must_use]
pub fn turn_subjects(t: &Trajectory) -> Vec<TurnSubject> {
    let mut conversation = String::new();
    let mut out = Vec::new();
    for (index, turn) in t.turns.iter().enumerate() {
        let text = turn_text(turn);
        if turn.role == Role::Assistant && out.len() < MAX_JUDGED_TURNS {
            out.push(TurnSubject {
                index,
                context: bounded(&conversation),
                output: text.clone(),
            });
        }
        conversation.push_str(&format!("[{}]\n{text}\n\n", turn.role.as_str()));
    }
    out
}

/// `text` if it has at most [`MAX_CONTEXT_CHARS`] characters; else its head and its tail
/// with a note on how many characters between them are left out.
fn bounded(text: &str) -> String {
    let total = text.chars().count();
    if total <= MAX_CONTEXT_CHARS {
        return text.to_owned();
    }
    let tail_chars = MAX_CONTEXT_CHARS - CONTEXT_HEAD_CHARS;
    let head_end = text
        .char_indices()
        .nth(CONTEXT_HEAD_CHARS)
        .map_or(text.len(), |(at, _)| at);
    let tail_start = text
        .char_indices()
        .nth(total - tail_chars)
        .map_or(text.len(), |(at, _)| at);
    format!(
        "{}\n(… {} characters of the conversation are left out …)\n{}",
        &text[..head_end],
        total - CONTEXT_HEAD_CHARS - tail_chars,
        &text[tail_start..]
    )
}

/// Where the value of a component a model can score came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ComponentSource {
    /// The heuristic's rule (no judge configured, or the judge abstained or failed).
    Heuristic,
    /// The critic model, on this rubric.
    Model(&'static Rubric),
}

impl ComponentSource {
    /// As stored in the turn table: `heuristic`, or the rubric's version.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Heuristic => "heuristic",
            Self::Model(rubric) => rubric.version,
        }
    }
}

/// A turn's reward with the sources of its information gain and task progress; both `None` on
/// turns that are not the policy's actions (every turn but the assistant's).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SourcedReward {
    /// The components and their total.
    pub reward: TurnReward,
    /// Where `reward.information_gain` came from.
    pub information_gain: Option<ComponentSource>,
    /// Where `reward.task_progress` came from.
    pub task_progress: Option<ComponentSource>,
}

impl SourcedReward {
    /// The heuristic's rewards of `t` (index-aligned with its turns), sourced as such.
    #[must_use]
    pub fn heuristic(t: &Trajectory, rewards: Vec<TurnReward>) -> Vec<Self> {
        t.turns
            .iter()
            .zip(rewards)
            .map(|(turn, reward)| {
                let source = (turn.role == Role::Assistant).then_some(ComponentSource::Heuristic);
                Self {
                    reward,
                    information_gain: source,
                    task_progress: source,
                }
            })
            .collect()
    }

    /// Replaces `aspect`'s component with a judgment's `score` (1–10) and recomputes the total
    /// under `w`.
    pub fn judged(&mut self, aspect: TurnAspect, score: f64, w: &TurnRewardWeights) {
        let value = unit((score - 1.0) / 9.0);
        let source = Some(ComponentSource::Model(aspect.rubric()));
        match aspect {
            TurnAspect::InformationGain => {
                self.reward.information_gain = value;
                self.information_gain = source;
            }
            TurnAspect::TaskProgress => {
                self.reward.task_progress = value;
                self.task_progress = source;
            }
        }
        self.reward.total = self.reward.weighted(w);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::privacy::Scrubber;
    use crate::trajectory::turn_rewards;

    fn trajectory(turns: serde_json::Value) -> Trajectory {
        serde_json::from_value(serde_json::json!({
            "trajectory_id": "t1", "conversation_id": "c1", "agent_id": "a", "turns": turns,
            "final_outcome": {"success": true}
        }))
        .expect("a trajectory")
    }

    fn two_turns() -> Trajectory {
        trajectory(serde_json::json!([
            {"role": "user", "content": "What is 2+2?"},
            {"role": "assistant", "content": "Let me think."},
            {"role": "user", "content": "Well?"},
            {"role": "assistant", "content": "4"},
        ]))
    }

    #[test]
    fn each_assistant_turn_is_judged_against_the_conversation_before_it() {
        let s = turn_subjects(&two_turns());
        assert_eq!(s.iter().map(|s| s.index).collect::<Vec<_>>(), [1, 3]);
        assert_eq!(s[0].context, "[user]\nWhat is 2+2?\n\n");
        assert_eq!(s[0].output, "Let me think.");
        assert_eq!(
            s[1].context,
            "[user]\nWhat is 2+2?\n\n[assistant]\nLet me think.\n\n[user]\nWell?\n\n"
        );
        let subject = s[1].subject();
        assert_eq!((subject.output, subject.change), (Some("4"), None));
    }

    #[test]
    fn only_the_first_assistant_turns_are_judged() {
        let turns: Vec<_> = (0..MAX_JUDGED_TURNS + 5)
            .flat_map(|i| {
                [
                    serde_json::json!({"role": "user", "content": format!("q{i}")}),
                    serde_json::json!({"role": "assistant", "content": format!("a{i}")}),
                ]
            })
            .collect();
        let s = turn_subjects(&trajectory(serde_json::Value::Array(turns)));
        assert_eq!(s.len(), MAX_JUDGED_TURNS);
        assert_eq!(s.last().map(|s| s.index), Some(2 * MAX_JUDGED_TURNS - 1));
    }

    #[test]
    fn a_long_conversation_keeps_its_start_and_its_latest_turns() {
        let task = format!("TASK{}", "é".repeat(10_000));
        let middle = "m".repeat(30_000);
        let t = trajectory(serde_json::json!([
            {"role": "user", "content": task},
            {"role": "tool", "content": middle},
            {"role": "user", "content": "latest question"},
            {"role": "assistant", "content": "answer"},
        ]));
        let context = &turn_subjects(&t)[0].context;
        let chars = context.chars().count();
        assert!(chars <= MAX_PART_CHARS, "{chars}");
        assert!(context.starts_with("[user]\nTASK"));
        assert!(context.ends_with("[user]\nlatest question\n\n"));
        let kept = CONTEXT_HEAD_CHARS + (MAX_CONTEXT_CHARS - CONTEXT_HEAD_CHARS);
        let full = 10_004 + 30_000 + "[user]\n\n\n[tool]\n\n\n[user]\nlatest question\n\n".len();
        assert!(context.contains(&format!(
            "(… {} characters of the conversation are left out …)",
            full - kept
        )));
    }

    #[test]
    fn judged_scores_replace_their_component_and_the_total_follows() {
        let t = two_turns();
        let w = TurnRewardWeights::default();
        let mut rewards = SourcedReward::heuristic(&t, turn_rewards(&t, &w, &Scrubber::new()));
        assert_eq!(
            rewards[0].information_gain, None,
            "a user turn has no source"
        );
        assert_eq!(
            rewards[3].information_gain,
            Some(ComponentSource::Heuristic)
        );
        let format = rewards[3].reward.format_correctness;
        rewards[3].judged(TurnAspect::InformationGain, 10.0, &w);
        rewards[3].judged(TurnAspect::TaskProgress, 1.0, &w);
        let r = rewards[3];
        assert_eq!(
            (r.reward.information_gain, r.reward.task_progress),
            (1.0, 0.0)
        );
        assert!((r.reward.total - (0.4 + 0.3 * format)).abs() < 1e-12);
        assert_eq!(
            r.information_gain.map(ComponentSource::as_str),
            Some("turn_information_gain@1")
        );
        assert_eq!(
            r.task_progress.map(ComponentSource::as_str),
            Some("turn_task_progress@1")
        );
        assert_eq!(
            rewards[1].task_progress.map(ComponentSource::as_str),
            Some("heuristic")
        );
        rewards[1].judged(TurnAspect::TaskProgress, 5.5, &w);
        assert!((rewards[1].reward.task_progress - 0.5).abs() < 1e-12);
    }

    #[test]
    fn a_safety_violation_still_overrides_a_judged_total() {
        let t = trajectory(serde_json::json!([
            {"role": "user", "content": "clean up"},
            {"role": "assistant", "content": "```sh\nrm -rf /\n```"},
        ]));
        let w = TurnRewardWeights::default();
        let mut rewards = SourcedReward::heuristic(&t, turn_rewards(&t, &w, &Scrubber::new()));
        rewards[1].judged(TurnAspect::TaskProgress, 10.0, &w);
        assert_eq!(rewards[1].reward.total, -1.0);
    }
}
