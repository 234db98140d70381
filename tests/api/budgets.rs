//! The budget service through HTTP: life cycle, escalation, loops, idempotency, tenancy, config.

use serde_json::{Value, json};

use crate::helpers::{Stack, spawn_aws_stack, spawn_stack};

fn report(id: &str, tokens: u64) -> Value {
    json!({"report_id": id, "tokens": tokens})
}

#[tokio::test]
async fn a_budget_lives_from_allocation_to_completion() {
    let s = spawn_stack().await;
    let (status, b, headers) = s
        .send(
            "POST",
            "/v1/budgets",
            Some(&s.key_a),
            Some(&json!({"task_id": "task-42", "task": {
                "description": "Refactor the storage layer to remove the race condition between writers",
                "files_touched": ["a.rs", "b.rs", "c.rs", "d.rs", "e.rs", "f.rs"]
            }})),
        )
        .await;
    assert_eq!(status, 201);
    let id = b["budget_id"].as_str().unwrap().to_owned();
    assert_eq!(headers["location"], format!("/v1/budgets/{id}").as_str());
    assert_eq!(b["complexity"], "complex");
    assert_eq!(
        (
            b["allocated_tokens"].as_u64(),
            b["max_total_tokens"].as_u64()
        ),
        (Some(8_000), Some(16_000))
    );
    assert_eq!(
        (b["consumed_tokens"].as_u64(), b["status"].as_str()),
        (Some(0), Some("active"))
    );
    assert_eq!(b["escalations"], json!([]));
    let features: Vec<&str> = b["assessment"]["features"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["name"].as_str().unwrap())
        .collect();
    assert!(
        features.contains(&"complex_keywords") && features.contains(&"files_touched"),
        "{features:?}"
    );

    let path = format!("/v1/budgets/{id}/consumption");
    let (_, d) = s.a("POST", &path, Some(&report("r1", 7_000))).await;
    assert_eq!(d["action"], "CONTINUE");
    let (_, d) = s
        .a(
            "POST",
            &path,
            Some(&json!({"report_id": "r2", "tokens": 500, "trigger": "verifier-rejection"})),
        )
        .await;
    assert_eq!(
        (d["action"].as_str(), d["allocated_tokens"].as_u64()),
        (Some("ESCALATED"), Some(10_000))
    );
    let (_, d) = s
        .a(
            "POST",
            &path,
            Some(&json!({"report_id": "r3", "tokens": 10, "confidence": 0.1})),
        )
        .await;
    assert_eq!(
        (d["action"].as_str(), d["allocated_tokens"].as_u64()),
        (Some("ESCALATED"), Some(10_500))
    );
    let (_, d) = s
        .a(
            "POST",
            &path,
            Some(&json!({"report_id": "r4", "tokens": 10, "trigger": "verifier-rejection"})),
        )
        .await;
    assert_eq!(d["action"], "CONTINUE");
    assert!(
        d["escalation_refused"]
            .as_str()
            .unwrap()
            .contains("cooling down"),
        "{d}"
    );
    let (_, d) = s.a("POST", &path, Some(&report("r5", 100_000))).await;
    assert_eq!(d["action"], "EXHAUSTED");
    assert_eq!(d["accepted_tokens"], 16_000 - 7_520);
    assert_eq!(d["consumed_tokens"], 16_000);

    let (status, b) = s
        .a(
            "POST",
            &format!("/v1/budgets/{id}/complete"),
            Some(&json!({"outcome": "failure"})),
        )
        .await;
    assert_eq!(
        (status, b["status"].as_str(), b["outcome"].as_str()),
        (200, Some("completed"), Some("failure"))
    );
    let (status, _) = s
        .a(
            "POST",
            &format!("/v1/budgets/{id}/complete"),
            Some(&json!({"outcome": "failure"})),
        )
        .await;
    assert_eq!(status, 200, "completing twice the same way is idempotent");
    let (status, p) = s
        .a(
            "POST",
            &format!("/v1/budgets/{id}/complete"),
            Some(&json!({"outcome": "success"})),
        )
        .await;
    assert_eq!((status, p["field"].as_str()), (409, Some("outcome")));
    let (status, _) = s.a("POST", &path, Some(&report("r6", 1))).await;
    assert_eq!(status, 409, "a completed budget takes no reports");

    let (status, b) = s.a("GET", &format!("/v1/budgets/{id}"), None).await;
    assert_eq!((status, b["consumed_tokens"].as_u64()), (200, Some(16_000)));
    assert_eq!(b["escalations"].as_array().unwrap().len(), 2);
    s.stop().await;
}

#[tokio::test]
async fn the_same_report_counts_once_and_a_reused_id_is_refused() {
    let s = spawn_stack().await;
    let b = s
        .create("Fix the off-by-one error in the pagination helper", None)
        .await;
    let path = format!(
        "/v1/budgets/{}/consumption",
        b["budget_id"].as_str().unwrap()
    );
    let first = s.a("POST", &path, Some(&report("same", 700))).await;
    let second = s.a("POST", &path, Some(&report("same", 700))).await;
    assert_eq!(first, second);
    assert_eq!(second.1["consumed_tokens"], 700);
    let (status, p) = s.a("POST", &path, Some(&report("same", 701))).await;
    assert_eq!((status, p["field"].as_str()), (422, Some("report_id")));
    s.stop().await;
}

