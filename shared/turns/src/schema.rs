//! The Arrow schema of the turn table (version 4, and versions 1 to 3 for reading older
//! files), and how a file's schema is checked against its version's.

use std::sync::{Arc, LazyLock};

use arrow_schema::{DataType, Field, FieldRef, Fields, Schema, SchemaRef, TimeUnit};

use crate::TurnsError;

/// The version of the turn table schema that this crate writes. It reads this one and every
/// earlier one ([`READABLE_VERSIONS`]).
pub const SCHEMA_VERSION: u32 = 4;

/// The versions [`crate::read_turns`] reads: version 1 files lack the columns version 2
/// appended ([`V2_COLUMNS`]); their one call per turn is read from `tool_name` and
/// `tool_arguments`. Files before version 3 lack [`V3_COLUMNS`], files before version 4
/// [`V4_COLUMNS`] (read as null).
pub const READABLE_VERSIONS: [u32; 4] = [1, 2, 3, 4];

/// Columns version 1 has; version 2 appends [`V2_COLUMNS`] after them.
const V1_COLUMNS: usize = 36;
/// What version 2 appended.
pub const V2_COLUMNS: [&str; 4] = ["tool_calls", "tool_call_id", "tools", "content_parts"];
/// What version 3 appended: the token usage a model call reported.
pub const V3_COLUMNS: [&str; 2] = ["input_tokens", "output_tokens"];
/// What version 4 appended: where a turn's information gain and task progress came from.
pub const V4_COLUMNS: [&str; 2] = ["information_gain_source", "progress_source"];

/// The Parquet key-value metadata key that holds [`SCHEMA_VERSION`] as decimal text.
pub const SCHEMA_VERSION_KEY: &str = "agentrl.schema_version";

/// Columns written with Parquet dictionary encoding: text whose distinct values per row group
/// are few (ids repeated on every turn of a trajectory, roles, tool names). Other writers of the
/// table (compaction, the pyarrow comparison bench) should use the same list.
pub const DICTIONARY_COLUMNS: &[&str] = &[
    "trajectory_id",
    "conversation_id",
    "agent_id",
    "user_id",
    "group_id",
    "policy_version",
    "role",
    "tool_name",
    "tokenizer",
    "termination_reason",
    "message_id",
    "tools",
    "information_gain_source",
    "progress_source",
];

/// List elements are never null; one definition keeps the writer's builders and the schema
/// equal, which `RecordBatch::try_new` requires.
pub(crate) fn item(data_type: DataType) -> FieldRef {
    Arc::new(Field::new("item", data_type, false))
}

/// The fields of one element of `tool_calls`: the call's id (null when the sampler gave
/// none), the tool's name and the arguments as the model produced them.
pub(crate) fn tool_call_fields() -> Fields {
    Fields::from(vec![
        Field::new("id", DataType::Utf8, true),
        Field::new("name", DataType::Utf8, false),
        Field::new("arguments", DataType::Utf8, false),
    ])
}

pub(crate) const TIMEZONE: &str = "UTC";

static SCHEMA: LazyLock<SchemaRef> = LazyLock::new(|| {
    let utf8 = |name, nullable| Field::new(name, DataType::Utf8, nullable);
    let f64 = |name| Field::new(name, DataType::Float64, true);
    let list = |name, data_type| Field::new(name, DataType::List(item(data_type)), true);
    Arc::new(Schema::new(vec![
        utf8("trajectory_id", false),
        utf8("conversation_id", false),
        Field::new("turn_index", DataType::Int32, false),
        Field::new("turn_count", DataType::Int32, false),
        utf8("agent_id", false),
        utf8("user_id", true),
        utf8("group_id", true),
        utf8("policy_version", true),
        utf8("role", false),
        utf8("content", false),
        utf8("tool_name", true),
        utf8("tool_arguments", true),
        utf8("tool_result", true),
        utf8("error", true),
        list("prompt_token_ids", DataType::Int32),
        list("response_token_ids", DataType::Int32),
        list("loss_mask", DataType::Int8),
        list("behavior_logprobs", DataType::Float32),
        utf8("tokenizer", true),
        f64("turn_reward"),
        f64("reward_information_gain"),
        f64("reward_format"),
        f64("reward_progress"),
        Field::new("safety_violation", DataType::Boolean, false),
        f64("tool_call_valid"),
        f64("tool_choice"),
        f64("tool_error_handling"),
        f64("tool_efficiency"),
        f64("episode_reward"),
        Field::new("episode_success", DataType::Boolean, true),
        utf8("termination_reason", true),
        Field::new("truncated", DataType::Boolean, false),
        f64("dp_epsilon"),
        Field::new("pii_replacements", DataType::Int32, false),
        utf8("message_id", false),
        Field::new(
            "ingested_at",
            DataType::Timestamp(TimeUnit::Millisecond, Some(TIMEZONE.into())),
            false,
        ),
        list("tool_calls", DataType::Struct(tool_call_fields())),
        utf8("tool_call_id", true),
        utf8("tools", true),
        utf8("content_parts", true),
        Field::new("input_tokens", DataType::Int64, true),
        Field::new("output_tokens", DataType::Int64, true),
        utf8("information_gain_source", true),
        utf8("progress_source", true),
    ]))
});

