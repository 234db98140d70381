//! Lambda entry point of the rewards function: wiring only.

use agentrl_rewards::{MAX_BODY_BYTES, RewardState, service};

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    agentrl_http::lambda::run_table_service("rewards", MAX_BODY_BYTES, |table| {
        service(RewardState::new(table))
    })
    .await
}
