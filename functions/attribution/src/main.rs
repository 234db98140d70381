//! Lambda entry point of the attribution function: wiring only.

use agentrl_attribution::{AttributionState, service};
use agentrl_http::DEFAULT_BODY_LIMIT;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), lambda_http::Error> {
    agentrl_http::lambda::run_table_service("attribution", DEFAULT_BODY_LIMIT, |table| {
        service(AttributionState::new(table))
    })
    .await
}