/// The Arrow schema of [`SCHEMA_VERSION`], columns in file order.
pub fn schema() -> SchemaRef {
    Arc::clone(&SCHEMA)
}

/// Checks that `found` has the columns of schema `version`, in order and with the same types.
///
/// Nullability is not compared, neither of columns nor of list elements: another writer of the
/// table (pyarrow, DuckDB) may declare everything nullable. The reader checks instead that no
/// null appears where the schema forbids one.
pub(crate) fn check_columns(found: &Schema, version: u32) -> Result<(), TurnsError> {
    let full = schema();
    let count = match version {
        1 => V1_COLUMNS,
        2 => V1_COLUMNS + V2_COLUMNS.len(),
        3 => V1_COLUMNS + V2_COLUMNS.len() + V3_COLUMNS.len(),
        _ => full.fields().len(),
    };
    let expected = &full.fields()[..count];
    if found.fields().len() != expected.len() {
        return Err(TurnsError::ColumnCount {
            version,
            expected: expected.len(),
            found: found.fields().len(),
        });
    }
    let describe = |field: &Field| format!("{}: {}", field.name(), field.data_type());
    for (index, (want, got)) in expected.iter().zip(found.fields()).enumerate() {
        if want.name() != got.name() || !same_type(want.data_type(), got.data_type()) {
            return Err(TurnsError::ColumnMismatch {
                version,
                index,
                expected: describe(want),
                found: describe(got),
            });
        }
    }
    Ok(())
}

fn same_type(want: &DataType, got: &DataType) -> bool {
    match (want, got) {
        (DataType::List(want), DataType::List(got)) => same_type(want.data_type(), got.data_type()),
        (DataType::Struct(want), DataType::Struct(got)) => {
            want.len() == got.len()
                && want
                    .iter()
                    .zip(got)
                    .all(|(w, g)| w.name() == g.name() && same_type(w.data_type(), g.data_type()))
        }
        _ => want == got,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dictionary_columns_are_text_columns_of_the_schema() {
        let schema = schema();
        for name in DICTIONARY_COLUMNS {
            let field = schema
                .field_with_name(name)
                .expect("dictionary column exists");
            assert_eq!(field.data_type(), &DataType::Utf8, "{name}");
        }
    }

    #[test]
    fn nullability_differences_are_accepted_and_type_differences_are_not() {
        let relaxed = Schema::new(
            schema()
                .fields()
                .iter()
                .map(|f| {
                    let data_type = match f.data_type() {
                        DataType::List(item) => DataType::List(Arc::new(Field::new(
                            "element",
                            item.data_type().clone(),
                            true,
                        ))),
                        other => other.clone(),
                    };
                    Field::new(f.name(), data_type, true)
                })
                .collect::<Vec<_>>(),
        );
        check_columns(&relaxed, SCHEMA_VERSION).expect("only nullability and element names differ");

        let mut fields: Vec<Field> = schema()
            .fields()
            .iter()
            .map(|f| f.as_ref().clone())
            .collect();
        fields[2] = Field::new("turn_index", DataType::Int64, false);
        let err = check_columns(&Schema::new(fields.clone()), SCHEMA_VERSION)
            .expect_err("int64 is not int32");
        assert!(
            matches!(err, TurnsError::ColumnMismatch { index: 2, .. }),
            "{err}"
        );
        assert_eq!(
            err.to_string(),
            "column 2 should be `turn_index: Int32` in turn table schema version 4, \
             the file has `turn_index: Int64`"
        );
    }

    #[test]
    fn each_version_is_a_prefix_of_the_next() {
        let v1 = Schema::new(schema().fields()[..V1_COLUMNS].to_vec());
        check_columns(&v1, 1).expect("version 1's columns");
        let err = check_columns(&v1, 2).expect_err("version 2 has more");
        assert!(
            matches!(err, TurnsError::ColumnCount { found: 36, .. }),
            "{err}"
        );
        let v2_len = V1_COLUMNS + V2_COLUMNS.len();
        let v2 = Schema::new(schema().fields()[..v2_len].to_vec());
        check_columns(&v2, 2).expect("version 2's columns");
        assert!(check_columns(&v2, 3).is_err(), "version 3 has more");
        let v3_len = v2_len + V3_COLUMNS.len();
        let v3 = Schema::new(schema().fields()[..v3_len].to_vec());
        check_columns(&v3, 3).expect("version 3's columns");
        assert!(check_columns(&v3, 4).is_err(), "version 4 has more");
        assert_eq!(schema().fields()[V1_COLUMNS - 1].name(), "ingested_at");
        let full = schema();
        let names = |range: std::ops::Range<usize>| -> Vec<String> {
            full.fields()[range]
                .iter()
                .map(|f| f.name().clone())
                .collect()
        };
        assert_eq!(names(V1_COLUMNS..v2_len), V2_COLUMNS);
        assert_eq!(names(v2_len..v3_len), V3_COLUMNS);
        assert_eq!(names(v3_len..full.fields().len()), V4_COLUMNS);
    }
}
