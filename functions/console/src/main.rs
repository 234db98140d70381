//! Lambda entry point of the console function: the console's files and `config.json`, behind
//! the HTTP API's `/console` routes, which need no token (the page signs in through the
//! identity provider and then calls the API with its bearer token).

use agentrl_console::{ConsoleConfig, router};
use agentrl_http::telemetry;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), lambda_http::Error> {
    telemetry::init();
    let config = ConsoleConfig::from_env()?;
    lambda_http::run(router(config)).await
}
