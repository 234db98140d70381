//! Lambda entry point of the budget function: wiring only.

use agentrl_budget::{BudgetState, service};
use agentrl_http::DEFAULT_BODY_LIMIT;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), lambda_http::Error> {
    agentrl_http::lambda::run_table_service("budget", DEFAULT_BODY_LIMIT, |table| {
        service(
            BudgetState::new(table).with_metrics(agentrl_http::lambda::options("budget").metrics),
        )
    })
    .await
}
