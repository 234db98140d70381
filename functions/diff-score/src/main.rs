//! Lambda entry point of the diff-score function: wiring only.

use agentrl_diff_score::{DiffState, MAX_BODY_BYTES, service};

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), lambda_http::Error> {
    agentrl_http::lambda::run_table_service("diff-score", MAX_BODY_BYTES, |table| {
        service(
            DiffState::new(table).with_metrics(agentrl_http::lambda::options("diff-score").metrics),
        )
    })
    .await
}
