//! The console's API Gateway fixtures in `events/`, decoded by `lambda_http` exactly as in
//! Lambda and sent through the function's router with the settings its template gives it.

use agentrl_console::{ConsoleConfig, router};
use axum::Router;

fn fixture(name: &str) -> String {
    agentrl_testkit::fixture(name).unwrap().to_string()
}

/// The router as the template configures it: a provider's client id and endpoints.
fn app() -> Router {
    router(
        ConsoleConfig::from_lookup(|name| {
            let value = match name {
                "CLIENT_ID" => "console-client",
                "ISSUER" => "https://cognito-idp.us-east-1.amazonaws.com/us-east-1_abc",
                "AUTHORIZATION_ENDPOINT" => "https://agentrl.auth.example.com/oauth2/authorize",
                "TOKEN_ENDPOINT" => "https://agentrl.auth.example.com/oauth2/token",
                "SCOPES" => "openid agentrl/api",
                _ => return None,
            };
            Some(value.to_owned())
        })
        .unwrap(),
    )
}

#[tokio::test]
async fn every_fixture_round_trips_through_the_lambda_app() {
    let app = app();
    let (status, _) = agentrl_testkit::invoke(&app, &fixture("console/root.json"))
        .await
        .unwrap();
    assert_eq!(status, 308, "/console leads to the first page");

    let (status, page) = agentrl_testkit::invoke(&app, &fixture("console/view.json"))
        .await
        .unwrap();
    assert_eq!(status, 200);
    assert!(String::from_utf8_lossy(&page).contains("/console/app.js"));

    let (status, config) = agentrl_testkit::invoke_json(
        &app,
        &agentrl_testkit::fixture("console/config.json").unwrap(),
    )
    .await
    .unwrap();
    assert_eq!(status, 200);
    assert_eq!(config["oidc"]["client_id"], "console-client");
    assert_eq!(config["oidc"]["scopes"], "openid agentrl/api");
    assert_eq!(
        config["oidc"]["issuer"],
        "https://cognito-idp.us-east-1.amazonaws.com/us-east-1_abc"
    );
}
