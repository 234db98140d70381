//! [`TurnWriter`]: rows in, one zstd-compressed Parquet file out, memory bounded by one row
//! group, columns encoded in parallel.

use std::io::Write;
use std::sync::Arc;

use arrow_array::builder::{
    ArrayBuilder, BooleanBuilder, Float32Builder, Float64Builder, Int8Builder, Int32Builder,
    Int64Builder, ListBuilder, PrimitiveBuilder, StringBuilder, StructBuilder,
    TimestampMillisecondBuilder,
};
use arrow_array::types::ArrowPrimitiveType;
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, FieldRef, SchemaRef};
use parquet::arrow::ArrowWriter;
use parquet::arrow::arrow_writer::{ArrowColumnWriter, ArrowRowGroupWriterFactory, compute_leaves};
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::metadata::KeyValue;
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::ColumnPath;

use crate::schema::{
    DICTIONARY_COLUMNS, SCHEMA_VERSION, SCHEMA_VERSION_KEY, TIMEZONE, item, tool_call_fields,
};
use crate::{TurnRow, TurnsError, schema};

/// Rows converted to Arrow and encoded at a time. Row groups are made of several such batches,
/// so memory holds one compressed row group plus one batch of raw Arrow data, and the batch's
/// buffers (a few MB) are reused by the allocator instead of being mapped fresh every time.
const BATCH_ROWS: usize = 8192;

/// How [`TurnWriter`] lays out a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriterOptions {
    /// Rows per Parquet row group (default 65,536). The writer holds at most one row group in
    /// memory, compressed.
    pub rows_per_group: usize,
    /// zstd compression level, 1..=22 (default 3).
    pub zstd_level: i32,
    /// Threads that encode and compress columns side by side (default: the available
    /// parallelism). The file is byte-for-byte the same whatever the count; 1 encodes on the
    /// calling thread only.
    pub encode_threads: usize,
}

impl Default for WriterOptions {
    fn default() -> Self {
        Self {
            rows_per_group: 65_536,
            zstd_level: 3,
            encode_threads: std::thread::available_parallelism().map_or(1, usize::from),
        }
    }
}

/// Writes [`TurnRow`]s into a Parquet turn table of [`SCHEMA_VERSION`].
///
/// Rows are appended straight into Arrow column builders; every 8,192 rows (or at the end of a
/// row group) the builders become one record batch, whose columns are encoded and compressed
/// into the open row group, spread over [`WriterOptions::encode_threads`] threads. A row group
/// is written out every `rows_per_group` rows, so memory stays bounded by one compressed row
/// group plus one batch however many rows are written. Call [`TurnWriter::finish`] to write the
/// footer: without it the output is not a readable Parquet file.
pub struct TurnWriter<W: Write + Send> {
    file: SerializedFileWriter<W>,
    factory: ArrowRowGroupWriterFactory,
    /// One writer per column of the open row group; `None` between row groups.
    open_group: Option<Vec<ArrowColumnWriter>>,
    rows_in_group: usize,
    row_groups: usize,
    columns: Columns,
    schema: SchemaRef,
    rows_per_group: usize,
    encode_threads: usize,
    rows: u64,
}

impl<W: Write + Send> std::fmt::Debug for TurnWriter<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TurnWriter")
            .field("rows_per_group", &self.rows_per_group)
            .field("encode_threads", &self.encode_threads)
            .field("rows", &self.rows)
            .finish_non_exhaustive()
    }
}

