//! The tenant's side of federated rounds on both stores: the opt-in (validated, naming the
//! field; another tenant's never visible), the privacy budget showing the rounds' (ε, δ)
//! beside the reward-noise ledger, a round charged once however often the charge is
//! delivered, and each tenant's own part of a round only.

use agentrl_core::TenantId;
use agentrl_core::privacy::rdp::{gaussian_epsilon, gaussian_rho};
use agentrl_training::federation::{FederationRepo, TenantRound};
use serde_json::json;

use crate::helpers::{Stack, spawn_aws_stack, spawn_stack};

async fn opt_in_budget_and_parts(s: Stack) {
    let (status, default) = s.a("GET", "/v1/config/federation", None).await;
    assert_eq!(status, 200);
    assert_eq!(
        default,
        json!({"enabled": false, "models": [], "epsilon": 0.0, "delta": 0.0})
    );
    for (body, field) in [
        (
            json!({"enabled": true, "models": [], "epsilon": -1.0, "delta": 1e-5}),
            "epsilon",
        ),
        (
            json!({"enabled": true, "models": [{"base_model": "q", "task_type": "t"}], "epsilon": 8.0, "delta": 1.0}),
            "delta",
        ),
        (
            json!({"enabled": true, "models": [{"base_model": "../q", "task_type": "t"}], "epsilon": 8.0, "delta": 1e-5}),
            "models[0].base_model",
        ),
        (
            json!({"enabled": true, "models": [{"base_model": "q", "task_type": ""}], "epsilon": 8.0, "delta": 1e-5}),
            "models[0].task_type",
        ),
        (
            json!({"enabled": true, "models": [], "epsilon": 8.0}),
            "delta",
        ),
    ] {
        let (status, problem) = s.a("PUT", "/v1/config/federation", Some(&body)).await;
        assert_eq!(
            (status, problem["field"].as_str()),
            (400, Some(field)),
            "{body}: {problem}"
        );
    }
    let opt_in = json!({"enabled": true, "models": [{"base_model": "qwen2.5-0.5b", "task_type": "support"}],
                        "epsilon": 8.0, "delta": 1e-5});
    let (status, stored) = s.a("PUT", "/v1/config/federation", Some(&opt_in)).await;
    assert_eq!((status, &stored), (200, &opt_in));
    let (_, theirs) = s.b("GET", "/v1/config/federation", None).await;
    assert_eq!(theirs["enabled"], false, "tenant B sees its own default");

    let repo = FederationRepo::new(s.stores.table.clone());
    let a = TenantId::parse("tenant-a").unwrap();
    assert_eq!(repo.members().await.unwrap(), std::slice::from_ref(&a));

    // A round charged twice (a redelivery) counts once.
    for _ in 0..2 {
        agentrl_store::federation::charge(
            s.stores.table.as_ref(),
            &a,
            "fed/r000000",
            gaussian_rho(1.0),
        )
        .await
        .unwrap();
    }
    let (_, budget) = s.a("GET", "/v1/privacy/budget", None).await;
    let federation = &budget["federation"];
    assert_eq!(
        (
            federation["enabled"].as_bool(),
            federation["rounds"].as_u64()
        ),
        (Some(true), Some(1))
    );
    let spent = federation["epsilon_spent"].as_f64().unwrap();
    assert!(
        (spent - gaussian_epsilon(1.0, 1, 1e-5)).abs() < 1e-9,
        "{budget}"
    );
    assert_eq!(budget["spent"], 0.0, "the reward ledger is apart");
    let (_, theirs) = s.b("GET", "/v1/privacy/budget", None).await;
    assert_eq!(theirs["federation"]["rounds"], 0);

    let part = TenantRound {
        round_id: "fed/r000000".into(),
        federation_id: "fed".into(),
        round: 0,
        finished_ms: 1,
        took_part: true,
        reason: None,
        agent_id: Some("helper".into()),
        weight: 0.5,
        participants: 2,
        noise_std: 0.5,
        epsilon_round: spent,
        epsilon_total: spent,
        delta: 1e-5,
    };
    repo.record_part(&a, &part).await.unwrap();
    repo.record_part(&a, &part).await.unwrap();
    let (status, page) = s.a("GET", "/v1/federation/rounds?limit=1", None).await;
    assert_eq!(status, 200);
    assert_eq!(
        page["rounds"],
        json!([serde_json::to_value(&part).unwrap()])
    );
    assert!(
        page.get("next_cursor").is_none(),
        "one part, however often written: {page}"
    );
    let (_, theirs) = s.b("GET", "/v1/federation/rounds", None).await;
    assert_eq!(theirs["rounds"], json!([]));
    let (status, problem) = s.a("GET", "/v1/federation/rounds?limit=0", None).await;
    assert_eq!((status, problem["field"].as_str()), (400, Some("limit")));

    // Leaving takes the tenant out of the members a round reads.
    let off = json!({"enabled": false, "models": [], "epsilon": 8.0, "delta": 1e-5});
    assert_eq!(s.a("PUT", "/v1/config/federation", Some(&off)).await.0, 200);
    assert!(repo.members().await.unwrap().is_empty());
}

#[tokio::test]
async fn federation_on_sqlite() {
    opt_in_budget_and_parts(spawn_stack().await).await;
}

#[tokio::test]
async fn federation_on_dynamodb() {
    opt_in_budget_and_parts(spawn_aws_stack().await).await;
}
