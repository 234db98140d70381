//! Lambda entry point of the attribution function: wiring only.

use agentrl_attribution::{AttributionState, service};

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    agentrl_http::lambda::run_table_service("attribution", |table| {
        service(AttributionState::new(table))
    })
    .await
}