impl<W: Write + Send> TurnWriter<W> {
    /// Starts a file on `sink`.
    ///
    /// # Errors
    ///
    /// [`TurnsError::ZeroRowsPerGroup`], [`TurnsError::InvalidZstdLevel`],
    /// [`TurnsError::ZeroEncodeThreads`], or [`TurnsError::Parquet`] when the file header
    /// cannot be written to `sink`.
    pub fn new(sink: W, options: &WriterOptions) -> Result<Self, TurnsError> {
        if options.rows_per_group == 0 {
            return Err(TurnsError::ZeroRowsPerGroup);
        }
        if options.encode_threads == 0 {
            return Err(TurnsError::ZeroEncodeThreads);
        }
        // Level 0 ("default") and negative (fast) levels exist in zstd but would make the
        // documented level of a file ambiguous.
        if !(1..=22).contains(&options.zstd_level) {
            return Err(TurnsError::InvalidZstdLevel {
                level: options.zstd_level,
            });
        }
        let level = ZstdLevel::try_new(options.zstd_level)?;
        let mut properties = WriterProperties::builder()
            .set_compression(Compression::ZSTD(level))
            .set_statistics_enabled(EnabledStatistics::Page)
            .set_dictionary_enabled(false)
            .set_key_value_metadata(Some(vec![KeyValue::new(
                SCHEMA_VERSION_KEY.to_owned(),
                SCHEMA_VERSION.to_string(),
            )]));
        for column in DICTIONARY_COLUMNS {
            properties = properties.set_column_dictionary_enabled(ColumnPath::from(*column), true);
        }
        let schema = schema();
        // ArrowWriter sets up the Parquet schema and the embedded Arrow schema (which restores
        // the timestamp's time zone for Arrow readers); the row groups are then written through
        // its lower-level parts so columns can be encoded in parallel.
        let (file, factory) =
            ArrowWriter::try_new(sink, Arc::clone(&schema), Some(properties.build()))?
                .into_serialized_writer()?;
        Ok(Self {
            file,
            factory,
            open_group: None,
            rows_in_group: 0,
            row_groups: 0,
            columns: Columns::new(),
            schema,
            rows_per_group: options.rows_per_group,
            encode_threads: options.encode_threads,
            rows: 0,
        })
    }

    /// Appends one row; every 8,192 rows are encoded and compressed, every `rows_per_group`
    /// rows are written out as a row group.
    ///
    /// # Errors
    ///
    /// [`TurnsError::Parquet`] when encoding or writing fails.
    pub fn write(&mut self, row: &TurnRow) -> Result<(), TurnsError> {
        self.columns.append(row);
        self.rows += 1;
        if self.columns.len == BATCH_ROWS
            || self.rows_in_group + self.columns.len == self.rows_per_group
        {
            self.encode_batch()?;
        }
        if self.rows_in_group == self.rows_per_group {
            self.close_row_group()?;
        }
        Ok(())
    }

    /// Rows written so far, buffered ones included.
    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// Writes the buffered rows and the footer, and hands back the sink.
    ///
    /// # Errors
    ///
    /// [`TurnsError::Parquet`] when encoding or writing fails.
    pub fn finish(mut self) -> Result<W, TurnsError> {
        if self.columns.len > 0 {
            self.encode_batch()?;
        }
        if self.rows_in_group > 0 {
            self.close_row_group()?;
        }
        Ok(self.file.into_inner()?)
    }

    fn encode_batch(&mut self) -> Result<(), TurnsError> {
        let rows = self.columns.len;
        let batch = RecordBatch::try_new(Arc::clone(&self.schema), self.columns.finish())?;
        let writers = match &mut self.open_group {
            Some(writers) => writers,
            slot => slot.insert(self.factory.create_column_writers(self.row_groups)?),
        };
        encode_columns(writers, &batch, self.encode_threads)?;
        self.rows_in_group += rows;
        Ok(())
    }

    fn close_row_group(&mut self) -> Result<(), TurnsError> {
        let Some(writers) = self.open_group.take() else {
            return Ok(());
        };
        let mut group = self.file.next_row_group()?;
        for writer in writers {
            writer.close()?.append_to_row_group(&mut group)?;
        }
        group.close()?;
        self.row_groups += 1;
        self.rows_in_group = 0;
        Ok(())
    }
}

/// Parquet leaves (and so column writers) of an Arrow type: one, or one per field of a
/// struct (`tool_calls` has three).
fn leaves(data_type: &DataType) -> usize {
    match data_type {
        DataType::Struct(fields) => fields.iter().map(|f| leaves(f.data_type())).sum(),
        DataType::List(item) => leaves(item.data_type()),
        _ => 1,
    }
}

/// One Arrow column's work: its leaves' writers, in order.
type Work<'a> = (Vec<&'a mut ArrowColumnWriter>, &'a FieldRef, &'a ArrayRef);