#[tokio::test]
async fn past_the_loop_limit_the_task_goes_to_a_human() {
    let s = spawn_stack().await;
    let b = s
        .create("Fix the flaky retry in the upload client", Some("standard"))
        .await;
    let path = format!(
        "/v1/budgets/{}/consumption",
        b["budget_id"].as_str().unwrap()
    );
    let mut actions = Vec::new();
    for i in 0..3 {
        let (_, d) = s
            .a(
                "POST",
                &path,
                Some(&json!({"report_id": format!("l{i}"), "tokens": 100, "loop_completed": true})),
            )
            .await;
        actions.push(d["action"].as_str().unwrap().to_owned());
    }
    assert_eq!(actions, ["CONTINUE", "CONTINUE", "ESCALATE_TO_HUMAN"]);
    let (status, _) = s.a("POST", &path, Some(&report("after", 1))).await;
    assert_eq!(status, 409);
    let (_, b) = s
        .a(
            "GET",
            &format!("/v1/budgets/{}", b["budget_id"].as_str().unwrap()),
            None,
        )
        .await;
    assert_eq!(b["status"], "handed_to_human");
    s.stop().await;
}

#[tokio::test]
async fn another_tenants_budget_is_indistinguishable_from_a_missing_one() {
    let s = spawn_stack().await;
    let b = s.create("Fix typo in README", None).await;
    let id = b["budget_id"].as_str().unwrap();
    let as_b = |method: &'static str, path: String, body: Option<Value>| {
        let s = &s;
        async move { s.send(method, &path, Some(&s.key_b), body.as_ref()).await }
    };
    let (status, theirs, _) = as_b("GET", format!("/v1/budgets/{id}"), None).await;
    let (_, missing, _) = as_b(
        "GET",
        "/v1/budgets/01900000-0000-7000-8000-000000000000".into(),
        None,
    )
    .await;
    assert_eq!(status, 404);
    assert_eq!(theirs, missing);
    let (status, _, _) = as_b(
        "POST",
        format!("/v1/budgets/{id}/consumption"),
        Some(report("x", 1)),
    )
    .await;
    assert_eq!(status, 404);
    let (status, _, _) = as_b(
        "POST",
        format!("/v1/budgets/{id}/complete"),
        Some(json!({"outcome": "success"})),
    )
    .await;
    assert_eq!(status, 404);
    let (_, b_after) = s.a("GET", &format!("/v1/budgets/{id}"), None).await;
    assert_eq!(
        (
            b_after["consumed_tokens"].as_u64(),
            b_after["status"].as_str()
        ),
        (Some(0), Some("active"))
    );
    s.stop().await;
}

#[tokio::test]
async fn configuration_is_validated_per_tenant_and_applies_to_new_budgets() {
    let s = spawn_stack().await;
    let (status, c) = s.a("GET", "/v1/config/budgets", None).await;
    assert_eq!(status, 200);
    assert_eq!(c["tiers"]["standard"]["base_tokens"], 2_000);
    assert_eq!(
        c["tiers"]["trivial"]["allowed_triggers"],
        json!(["low-confidence"])
    );

    let (status, p) = s
        .a(
            "PUT",
            "/v1/config/budgets",
            Some(&json!({"tiers": {"trivial": {"base_tokens": 5000}}})),
        )
        .await;
    assert_eq!(
        (status, p["field"].as_str()),
        (400, Some("tiers.trivial.base_tokens"))
    );
    let (status, p) = s
        .a("PUT", "/v1/config/budgets", Some(&json!({"max_loop": 3})))
        .await;
    assert_eq!(status, 400, "{p}");

    let (status, c) = s
        .a("PUT", "/v1/config/budgets", Some(&json!({"tiers": {"standard": {"base_tokens": 1500, "allowed_triggers": []}}, "max_loops": 5})))
        .await;
    assert_eq!(
        (
            status,
            c["tiers"]["standard"]["base_tokens"].as_u64(),
            c["max_loops"].as_u64()
        ),
        (200, Some(1_500), Some(5))
    );
    let b = s
        .create("Fix the off-by-one error in the pagination helper", None)
        .await;
    assert_eq!(b["allocated_tokens"], 1_500);
    let path = format!(
        "/v1/budgets/{}/consumption",
        b["budget_id"].as_str().unwrap()
    );
    let (_, d) = s
        .a(
            "POST",
            &path,
            Some(&json!({"report_id": "r", "tokens": 1, "trigger": "partial-success"})),
        )
        .await;
    assert!(
        d["escalation_refused"]
            .as_str()
            .unwrap()
            .contains("not allowed"),
        "{d}"
    );

    let (_, other, _) = s
        .send("GET", "/v1/config/budgets", Some(&s.key_b), None)
        .await;
    assert_eq!(
        other["tiers"]["standard"]["base_tokens"], 2_000,
        "tenant B keeps the defaults"
    );
    s.stop().await;
}

