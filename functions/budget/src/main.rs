//! Lambda entry point of the budget function: wiring only.

use agentrl_budget::{BudgetState, service};

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    agentrl_http::lambda::run_table_service("budget", |table| service(BudgetState::new(table)))
        .await
}