/// Encodes each column of `batch` with its writers, spreading the columns over `threads`
/// threads by size (largest first onto the least loaded thread: the token lists dominate, so
/// they get a thread each when there are enough).
fn encode_columns(
    writers: &mut [ArrowColumnWriter],
    batch: &RecordBatch,
    threads: usize,
) -> Result<(), TurnsError> {
    let schema = batch.schema();
    let mut rest = writers.iter_mut();
    let work: Vec<Work<'_>> = schema
        .fields()
        .iter()
        .zip(batch.columns())
        .map(|(field, array)| {
            let mine = rest.by_ref().take(leaves(field.data_type())).collect();
            (mine, field, array)
        })
        .collect();
    let threads = threads.min(work.len()).max(1);
    if threads == 1 {
        return encode_share(work);
    }
    let mut order = work;
    order.sort_by_key(|(_, _, array)| std::cmp::Reverse(array.get_buffer_memory_size()));
    let mut shares: Vec<(usize, Vec<_>)> = (0..threads).map(|_| (0, Vec::new())).collect();
    for item in order {
        let lightest = shares
            .iter_mut()
            .min_by_key(|(load, _)| *load)
            .expect("at least one share");
        lightest.0 += item.2.get_buffer_memory_size();
        lightest.1.push(item);
    }
    let mut shares = shares.into_iter().map(|(_, share)| share);
    let own = shares.next().expect("at least one share");
    std::thread::scope(|scope| {
        let spawned: Vec<_> = shares
            .map(|share| scope.spawn(move || encode_share(share)))
            .collect();
        let mut result = encode_share(own);
        for handle in spawned {
            let joined = handle
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            result = result.and(joined);
        }
        result
    })
}

fn encode_share(share: Vec<Work<'_>>) -> Result<(), TurnsError> {
    for (writers, field, array) in share {
        for (writer, leaf) in writers.into_iter().zip(compute_leaves(field, array)?) {
            writer.write(&leaf)?;
        }
    }
    Ok(())
}

/// One Arrow builder per column, in schema order.
struct Columns {
    len: usize,
    trajectory_id: StringBuilder,
    conversation_id: StringBuilder,
    turn_index: Int32Builder,
    turn_count: Int32Builder,
    agent_id: StringBuilder,
    user_id: StringBuilder,
    group_id: StringBuilder,
    policy_version: StringBuilder,
    role: StringBuilder,
    content: StringBuilder,
    tool_name: StringBuilder,
    tool_arguments: StringBuilder,
    tool_result: StringBuilder,
    error: StringBuilder,
    prompt_token_ids: ListBuilder<Int32Builder>,
    response_token_ids: ListBuilder<Int32Builder>,
    loss_mask: ListBuilder<Int8Builder>,
    behavior_logprobs: ListBuilder<Float32Builder>,
    tokenizer: StringBuilder,
    turn_reward: Float64Builder,
    reward_information_gain: Float64Builder,
    reward_format: Float64Builder,
    reward_progress: Float64Builder,
    safety_violation: BooleanBuilder,
    tool_call_valid: Float64Builder,
    tool_choice: Float64Builder,
    tool_error_handling: Float64Builder,
    tool_efficiency: Float64Builder,
    episode_reward: Float64Builder,
    episode_success: BooleanBuilder,
    termination_reason: StringBuilder,
    truncated: BooleanBuilder,
    dp_epsilon: Float64Builder,
    pii_replacements: Int32Builder,
    message_id: StringBuilder,
    ingested_at: TimestampMillisecondBuilder,
    tool_calls: ListBuilder<StructBuilder>,
    tool_call_id: StringBuilder,
    tools: StringBuilder,
    content_parts: StringBuilder,
    input_tokens: Int64Builder,
    output_tokens: Int64Builder,
    information_gain_source: StringBuilder,
    progress_source: StringBuilder,
}

fn tool_calls_builder() -> ListBuilder<StructBuilder> {
    let strings = || Box::new(StringBuilder::new()) as Box<dyn ArrayBuilder>;
    let calls = StructBuilder::new(tool_call_fields(), vec![strings(), strings(), strings()]);
    ListBuilder::new(calls).with_field(item(DataType::Struct(tool_call_fields())))
}

/// Appends a turn's calls; no call is a null list.
fn append_calls(builder: &mut ListBuilder<StructBuilder>, calls: &[crate::row::RowToolCall]) {
    fn text(values: &mut StructBuilder, i: usize) -> &mut StringBuilder {
        values
            .field_builder::<StringBuilder>(i)
            .expect("tool_calls fields are strings")
    }
    let values = builder.values();
    for call in calls {
        text(values, 0).append_option(call.id.as_deref());
        text(values, 1).append_value(&call.name);
        text(values, 2).append_value(&call.arguments);
        values.append(true);
    }
    builder.append(!calls.is_empty());
}

