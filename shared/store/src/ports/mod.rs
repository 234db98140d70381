//! The storage ports: what the application needs, not how a backend does it.

mod objects;
mod queue;
mod table;

pub use objects::{ObjectMeta, ObjectWriter, Objects};
pub use queue::{DeadLetter, Message, Queue};
pub use table::{Condition, Item, Key, Page, Put, Query, SortRange, Table, Write, encode};
