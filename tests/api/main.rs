//! The HTTP API over the local stack, end to end: real sockets, real SQLite files, and the
//! same routes over DynamoDB on moto.

mod attribution;
mod batch;
mod budgets;
mod concurrency;
mod console;
mod evaluations;
mod faults;
mod federation;
mod gateway;
mod helpers;
mod idempotency;
mod isolation;
mod keys;
mod kpi_alarms;
mod kpis;
mod learning;
mod limits;
mod model_server;
mod plumbing;
mod rewards;
mod serving;
mod traces;
mod training;
mod trajectories;
mod turn_judges;
