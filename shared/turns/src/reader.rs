//! [`read_turns`]: a streaming reader of turn tables that checks the schema before decoding.

use arrow_array::types::{
    ArrowPrimitiveType, Float32Type, Float64Type, Int8Type, Int32Type, Int64Type,
    TimestampMillisecondType,
};
use arrow_array::{
    Array, BooleanArray, ListArray, PrimitiveArray, RecordBatch, StringArray, StructArray,
};
use parquet::arrow::arrow_reader::{ParquetRecordBatchReader, ParquetRecordBatchReaderBuilder};
use parquet::file::reader::ChunkReader;

use crate::row::RowToolCall;
use crate::schema::{READABLE_VERSIONS, SCHEMA_VERSION_KEY, check_columns};
use crate::{TurnRow, TurnsError, schema};

/// Rows decoded at a time: small enough that a batch of rows with token lists stays a few MB.
const BATCH_ROWS: usize = 4096;

/// Iterator over the rows of a turn table, decoding one record batch at a time.
#[derive(Debug)]
pub struct TurnReader {
    /// `None` once the decoder panicked on a damaged file: nothing more is read from it.
    batches: Option<ParquetRecordBatchReader>,
    rows: std::vec::IntoIter<TurnRow>,
    /// The file's schema version.
    version: u32,
}

/// Opens a turn table: held in memory (`Bytes` of a downloaded object) or a `File`, which
/// streams from disk one record batch at a time.
///
/// # Errors
///
/// [`TurnsError::NotATurnTable`] for a Parquet file without the schema version metadata,
/// [`TurnsError::UnsupportedSchemaVersion`] for a version this build does not read (every
/// version up to [`crate::SCHEMA_VERSION`] is read: an older file's rows come out in the
/// current shape),
/// [`TurnsError::ColumnCount`] / [`TurnsError::ColumnMismatch`] when the columns differ from
/// that version's, [`TurnsError::Parquet`] when `data` is not Parquet at all.
pub fn read_turns<T: ChunkReader + 'static>(data: T) -> Result<TurnReader, TurnsError> {
    let builder = unpanicked(|| ParquetRecordBatchReaderBuilder::try_new(data))??;
    let version = builder
        .metadata()
        .file_metadata()
        .key_value_metadata()
        .and_then(|kvs| kvs.iter().find(|kv| kv.key == SCHEMA_VERSION_KEY))
        .ok_or(TurnsError::NotATurnTable)?;
    let found = version.value.as_deref().unwrap_or_default();
    let version = found
        .parse::<u32>()
        .ok()
        .filter(|v| READABLE_VERSIONS.contains(v))
        .ok_or_else(|| TurnsError::UnsupportedSchemaVersion {
            found: found.to_owned(),
        })?;
    check_columns(builder.schema(), version)?;
    Ok(TurnReader {
        batches: Some(unpanicked(|| builder.with_batch_size(BATCH_ROWS).build())??),
        rows: Vec::new().into_iter(),
        version,
    })
}

/// Runs a step of the Parquet decoder, turning a panic into [`TurnsError::Damaged`].
///
/// The `parquet` crate asserts on some inconsistencies of a damaged file instead of returning
/// an error (a column chunk whose byte range runs past the file, found by
/// `tests/fuzz.rs`), and a stored object can be damaged. The closure is unwind safe in
/// effect: on a panic, whatever it borrowed mutably is never used again (the builder is
/// consumed; [`TurnReader`] drops its decoder and ends).
fn unpanicked<R>(step: impl FnOnce() -> R) -> Result<R, TurnsError> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(step)).map_err(|panic| {
        let reason = panic
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "the decoder panicked".to_owned());
        TurnsError::Damaged(reason)
    })
}

