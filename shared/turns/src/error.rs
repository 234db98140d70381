//! The one error type of the crate: invalid options, foreign files, and Parquet/Arrow failures.

use arrow_schema::ArrowError;
use parquet::errors::ParquetError;

use crate::schema::{SCHEMA_VERSION, SCHEMA_VERSION_KEY};

/// Why writing or reading a turn table failed.
#[derive(Debug, thiserror::Error)]
pub enum TurnsError {
    /// [`crate::WriterOptions::rows_per_group`] was 0.
    #[error("rows_per_group must be at least 1")]
    ZeroRowsPerGroup,
    /// [`crate::WriterOptions::encode_threads`] was 0.
    #[error("encode_threads must be at least 1")]
    ZeroEncodeThreads,
    /// [`crate::WriterOptions::zstd_level`] is not a zstd level.
    #[error("zstd level {level} is outside 1..=22")]
    InvalidZstdLevel {
        /// The level asked for.
        level: i32,
    },
    /// The file has no schema version metadata: it was not written as a turn table.
    #[error("not an agentrl turn table: the Parquet file has no `{SCHEMA_VERSION_KEY}` metadata")]
    NotATurnTable,
    /// The file is a turn table of a schema version this build does not read.
    #[error(
        "turn table schema version {found:?} is not supported (this build reads versions 1 to {SCHEMA_VERSION})"
    )]
    UnsupportedSchemaVersion {
        /// The version the file declares.
        found: String,
    },
    /// The file has more or fewer columns than the schema it declares.
    #[error("turn table schema version {version} has {expected} columns, the file has {found}")]
    ColumnCount {
        /// The version the file declares.
        version: u32,
        /// Columns of the schema.
        expected: usize,
        /// Columns in the file.
        found: usize,
    },
    /// A column of the file differs in name or type from the schema it declares.
    #[error(
        "column {index} should be `{expected}` in turn table schema version {version}, the file has `{found}`"
    )]
    ColumnMismatch {
        /// The version the file declares.
        version: u32,
        /// 0-based position of the column.
        index: usize,
        /// Name and type the schema has there.
        expected: String,
        /// Name and type the file has there.
        found: String,
    },
    /// A column (or list element) that the schema requires holds a null.
    #[error("column `{column}` holds a null, which the turn table schema does not allow")]
    UnexpectedNull {
        /// The column name.
        column: String,
    },
    /// The Parquet decoder gave up on a damaged file by panicking (its metadata names byte
    /// ranges past the end of the file, say); the panic's message.
    #[error("the Parquet file is damaged: {0}")]
    Damaged(String),
    /// Parquet encoding, decoding or I/O failed.
    #[error("Parquet read or write failed")]
    Parquet(#[from] ParquetError),
    /// Building an Arrow record batch failed.
    #[error("building an Arrow record batch failed")]
    Arrow(#[from] ArrowError),
}
