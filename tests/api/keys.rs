//! Tenant API keys stored hashed (`agentrl keys`), on real SQLite files and on DynamoDB over
//! HTTP (moto): created, authenticating their tenant through the whole stack, listed per
//! tenant without the key, revoked by their tenant only.

use agentrl_core::TenantId;
use agentrl_http::api_keys::{ApiKeys, KEY_PREFIX};
use agentrl_store::Stores;
use serde_json::json;

use crate::helpers::{spawn_aws_stack, spawn_stack};

async fn keys_work_end_to_end(s: crate::helpers::Stack, stores: &Stores) {
    let keys = ApiKeys::new(stores.table.clone());
    let (a, b) = (
        TenantId::parse("tenant-a").unwrap(),
        TenantId::parse("tenant-b").unwrap(),
    );
    let (record, key) = keys.create(&a, "ci agent").await.unwrap();
    assert!(key.starts_with(KEY_PREFIX) && key.len() == KEY_PREFIX.len() + 64);
    assert!(key.starts_with(&record.starts_with));
    let stored = serde_json::to_string(&keys.list(&a).await.unwrap()).unwrap();
    assert!(!stored.contains(&key), "the key itself is never stored");
    assert_eq!(keys.list(&b).await.unwrap(), []);

    // The key is tenant-a's identity through the stack, the static keys still work.
    let budget = json!({"task_id": "t-1", "task": {"description": "fix the build"}});
    let (status, created, _) = s
        .send("POST", "/v1/budgets", Some(&key), Some(&budget))
        .await;
    assert_eq!(status, 201, "{created}");
    let path = format!("/v1/budgets/{}", created["budget_id"].as_str().unwrap());
    assert_eq!(
        s.a("GET", &path, None).await.0,
        200,
        "the same tenant's budget"
    );
    let (status, ..) = s.send("GET", &path, Some(&s.key_b), None).await;
    assert_eq!(status, 404);

    // Only its tenant revokes it; then it is refused (a fresh process; a running one within
    // the lookup cache's 30 s).
    assert!(!keys.revoke(&b, &record.key_id).await.unwrap());
    assert!(keys.revoke(&a, &record.key_id).await.unwrap());
    assert_eq!(
        ApiKeys::new(stores.table.clone())
            .tenant(&key)
            .await
            .unwrap(),
        None
    );
    assert_eq!(keys.list(&a).await.unwrap(), []);
    assert_eq!(
        ApiKeys::new(stores.table.clone())
            .tenant("arl_not-a-key")
            .await
            .unwrap(),
        None
    );
}

#[tokio::test]
async fn stored_keys_on_sqlite() {
    let s = spawn_stack().await;
    let stores = s.stores.clone();
    keys_work_end_to_end(s, &stores).await;
}

#[tokio::test]
async fn stored_keys_on_dynamodb() {
    let s = spawn_aws_stack().await;
    let stores = s.stores.clone();
    keys_work_end_to_end(s, &stores).await;
}
