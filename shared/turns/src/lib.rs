//! The turn table: agent trajectories stored in Parquet, one row per turn, written by the
//! ingestion path and read later by the dataset job and the GRPO trainer.
//!
//! # Schema version 4
//!
//! Every file carries the Parquet key-value metadata `agentrl.schema_version = "4"`; readers
//! refuse files without it, and read version 1 files (the first 36 columns; their one call a
//! turn comes out as `tool_calls`), version 2 files (the first 40; no token usage) and
//! version 3 files (the first 42; no reward sources) as well as version 4. Columns, in this order (`?` =
//! nullable):
//!
//! | column | type | notes |
//! |---|---|---|
//! | `trajectory_id` | utf8 | the episode |
//! | `conversation_id` | utf8 | |
//! | `turn_index` | int32 | 0-based position of the turn in the trajectory |
//! | `turn_count` | int32 | turns in the trajectory |
//! | `agent_id` | utf8 | |
//! | `user_id` | utf8? | already a keyed hash, never a raw identifier |
//! | `group_id` | utf8? | same prompt/task: the GRPO group key |
//! | `policy_version` | utf8? | for staleness limits |
//! | `role` | utf8 | system, user, assistant, tool, … |
//! | `content` | utf8 | |
//! | `tool_name` | utf8? | the first call's (all of them: `tool_calls`) |
//! | `tool_arguments` | utf8? | the first call's, as the model produced them |
//! | `tool_result` | utf8? | |
//! | `error` | utf8? | |
//! | `prompt_token_ids` | list\<int32\>? | as produced by the sampler, never re-tokenised |
//! | `response_token_ids` | list\<int32\>? | |
//! | `loss_mask` | list\<int8\>? | 1 = model-generated token, 0 = tool/environment token |
//! | `behavior_logprobs` | list\<float32\>? | the sampler's logprob of every generated token |
//! | `tokenizer` | utf8? | tokenizer / chat template id |
//! | `turn_reward` | float64? | the weighted total of the turn-level signals |
//! | `reward_information_gain` | float64? | |
//! | `reward_format` | float64? | |
//! | `reward_progress` | float64? | |
//! | `safety_violation` | bool | |
//! | `tool_call_valid` | float64? | |
//! | `tool_choice` | float64? | |
//! | `tool_error_handling` | float64? | |
//! | `tool_efficiency` | float64? | |
//! | `episode_reward` | float64? | may carry differential-privacy noise |
//! | `episode_success` | bool? | |
//! | `termination_reason` | utf8? | |
//! | `truncated` | bool | |
//! | `dp_epsilon` | float64? | ε of the noise on `episode_reward`, null when none |
//! | `pii_replacements` | int32 | |
//! | `message_id` | utf8 | the queue message the row came from (lineage) |
//! | `ingested_at` | timestamp(ms, "UTC") | |
//! | `tool_calls` | list\<struct\<id: utf8?, name: utf8, arguments: utf8\>\>? | version 2: every call of the turn, arguments as the model produced them |
//! | `tool_call_id` | utf8? | version 2: the call a tool turn answers |
//! | `tools` | utf8? | version 2: the trajectory's tools as OpenAI's `tools` JSON, on each of its rows |
//! | `content_parts` | utf8? | version 2: the message's content parts as JSON, when it came as parts (`content` holds their text) |
//! | `input_tokens` | int64? | version 3: prompt tokens the model call of an assistant turn reported |
//! | `output_tokens` | int64? | version 3: completion tokens it reported |
//! | `information_gain_source` | utf8? | version 4: on assistant turns, where `reward_information_gain` came from: `heuristic`, or the rubric version the critic model scored it on (e.g. `turn_information_gain@1`) |
//! | `progress_source` | utf8? | version 4: the same for `reward_progress` (e.g. `turn_task_progress@1`) |
//!
//! List elements are never null. Tenant and date are not columns: they are Hive partition keys
//! in the object path (`trajectories/tenant=…/date=…/`), and Athena rejects a column named like
//! a partition key.
//!
//! # Encoding
//!
//! zstd (level 3 by default), row groups of 65,536 rows by default, column statistics and the
//! page index on. Parquet dictionary encoding is on only for the low-cardinality text columns
//! listed in [`DICTIONARY_COLUMNS`]; on free text and numbers it would cost time and fall back
//! to plain anyway. In Arrow every text column, `role` included, is plain utf8, so readers see
//! plain strings.
//!
//! # Example
//!
//! ```
//! use agentrl_turns::{TurnRow, TurnWriter, WriterOptions, read_turns};
//!
//! let row = TurnRow {
//!     trajectory_id: "t-1".into(),
//!     role: "assistant".into(),
//!     content: "Done.".into(),
//!     response_token_ids: Some(vec![9906, 13]),
//!     ..TurnRow::default()
//! };
//! let mut writer = TurnWriter::new(Vec::new(), &WriterOptions::default())?;
//! writer.write(&row)?;
//! let file = writer.finish()?;
//!
//! let rows = read_turns(bytes::Bytes::from(file))?.collect::<Result<Vec<_>, _>>()?;
//! assert_eq!(rows, [row]);
//! # Ok::<(), agentrl_turns::TurnsError>(())
//! ```

#![deny(missing_docs)]

mod error;
mod reader;
mod row;
mod schema;
mod writer;

#[cfg(test)]
mod test_rows;

pub use error::TurnsError;
pub use reader::{TurnReader, read_turns};
pub use row::{RowToolCall, TurnRow};
pub use schema::{
    DICTIONARY_COLUMNS, READABLE_VERSIONS, SCHEMA_VERSION, SCHEMA_VERSION_KEY, V2_COLUMNS,
    V3_COLUMNS, V4_COLUMNS, schema,
};
pub use writer::{TurnWriter, WriterOptions};

/// Where the turn table lives in the object store:
/// `trajectories/tenant=<keyed hash>/date=<YYYY-MM-DD>/part-<hash>.parquet`.
pub const TABLE_PREFIX: &str = "trajectories/";