fn list_builder<T: ArrowPrimitiveType>(data_type: DataType) -> ListBuilder<PrimitiveBuilder<T>> {
    ListBuilder::new(PrimitiveBuilder::<T>::new()).with_field(item(data_type))
}

fn append_list<T: ArrowPrimitiveType>(
    builder: &mut ListBuilder<PrimitiveBuilder<T>>,
    values: Option<&[T::Native]>,
) {
    match values {
        Some(values) => {
            builder.values().append_slice(values);
            builder.append(true);
        }
        None => builder.append(false),
    }
}

impl Columns {
    fn new() -> Self {
        Self {
            len: 0,
            trajectory_id: StringBuilder::new(),
            conversation_id: StringBuilder::new(),
            turn_index: Int32Builder::new(),
            turn_count: Int32Builder::new(),
            agent_id: StringBuilder::new(),
            user_id: StringBuilder::new(),
            group_id: StringBuilder::new(),
            policy_version: StringBuilder::new(),
            role: StringBuilder::new(),
            content: StringBuilder::new(),
            tool_name: StringBuilder::new(),
            tool_arguments: StringBuilder::new(),
            tool_result: StringBuilder::new(),
            error: StringBuilder::new(),
            prompt_token_ids: list_builder(DataType::Int32),
            response_token_ids: list_builder(DataType::Int32),
            loss_mask: list_builder(DataType::Int8),
            behavior_logprobs: list_builder(DataType::Float32),
            tokenizer: StringBuilder::new(),
            turn_reward: Float64Builder::new(),
            reward_information_gain: Float64Builder::new(),
            reward_format: Float64Builder::new(),
            reward_progress: Float64Builder::new(),
            safety_violation: BooleanBuilder::new(),
            tool_call_valid: Float64Builder::new(),
            tool_choice: Float64Builder::new(),
            tool_error_handling: Float64Builder::new(),
            tool_efficiency: Float64Builder::new(),
            episode_reward: Float64Builder::new(),
            episode_success: BooleanBuilder::new(),
            termination_reason: StringBuilder::new(),
            truncated: BooleanBuilder::new(),
            dp_epsilon: Float64Builder::new(),
            pii_replacements: Int32Builder::new(),
            message_id: StringBuilder::new(),
            ingested_at: TimestampMillisecondBuilder::new().with_timezone(TIMEZONE),
            tool_calls: tool_calls_builder(),
            tool_call_id: StringBuilder::new(),
            tools: StringBuilder::new(),
            content_parts: StringBuilder::new(),
            input_tokens: Int64Builder::new(),
            output_tokens: Int64Builder::new(),
            information_gain_source: StringBuilder::new(),
            progress_source: StringBuilder::new(),
        }
    }

