//! OpenTelemetry traces of agents into trajectories: the GenAI semantic conventions
//! (v1.37, `gen_ai.*` with `gen_ai.input.messages` / `gen_ai.output.messages`), and the forms
//! widely emitted before them (OpenLLMetry's `gen_ai.prompt.N.*`, OpenInference's
//! `llm.input_messages.N.*`). A span arrives decoded into [`Span`] (the wire formats are the
//! ingest function's); [`genai::read`] says what it is, and [`assemble::trajectories`] turns
//! the spans of one conversation into one trajectory per agent. See `docs/integrations.md`
//! for the mapping table.

pub mod assemble;
pub mod genai;
mod indexed;
mod span;

pub use assemble::{Ended, trajectories};
pub use genai::{GenAi, read};
pub use span::{INHERITED, Span, SpanError};