impl Iterator for TurnReader {
    type Item = Result<TurnRow, TurnsError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(row) = self.rows.next() {
                return Some(Ok(row));
            }
            let batches = self.batches.as_mut()?;
            let decoded = match unpanicked(|| batches.next()) {
                Ok(None) => return None,
                Ok(Some(Ok(batch))) => decode(&batch, self.version),
                Ok(Some(Err(err))) => Err(err.into()),
                Err(damaged) => {
                    self.batches = None;
                    Err(damaged)
                }
            };
            match decoded {
                Ok(rows) => self.rows = rows.into_iter(),
                Err(err) => return Some(Err(err)),
            }
        }
    }
}

/// Decodes a batch of a file of schema `version` column by column (in schema order), which
/// keeps each pass over one array.
fn decode(batch: &RecordBatch, version: u32) -> Result<Vec<TurnRow>, TurnsError> {
    let mut d = Decoder {
        batch,
        rows: vec![TurnRow::default(); batch.num_rows()],
        next: 0,
        version,
    };
    d.required_strings(|r, v| r.trajectory_id = v.to_owned())?;
    d.required_strings(|r, v| r.conversation_id = v.to_owned())?;
    d.required_values::<Int32Type>(|r, v| r.turn_index = v)?;
    d.required_values::<Int32Type>(|r, v| r.turn_count = v)?;
    d.required_strings(|r, v| r.agent_id = v.to_owned())?;
    d.strings(|r, v| r.user_id = v.map(str::to_owned))?;
    d.strings(|r, v| r.group_id = v.map(str::to_owned))?;
    d.strings(|r, v| r.policy_version = v.map(str::to_owned))?;
    d.required_strings(|r, v| r.role = v.to_owned())?;
    d.required_strings(|r, v| r.content = v.to_owned())?;
    d.strings(|r, v| r.tool_name = v.map(str::to_owned))?;
    d.strings(|r, v| r.tool_arguments = v.map(str::to_owned))?;
    d.strings(|r, v| r.tool_result = v.map(str::to_owned))?;
    d.strings(|r, v| r.error = v.map(str::to_owned))?;
    d.lists::<Int32Type>(|r, v| r.prompt_token_ids = v)?;
    d.lists::<Int32Type>(|r, v| r.response_token_ids = v)?;
    d.lists::<Int8Type>(|r, v| r.loss_mask = v)?;
    d.lists::<Float32Type>(|r, v| r.behavior_logprobs = v)?;
    d.strings(|r, v| r.tokenizer = v.map(str::to_owned))?;
    d.values::<Float64Type>(|r, v| r.turn_reward = v)?;
    d.values::<Float64Type>(|r, v| r.reward_information_gain = v)?;
    d.values::<Float64Type>(|r, v| r.reward_format = v)?;
    d.values::<Float64Type>(|r, v| r.reward_progress = v)?;
    d.required_bools(|r, v| r.safety_violation = v)?;
    d.values::<Float64Type>(|r, v| r.tool_call_valid = v)?;
    d.values::<Float64Type>(|r, v| r.tool_choice = v)?;
    d.values::<Float64Type>(|r, v| r.tool_error_handling = v)?;
    d.values::<Float64Type>(|r, v| r.tool_efficiency = v)?;
    d.values::<Float64Type>(|r, v| r.episode_reward = v)?;
    d.bools(|r, v| r.episode_success = v)?;
    d.strings(|r, v| r.termination_reason = v.map(str::to_owned))?;
    d.required_bools(|r, v| r.truncated = v)?;
    d.values::<Float64Type>(|r, v| r.dp_epsilon = v)?;
    d.required_values::<Int32Type>(|r, v| r.pii_replacements = v)?;
    d.required_strings(|r, v| r.message_id = v.to_owned())?;
    d.required_values::<TimestampMillisecondType>(|r, v| r.ingested_at_ms = v)?;
    if version == 1 {
        // One call per turn, without an id.
        for r in &mut d.rows {
            if let Some(name) = &r.tool_name {
                r.tool_calls = vec![RowToolCall {
                    id: None,
                    name: name.clone(),
                    arguments: r.tool_arguments.clone().unwrap_or_default(),
                }];
            }
        }
        return Ok(d.rows);
    }
    d.tool_calls()?;
    d.strings(|r, v| r.tool_call_id = v.map(str::to_owned))?;
    d.strings(|r, v| r.tools = v.map(str::to_owned))?;
    d.strings(|r, v| r.content_parts = v.map(str::to_owned))?;
    if version == 2 {
        return Ok(d.rows);
    }
    d.values::<Int64Type>(|r, v| r.input_tokens = v)?;
    d.values::<Int64Type>(|r, v| r.output_tokens = v)?;
    if version == 3 {
        return Ok(d.rows);
    }
    d.strings(|r, v| r.information_gain_source = v.map(str::to_owned))?;
    d.strings(|r, v| r.progress_source = v.map(str::to_owned))?;
    Ok(d.rows)
}