    fn append(&mut self, row: &TurnRow) {
        self.len += 1;
        self.trajectory_id.append_value(&row.trajectory_id);
        self.conversation_id.append_value(&row.conversation_id);
        self.turn_index.append_value(row.turn_index);
        self.turn_count.append_value(row.turn_count);
        self.agent_id.append_value(&row.agent_id);
        self.user_id.append_option(row.user_id.as_deref());
        self.group_id.append_option(row.group_id.as_deref());
        self.policy_version
            .append_option(row.policy_version.as_deref());
        self.role.append_value(&row.role);
        self.content.append_value(&row.content);
        self.tool_name.append_option(row.tool_name.as_deref());
        self.tool_arguments
            .append_option(row.tool_arguments.as_deref());
        self.tool_result.append_option(row.tool_result.as_deref());
        self.error.append_option(row.error.as_deref());
        append_list(&mut self.prompt_token_ids, row.prompt_token_ids.as_deref());
        append_list(
            &mut self.response_token_ids,
            row.response_token_ids.as_deref(),
        );
        append_list(&mut self.loss_mask, row.loss_mask.as_deref());
        append_list(
            &mut self.behavior_logprobs,
            row.behavior_logprobs.as_deref(),
        );
        self.tokenizer.append_option(row.tokenizer.as_deref());
        self.turn_reward.append_option(row.turn_reward);
        self.reward_information_gain
            .append_option(row.reward_information_gain);
        self.reward_format.append_option(row.reward_format);
        self.reward_progress.append_option(row.reward_progress);
        self.safety_violation.append_value(row.safety_violation);
        self.tool_call_valid.append_option(row.tool_call_valid);
        self.tool_choice.append_option(row.tool_choice);
        self.tool_error_handling
            .append_option(row.tool_error_handling);
        self.tool_efficiency.append_option(row.tool_efficiency);
        self.episode_reward.append_option(row.episode_reward);
        self.episode_success.append_option(row.episode_success);
        self.termination_reason
            .append_option(row.termination_reason.as_deref());
        self.truncated.append_value(row.truncated);
        self.dp_epsilon.append_option(row.dp_epsilon);
        self.pii_replacements.append_value(row.pii_replacements);
        self.message_id.append_value(&row.message_id);
        self.ingested_at.append_value(row.ingested_at_ms);
        append_calls(&mut self.tool_calls, &row.tool_calls);
        self.tool_call_id.append_option(row.tool_call_id.as_deref());
        self.tools.append_option(row.tools.as_deref());
        self.content_parts
            .append_option(row.content_parts.as_deref());
        self.input_tokens.append_option(row.input_tokens);
        self.output_tokens.append_option(row.output_tokens);
        self.information_gain_source
            .append_option(row.information_gain_source.as_deref());
        self.progress_source
            .append_option(row.progress_source.as_deref());
    }

    /// The buffered rows as arrays in schema order; the builders start over empty.
    fn finish(&mut self) -> Vec<ArrayRef> {
        self.len = 0;
        vec![
            Arc::new(self.trajectory_id.finish()),
            Arc::new(self.conversation_id.finish()),
            Arc::new(self.turn_index.finish()),
            Arc::new(self.turn_count.finish()),
            Arc::new(self.agent_id.finish()),
            Arc::new(self.user_id.finish()),
            Arc::new(self.group_id.finish()),
            Arc::new(self.policy_version.finish()),
            Arc::new(self.role.finish()),
            Arc::new(self.content.finish()),
            Arc::new(self.tool_name.finish()),
            Arc::new(self.tool_arguments.finish()),
            Arc::new(self.tool_result.finish()),
            Arc::new(self.error.finish()),
            Arc::new(self.prompt_token_ids.finish()),
            Arc::new(self.response_token_ids.finish()),
            Arc::new(self.loss_mask.finish()),
            Arc::new(self.behavior_logprobs.finish()),
            Arc::new(self.tokenizer.finish()),
            Arc::new(self.turn_reward.finish()),
            Arc::new(self.reward_information_gain.finish()),
            Arc::new(self.reward_format.finish()),
            Arc::new(self.reward_progress.finish()),
            Arc::new(self.safety_violation.finish()),
            Arc::new(self.tool_call_valid.finish()),
            Arc::new(self.tool_choice.finish()),
            Arc::new(self.tool_error_handling.finish()),
            Arc::new(self.tool_efficiency.finish()),
            Arc::new(self.episode_reward.finish()),
            Arc::new(self.episode_success.finish()),
            Arc::new(self.termination_reason.finish()),
            Arc::new(self.truncated.finish()),
            Arc::new(self.dp_epsilon.finish()),
            Arc::new(self.pii_replacements.finish()),
            Arc::new(self.message_id.finish()),
            Arc::new(self.ingested_at.finish()),
            Arc::new(self.tool_calls.finish()),
            Arc::new(self.tool_call_id.finish()),
            Arc::new(self.tools.finish()),
            Arc::new(self.content_parts.finish()),
            Arc::new(self.input_tokens.finish()),
            Arc::new(self.output_tokens.finish()),
            Arc::new(self.information_gain_source.finish()),
            Arc::new(self.progress_source.finish()),
        ]
    }
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;
    use parquet::basic::Encoding;
    use parquet::file::reader::{FileReader, SerializedFileReader};

    use super::*;
    use crate::test_rows::rows;

    fn write(rows: &[TurnRow], options: &WriterOptions) -> Vec<u8> {
        let mut writer = TurnWriter::new(Vec::new(), options).expect("valid options");
        for row in rows {
            writer.write(row).expect("row written");
        }
        assert_eq!(writer.rows(), rows.len() as u64);
        writer.finish().expect("file finished")
    }