#[tokio::test]
async fn adaptive_allocation_learns_from_successful_budgets() {
    let s = spawn_stack().await;
    let (status, _) = s
        .a("PUT", "/v1/config/budgets", Some(&json!({"adaptive": {"enabled": true, "min_samples": 5, "quantile": 0.9, "headroom": 0.1}})))
        .await;
    assert_eq!(status, 200);
    for (i, used) in [400u64, 500, 600, 700, 800].into_iter().enumerate() {
        let b = s
            .create("Fix the off-by-one error in the pagination helper", None)
            .await;
        assert_eq!(b["allocated_tokens"], 2_000, "static until enough samples");
        let id = b["budget_id"].as_str().unwrap();
        s.a(
            "POST",
            &format!("/v1/budgets/{id}/consumption"),
            Some(&report(&format!("r{i}"), used)),
        )
        .await;
        let (status, _) = s
            .a(
                "POST",
                &format!("/v1/budgets/{id}/complete"),
                Some(&json!({"outcome": "success"})),
            )
            .await;
        assert_eq!(status, 200);
        // Completing again must not record the sample twice.
        s.a(
            "POST",
            &format!("/v1/budgets/{id}/complete"),
            Some(&json!({"outcome": "success"})),
        )
        .await;
    }
    let b = s
        .create("Fix the off-by-one error in the pagination helper", None)
        .await;
    // p90 of {400..800} by nearest rank is 800; +10% headroom.
    assert_eq!(b["allocated_tokens"], 880);
    let trivial = s.create("Fix typo in README", None).await;
    assert_eq!(
        trivial["allocated_tokens"], 500,
        "each tier learns separately"
    );

    // The flag's rollout share: tasks outside it keep the static base; the same task stays
    // on its side.
    let (status, config) = s
        .a(
            "PUT",
            "/v1/config/budgets",
            Some(&json!({"adaptive": {"enabled": true, "min_samples": 5, "percent": 40}})),
        )
        .await;
    assert_eq!(
        (status, config["adaptive"]["percent"].as_f64()),
        (200, Some(40.0)),
        "{config}"
    );
    let mut sides = std::collections::BTreeSet::new();
    for i in 0..20 {
        let body = json!({"task_id": format!("task-{i}"),
            "task": {"description": "Fix the off-by-one error in the pagination helper"}});
        let (status, first) = s.a("POST", "/v1/budgets", Some(&body)).await;
        assert_eq!(status, 201, "{first}");
        let (_, again) = s.a("POST", "/v1/budgets", Some(&body)).await;
        assert_eq!(first["allocated_tokens"], again["allocated_tokens"]);
        sides.insert(first["allocated_tokens"].as_u64().unwrap());
    }
    assert_eq!(
        sides,
        [880, 2_000].into(),
        "some tasks in the rollout, some outside"
    );
    let (status, bad) = s
        .a(
            "PUT",
            "/v1/config/budgets",
            Some(&json!({"adaptive": {"percent": 101}})),
        )
        .await;
    assert_eq!(
        (status, bad["field"].as_str()),
        (400, Some("adaptive.percent"))
    );
    s.stop().await;
}

/// A tenant's budgets are listed newest first, page by page, and only its own.
async fn budgets_are_listed(s: Stack) {
    let mut created = Vec::new();
    for task in ["Fix typo in README", "Add a flag", "Port the parser"] {
        created.push(s.create(task, None).await);
        // Distinct creation times, so newest-first is one order.
        tokio::time::sleep(std::time::Duration::from_millis(2)).await;
    }
    let (status, other, _) = s
        .send(
            "POST",
            "/v1/budgets",
            Some(&s.key_b),
            Some(&json!({"task_id": "t-b", "task": {"description": "B's task"}})),
        )
        .await;
    assert_eq!(status, 201, "{other}");

    let listed = s.pages("/v1/budgets", "budgets", &s.key_a, 2).await;
    let ids = |v: &[Value]| -> Vec<String> {
        v.iter()
            .map(|b| b["budget_id"].as_str().unwrap().to_owned())
            .collect()
    };
    let mut newest_first = ids(&created);
    newest_first.reverse();
    assert_eq!(ids(&listed), newest_first);
    // Each is shown as `GET /v1/budgets/{id}` shows it.
    for budget in &listed {
        let (_, read) = s
            .a(
                "GET",
                &format!("/v1/budgets/{}", budget["budget_id"].as_str().unwrap()),
                None,
            )
            .await;
        assert_eq!(budget, &read);
    }
    let theirs = s.pages("/v1/budgets", "budgets", &s.key_b, 100).await;
    assert_eq!(
        ids(&theirs),
        vec![other["budget_id"].as_str().unwrap().to_owned()]
    );
    let (status, bad) = s.a("GET", "/v1/budgets?cursor=not-a-cursor", None).await;
    assert_eq!(status, 400, "{bad}");
    s.stop().await;
}

#[tokio::test]
async fn budgets_are_listed_on_sqlite() {
    budgets_are_listed(spawn_stack().await).await;
}

#[tokio::test]
async fn budgets_are_listed_on_dynamodb() {
    budgets_are_listed(spawn_aws_stack().await).await;
}