/// Walks the columns of a batch in order, filling one field of every row per column.
struct Decoder<'a> {
    batch: &'a RecordBatch,
    rows: Vec<TurnRow>,
    next: usize,
    version: u32,
}

impl<'a> Decoder<'a> {
    /// The next column as `A`, refusing nulls when `required`.
    fn column<A: Array + 'static>(&mut self, required: bool) -> Result<&'a A, TurnsError> {
        let index = self.next;
        self.next += 1;
        let batch: &'a RecordBatch = self.batch;
        let field = batch.schema_ref().field(index).clone();
        let array = batch.column(index);
        // Types were checked against the schema when the file was opened; this only fails if
        // the decoder's column order drifts from the schema's.
        let typed = array.as_any().downcast_ref::<A>().ok_or_else(|| {
            let want = schema().field(index).clone();
            TurnsError::ColumnMismatch {
                version: self.version,
                index,
                expected: format!("{}: {}", want.name(), want.data_type()),
                found: format!("{}: {}", field.name(), field.data_type()),
            }
        })?;
        if required && array.null_count() > 0 {
            return Err(TurnsError::UnexpectedNull {
                column: field.name().clone(),
            });
        }
        Ok(typed)
    }

    fn required_strings(&mut self, set: impl Fn(&mut TurnRow, &str)) -> Result<(), TurnsError> {
        let array = self.column::<StringArray>(true)?;
        for (i, row) in self.rows.iter_mut().enumerate() {
            set(row, array.value(i));
        }
        Ok(())
    }

    fn strings(&mut self, set: impl Fn(&mut TurnRow, Option<&str>)) -> Result<(), TurnsError> {
        let array = self.column::<StringArray>(false)?;
        for (row, value) in self.rows.iter_mut().zip(array) {
            set(row, value);
        }
        Ok(())
    }

    fn required_values<T: ArrowPrimitiveType>(
        &mut self,
        set: impl Fn(&mut TurnRow, T::Native),
    ) -> Result<(), TurnsError> {
        let array = self.column::<PrimitiveArray<T>>(true)?;
        for (row, value) in self.rows.iter_mut().zip(array.values()) {
            set(row, *value);
        }
        Ok(())
    }

    fn values<T: ArrowPrimitiveType>(
        &mut self,
        set: impl Fn(&mut TurnRow, Option<T::Native>),
    ) -> Result<(), TurnsError> {
        let array = self.column::<PrimitiveArray<T>>(false)?;
        for (row, value) in self.rows.iter_mut().zip(array) {
            set(row, value);
        }
        Ok(())
    }

    fn required_bools(&mut self, set: impl Fn(&mut TurnRow, bool)) -> Result<(), TurnsError> {
        let array = self.column::<BooleanArray>(true)?;
        for (row, value) in self.rows.iter_mut().zip(array.values()) {
            set(row, value);
        }
        Ok(())
    }

    fn bools(&mut self, set: impl Fn(&mut TurnRow, Option<bool>)) -> Result<(), TurnsError> {
        let array = self.column::<BooleanArray>(false)?;
        for (row, value) in self.rows.iter_mut().zip(array) {
            set(row, value);
        }
        Ok(())
    }

