//! The embedded adapter set: one SQLite database for the table and the queue, a directory for objects.

mod db;
mod queue;
mod table;

pub use db::Database;
pub use queue::{SqliteQueue, redeliver_in_flight};
pub use table::SqliteTable;