    #[test]
    fn invalid_options_are_rejected() {
        let zero = WriterOptions {
            rows_per_group: 0,
            ..WriterOptions::default()
        };
        assert!(matches!(
            TurnWriter::new(Vec::new(), &zero),
            Err(TurnsError::ZeroRowsPerGroup)
        ));
        for level in [0, 23, -1] {
            let options = WriterOptions {
                zstd_level: level,
                ..WriterOptions::default()
            };
            let err = TurnWriter::new(Vec::new(), &options).expect_err("out of range");
            assert!(matches!(err, TurnsError::InvalidZstdLevel { level: l } if l == level));
        }
    }

    #[test]
    fn defaults_are_the_documented_ones() {
        let options = WriterOptions::default();
        assert_eq!((options.rows_per_group, options.zstd_level), (65_536, 3));
        assert!(options.encode_threads >= 1);
    }

    #[test]
    fn zero_encode_threads_are_rejected() {
        let options = WriterOptions {
            encode_threads: 0,
            ..WriterOptions::default()
        };
        assert!(matches!(
            TurnWriter::new(Vec::new(), &options),
            Err(TurnsError::ZeroEncodeThreads)
        ));
    }

    #[test]
    fn the_file_is_the_same_whatever_the_thread_count() {
        // Two batches in the first row group (8192 + 808 rows), one in the second.
        let rows = rows(10_000);
        let with = |encode_threads| WriterOptions {
            rows_per_group: 9_000,
            zstd_level: 3,
            encode_threads,
        };
        let one = write(&rows, &with(1));
        assert_eq!(write(&rows, &with(2)), one);
        assert_eq!(write(&rows, &with(5)), one);
    }

    #[test]
    fn row_groups_that_are_not_a_multiple_of_the_batch_keep_their_size() {
        let options = WriterOptions {
            rows_per_group: BATCH_ROWS + 1000,
            ..WriterOptions::default()
        };
        let n = 2 * options.rows_per_group + 5;
        let file = write(&rows(n), &options);
        let reader = SerializedFileReader::new(Bytes::from(file)).expect("parquet");
        let group_rows: Vec<i64> = reader
            .metadata()
            .row_groups()
            .iter()
            .map(|g| g.num_rows())
            .collect();
        let full = options.rows_per_group as i64;
        assert_eq!(group_rows, [full, full, 5]);
    }

    #[test]
    fn rows_are_split_into_row_groups_with_zstd_dictionaries_statistics_and_the_version() {
        let options = WriterOptions {
            rows_per_group: 1000,
            ..WriterOptions::default()
        };
        let file = write(&rows(2500), &options);
        let reader = SerializedFileReader::new(Bytes::from(file)).expect("parquet");
        let metadata = reader.metadata();

        let group_rows: Vec<i64> = metadata.row_groups().iter().map(|g| g.num_rows()).collect();
        assert_eq!(group_rows, [1000, 1000, 500]);

        let kv = metadata
            .file_metadata()
            .key_value_metadata()
            .expect("kv metadata");
        let version = kv
            .iter()
            .find(|kv| kv.key == SCHEMA_VERSION_KEY)
            .expect("version key");
        assert_eq!(version.value.as_deref(), Some("4"));

        for group in metadata.row_groups() {
            for column in group.columns() {
                let path = column.column_path().string();
                assert!(
                    matches!(column.compression(), Compression::ZSTD(_)),
                    "{path}: {:?}",
                    column.compression()
                );
                assert!(column.statistics().is_some(), "{path} has statistics");
                let top = path.split('.').next().expect("non-empty path");
                let dictionary = column.encodings().any(|e| e == Encoding::RLE_DICTIONARY);
                assert_eq!(dictionary, DICTIONARY_COLUMNS.contains(&top), "{path}");
            }
        }
    }

    #[test]
    fn a_file_without_rows_is_still_a_valid_turn_table() {
        let file = write(&[], &WriterOptions::default());
        let rows: Vec<_> = crate::read_turns(Bytes::from(file))
            .expect("opens")
            .collect::<Result<_, _>>()
            .expect("decodes");
        assert!(rows.is_empty());
    }
}