    fn lists<T: ArrowPrimitiveType>(
        &mut self,
        set: impl Fn(&mut TurnRow, Option<Vec<T::Native>>),
    ) -> Result<(), TurnsError> {
        let index = self.next;
        let list = self.column::<ListArray>(false)?;
        let want = schema().field(index).clone();
        let name = want.name();
        let items = list
            .values()
            .as_any()
            .downcast_ref::<PrimitiveArray<T>>()
            .ok_or_else(|| TurnsError::ColumnMismatch {
                version: self.version,
                index,
                expected: format!("{name}: {}", want.data_type()),
                found: format!("{name}: {}", list.data_type()),
            })?;
        if items.null_count() > 0 {
            return Err(TurnsError::UnexpectedNull {
                column: format!("{name}.item"),
            });
        }
        let offsets = list.value_offsets();
        for (i, row) in self.rows.iter_mut().enumerate() {
            let value = list.is_valid(i).then(|| {
                let (start, end) = (offsets[i] as usize, offsets[i + 1] as usize);
                items.values()[start..end].to_vec()
            });
            set(row, value);
        }
        Ok(())
    }

    /// `tool_calls`: a list (null: no call) of structs of `id`, `name`, `arguments`.
    fn tool_calls(&mut self) -> Result<(), TurnsError> {
        let index = self.next;
        let list = self.column::<ListArray>(false)?;
        let mismatch = || TurnsError::ColumnMismatch {
            version: self.version,
            index,
            expected: format!("tool_calls: {}", schema().field(index).data_type()),
            found: format!("tool_calls: {}", list.data_type()),
        };
        let calls = list
            .values()
            .as_any()
            .downcast_ref::<StructArray>()
            .ok_or_else(mismatch)?;
        let field = |name: &str| -> Result<&StringArray, TurnsError> {
            calls
                .column_by_name(name)
                .and_then(|c| c.as_any().downcast_ref::<StringArray>())
                .ok_or_else(mismatch)
        };
        let (ids, names, arguments) = (field("id")?, field("name")?, field("arguments")?);
        for (column, array) in [("name", names), ("arguments", arguments)] {
            if calls.null_count() > 0 || array.null_count() > 0 {
                return Err(TurnsError::UnexpectedNull {
                    column: format!("tool_calls.item.{column}"),
                });
            }
        }
        let offsets = list.value_offsets();
        for (i, row) in self.rows.iter_mut().enumerate() {
            if list.is_valid(i) {
                let (start, end) = (offsets[i] as usize, offsets[i + 1] as usize);
                row.tool_calls = (start..end)
                    .map(|j| RowToolCall {
                        id: ids.is_valid(j).then(|| ids.value(j).to_owned()),
                        name: names.value(j).to_owned(),
                        arguments: arguments.value(j).to_owned(),
                    })
                    .collect();
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{ArrayRef, Int32Array, StringArray};
    use arrow_schema::{DataType, Field, Schema};
    use bytes::Bytes;
    use parquet::arrow::ArrowWriter;
    use parquet::file::metadata::KeyValue;
    use parquet::file::properties::WriterProperties;

    use super::*;
    use crate::test_rows::{all_null_row, all_set_row, rows};
    use crate::{TurnWriter, WriterOptions};

    fn write(rows: &[TurnRow], rows_per_group: usize) -> Bytes {
        let options = WriterOptions {
            rows_per_group,
            ..WriterOptions::default()
        };
        let mut writer = TurnWriter::new(Vec::new(), &options).expect("valid options");
        for row in rows {
            writer.write(row).expect("row written");
        }
        Bytes::from(writer.finish().expect("file finished"))
    }

    /// `rows` written and read back as one Arrow batch.
    fn first_batch(rows: &[TurnRow]) -> RecordBatch {
        read_turns(write(rows, 10))
            .expect("opens")
            .batches
            .expect("a decoder")
            .next()
            .expect("one batch")
            .expect("decodes")
    }

    fn read(data: Bytes) -> Vec<TurnRow> {
        read_turns(data)
            .expect("a turn table")
            .collect::<Result<_, _>>()
            .expect("rows decode")
    }

    /// A Parquet file written without `TurnWriter`, with the given key-value metadata.
    fn foreign(batch: &RecordBatch, version: Option<&str>) -> Bytes {
        let kv = version.map(|v| vec![KeyValue::new(SCHEMA_VERSION_KEY.into(), v.to_owned())]);
        let properties = WriterProperties::builder()
            .set_key_value_metadata(kv)
            .build();
        let mut writer =
            ArrowWriter::try_new(Vec::new(), batch.schema(), Some(properties)).expect("writer");
        writer.write(batch).expect("batch");
        Bytes::from(writer.into_inner().expect("file"))
    }

    fn other_table() -> RecordBatch {
        let columns: Vec<ArrayRef> = vec![
            Arc::new(StringArray::from(vec!["a", "b"])),
            Arc::new(Int32Array::from(vec![1, 2])),
        ];
        let schema = Schema::new(vec![
            Field::new("name", DataType::Utf8, false),
            Field::new("count", DataType::Int32, false),
        ]);
        RecordBatch::try_new(Arc::new(schema), columns).expect("batch")
    }

    #[test]
    fn every_column_null_and_non_null_round_trips() {
        let rows = vec![all_null_row(), all_set_row()];
        assert_eq!(read(write(&rows, 10)), rows);
    }

    #[test]
    fn empty_lists_stay_empty_and_null_lists_stay_null() {
        let empty = TurnRow {
            prompt_token_ids: Some(Vec::new()),
            response_token_ids: Some(Vec::new()),
            loss_mask: Some(Vec::new()),
            behavior_logprobs: Some(Vec::new()),
            ..all_null_row()
        };
        let rows = vec![empty.clone(), all_null_row(), empty];
        let back = read(write(&rows, 10));
        assert_eq!(back, rows);
        assert_eq!(back[0].prompt_token_ids, Some(Vec::new()));
        assert_eq!(back[1].prompt_token_ids, None);
    }

    #[test]
    fn many_row_groups_and_read_batches_round_trip_in_order() {
        // 3000-row groups and 4096-row read batches, so batches straddle row groups.
        let rows = rows(10_000);
        let back = read(write(&rows, 3000));
        assert_eq!(back.len(), rows.len());
        for (i, (got, want)) in back.iter().zip(&rows).enumerate() {
            assert_eq!(got, want, "row {i}");
        }
        assert!(
            rows.iter().any(|r| r.content.contains('🦀')),
            "fixture has unicode"
        );
        assert!(
            rows.iter().any(|r| r.loss_mask == Some(Vec::new())),
            "fixture has empty lists"
        );
    }

    #[test]
    fn a_foreign_parquet_file_is_rejected_as_not_a_turn_table() {
        let err = read_turns(foreign(&other_table(), None)).expect_err("foreign");
        assert!(matches!(err, TurnsError::NotATurnTable), "{err:?}");
        assert_eq!(
            err.to_string(),
            "not an agentrl turn table: the Parquet file has no `agentrl.schema_version` metadata"
        );
    }

    #[test]
    fn another_schema_version_is_rejected() {
        let err = read_turns(foreign(&other_table(), Some("5"))).expect_err("version 5");
        assert!(
            matches!(&err, TurnsError::UnsupportedSchemaVersion { found } if found == "5"),
            "{err:?}"
        );
        assert_eq!(
            err.to_string(),
            "turn table schema version \"5\" is not supported (this build reads versions 1 to 4)"
        );
    }

    #[test]
    fn version_one_with_other_columns_is_rejected() {
        let err = read_turns(foreign(&other_table(), Some("1"))).expect_err("2 columns");
        assert!(
            matches!(
                err,
                TurnsError::ColumnCount {
                    version: 1,
                    expected: 36,
                    found: 2
                }
            ),
            "{err:?}"
        );
    }

    #[test]
    fn a_null_in_a_required_column_of_a_relaxed_file_is_an_error() {
        // What another writer (pyarrow, DuckDB) may produce: every column nullable.
        let batch = first_batch(&[all_set_row()]);
        let relaxed = Schema::new(
            batch
                .schema()
                .fields()
                .iter()
                .map(|f| f.as_ref().clone().with_nullable(true))
                .collect::<Vec<_>>(),
        );
        let mut columns = batch.columns().to_vec();
        let role = schema().index_of("role").expect("role column");
        columns[role] = Arc::new(StringArray::from(vec![None::<&str>]));
        let batch = RecordBatch::try_new(Arc::new(relaxed), columns).expect("relaxed batch");

        let mut reader = read_turns(foreign(&batch, Some("4"))).expect("columns match");
        let err = reader.next().expect("one item").expect_err("null role");
        assert!(
            matches!(&err, TurnsError::UnexpectedNull { column } if column == "role"),
            "{err:?}"
        );
    }

    #[test]
    fn a_version_2_file_reads_without_usage() {
        let rows = vec![all_set_row()];
        let v2 = first_batch(&rows)
            .project(&(0..40).collect::<Vec<_>>())
            .expect("first 40");
        let back: Vec<TurnRow> = read_turns(foreign(&v2, Some("2")))
            .expect("a version 2 table")
            .collect::<Result<_, _>>()
            .expect("rows decode");
        let expected = TurnRow {
            input_tokens: None,
            output_tokens: None,
            information_gain_source: None,
            progress_source: None,
            ..rows[0].clone()
        };
        assert_eq!(back, [expected]);
        assert!(
            read_turns(foreign(&v2, Some("3"))).is_err(),
            "version 3 has 42"
        );
    }

    #[test]
    fn a_version_3_file_reads_without_reward_sources() {
        let rows = vec![all_set_row()];
        let v3 = first_batch(&rows)
            .project(&(0..42).collect::<Vec<_>>())
            .expect("first 42");
        let back: Vec<TurnRow> = read_turns(foreign(&v3, Some("3")))
            .expect("a version 3 table")
            .collect::<Result<_, _>>()
            .expect("rows decode");
        let expected = TurnRow {
            information_gain_source: None,
            progress_source: None,
            ..rows[0].clone()
        };
        assert_eq!(back, [expected]);
        assert!(
            read_turns(foreign(&v3, Some("4"))).is_err(),
            "version 4 has 44"
        );
    }

    #[test]
    fn a_version_1_file_reads_its_one_call_per_turn_as_tool_calls() {
        let rows = vec![all_set_row(), all_null_row()];
        let batch = first_batch(&rows);
        let v1 = batch
            .project(&(0..36).collect::<Vec<_>>())
            .expect("first 36");
        let back: Vec<TurnRow> = read_turns(foreign(&v1, Some("1")))
            .expect("a version 1 table")
            .collect::<Result<_, _>>()
            .expect("rows decode");
        let full = &back[0];
        assert_eq!(
            full.tool_calls,
            [RowToolCall {
                id: None,
                name: "search".into(),
                arguments: "{\"q\": \"rust parquet\"}".into(),
            }]
        );
        assert_eq!((&full.tool_call_id, &full.tools), (&None, &None));
        assert_eq!(full.content_parts, None);
        assert_eq!(full.content, rows[0].content);
        assert!(back[1].tool_calls.is_empty());
    }

    #[test]
    fn bytes_that_are_not_parquet_are_a_parquet_error() {
        let err = read_turns(Bytes::from_static(b"not a parquet file")).expect_err("garbage");
        assert!(matches!(err, TurnsError::Parquet(_)), "{err:?}");
    }
}
