//! Shared plumbing: health, OpenAPI, authentication, problem+json for every kind of bad input.

use serde_json::{Value, json};

use crate::helpers::spawn_stack;

#[tokio::test]
async fn health_and_openapi_are_public_and_openapi_lists_every_route() {
    let s = spawn_stack().await;
    let (status, body, _) = s.send("GET", "/health", None, None).await;
    assert_eq!((status, body), (200, json!({"status": "ok"})));
    let (status, doc, _) = s.send("GET", "/openapi.json", None, None).await;
    assert_eq!(status, 200);
    assert!(doc["openapi"].as_str().unwrap().starts_with("3."));
    let paths = doc["paths"].as_object().unwrap();
    for (path, method) in [
        ("/health", "get"),
        ("/openapi.json", "get"),
        ("/v1/budgets", "post"),
        ("/v1/budgets/{id}", "get"),
        ("/v1/budgets/{id}/consumption", "post"),
        ("/v1/budgets/{id}/complete", "post"),
        ("/v1/config/budgets", "get"),
        ("/v1/config/budgets", "put"),
    ] {
        assert!(
            paths.get(path).and_then(|p| p.get(method)).is_some(),
            "{method} {path} missing"
        );
    }
    assert!(doc["components"]["schemas"]["Problem"].is_object());
    let create = &doc["paths"]["/v1/budgets"]["post"]["parameters"];
    assert!(
        create
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["name"] == "Idempotency-Key" && p["in"] == "header"),
        "{create}"
    );
    s.stop().await;
}

/// Every answer the shared layers can give is declared where they apply: 401 on every
/// protected operation; 400, 413 and 415 on every operation with a body; the Idempotency-Key
/// header, 409 and 422 (the idempotency layer) on every POST, PUT and PATCH; 400 wherever a
/// parameter can be refused.
#[tokio::test]
async fn the_document_declares_the_answers_of_the_shared_layers() {
    let s = spawn_stack().await;
    let (_, doc, _) = s.send("GET", "/openapi.json", None, None).await;
    let mut checked = 0;
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            let declared = |status: &str| {
                let answer = &op["responses"][status];
                answer.is_object()
                    && (answer["content"]["application/problem+json"].is_object()
                        || answer["$ref"].is_string())
            };
            let public = path == "/health" || path == "/openapi.json";
            let mut expected = Vec::new();
            if !public {
                expected.push("401");
            }
            if op["requestBody"].is_object() {
                expected.extend(["400", "413", "415"]);
            }
            if ["post", "put", "patch"].contains(&method.as_str()) {
                expected.extend(["409", "422"]);
                let header = op["parameters"].as_array().is_some_and(|p| {
                    p.iter()
                        .any(|p| p["name"] == "Idempotency-Key" && p["in"] == "header")
                });
                assert!(header, "{method} {path} does not declare Idempotency-Key");
            }
            if op["parameters"].as_array().is_some_and(|p| !p.is_empty()) {
                expected.push("400");
            }
            for status in expected {
                assert!(
                    declared(status),
                    "{method} {path} does not declare {status}"
                );
            }
            checked += 1;
        }
    }
    assert!(checked > 50, "{checked} operations");
    s.stop().await;
}

#[tokio::test]
async fn refused_query_strings_and_paths_are_problems_too() {
    let s = spawn_stack().await;
    for path in [
        "/v1/training-examples?limit=1&limit=2",
        "/v1/attributions?limit=abc",
    ] {
        let (status, body, headers) = s.send("GET", path, Some(&s.key_a), None).await;
        assert_eq!(status, 400, "{path}: {body}");
        assert_eq!(
            headers["content-type"], "application/problem+json",
            "{path}"
        );
        assert_eq!(body["status"], 400, "{path}: {body}");
        assert!(
            body["detail"].as_str().is_some_and(|d| !d.is_empty()),
            "{body}"
        );
    }
    s.stop().await;
}

#[tokio::test]
async fn missing_or_wrong_credentials_are_401_problems() {
    let s = spawn_stack().await;
    for key in [None, Some("not-a-key"), Some("")] {
        let (status, body, headers) = s.send("GET", "/v1/config/budgets", key, None).await;
        assert_eq!(status, 401, "{key:?}");
        assert_eq!(body["status"], 401);
        assert_eq!(headers["content-type"], "application/problem+json");
        assert_eq!(headers["www-authenticate"], "Bearer");
    }
    // A tenant named in the body or a header is ignored: only the key decides.
    let resp = s
        .http
        .get(format!("{}/v1/config/budgets", s.base))
        .header("x-tenant-id", "tenant-a")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 401);
    s.stop().await;
}

#[tokio::test]
async fn bad_input_is_a_precise_4xx_never_a_500() {
    let s = spawn_stack().await;
    let raw = |body: &'static str, content_type: &'static str| {
        s.http
            .post(format!("{}/v1/budgets", s.base))
            .bearer_auth(&s.key_a)
            .header("content-type", content_type)
            .body(body)
            .send()
    };
    let resp = raw("{\"task_id\": ", "application/json").await.unwrap();
    assert_eq!(resp.status(), 400);
    assert_eq!(resp.headers()["content-type"], "application/problem+json");
    let p: Value = resp.json().await.unwrap();
    assert!(
        p["detail"].as_str().unwrap().contains("malformed JSON"),
        "{p}"
    );
    assert_eq!(p["field"], "body", "truncated JSON names the body: {p}");

    // A missing required field is named, at the top of the body as below it.
    for (path, body, field) in [
        ("/v1/gates/triage/check", json!({}), "artifact"),
        ("/v1/evaluations", json!({}), "execution_id"),
        (
            "/v1/budgets/b-1/consumption",
            json!({"tokens": 5}),
            "report_id",
        ),
        (
            "/v1/budgets",
            json!({"task_id": "t", "task": {}}),
            "task.description",
        ),
    ] {
        let (status, p) = s.a("POST", path, Some(&body)).await;
        assert_eq!((status, &p["field"]), (400, &json!(field)), "{path}: {p}");
    }

    let resp = raw("{}", "text/plain").await.unwrap();
    assert_eq!(resp.status(), 415);

    let cases = [
        (
            json!({"task_id": 5, "task": {"description": "x"}}),
            "task_id",
        ),
        (
            json!({"task_id": "t", "task": {"description": "x"}, "complexity": "huge"}),
            "complexity",
        ),
        (
            json!({"task_id": "t", "task": {"description": "x", "owner": "me"}}),
            "task.owner",
        ),
        (
            json!({"task_id": "t", "task": {"description": ""}}),
            "task.description",
        ),
        (
            json!({"task_id": "", "task": {"description": "x"}}),
            "task_id",
        ),
        (
            json!({"task_id": "t", "tenant": "tenant-b", "task": {"description": "x"}}),
            "",
        ),
    ];
    for (body, field) in cases {
        let (status, p) = s.a("POST", "/v1/budgets", Some(&body)).await;
        assert_eq!(status, 400, "{body} → {p}");
        if !field.is_empty() {
            assert_eq!(p["field"], field, "{body} → {p}");
        }
        assert!(!p["detail"].as_str().unwrap().is_empty());
    }

    // serde would read a struct from an array of its fields: bodies documented as objects
    // must be objects.
    for body in [json!([]), json!([true]), json!("trusted")] {
        let (status, p) = s
            .a("PUT", "/v1/agents/coder-1/learning/settings", Some(&body))
            .await;
        assert_eq!(status, 400, "{body} → {p}");
        assert_eq!(
            p["detail"], "the body must be a JSON object",
            "{body} → {p}"
        );
    }

    let huge = "x".repeat(2 * 1024 * 1024);
    let resp = s
        .http
        .post(format!("{}/v1/budgets", s.base))
        .bearer_auth(&s.key_a)
        .json(&json!({"task_id": "t", "task": {"description": huge}}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 413);

    let (status, _) = s.a("GET", "/v1/nothing-here", None).await;
    assert_eq!(status, 404);
    let (status, p) = s.a("DELETE", "/v1/config/budgets", None).await;
    assert_eq!(status, 405, "{p}");
    s.stop().await;
}

/// Operation ids are unique (OpenAPI requires it; client generators name methods after them),
/// and every creating operation links its id to the routes that take it, each link naming an
/// operation of the document and a parameter that operation has.
#[tokio::test]
async fn operation_ids_are_unique_and_creations_link_to_their_routes() {
    let s = spawn_stack().await;
    let (_, doc, _) = s.send("GET", "/openapi.json", None, None).await;
    let mut ids = std::collections::BTreeSet::new();
    let mut links = Vec::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, op) in item.as_object().unwrap() {
            let id = op["operationId"].as_str().unwrap().to_owned();
            assert!(ids.insert(id.clone()), "{id} twice ({method} {path})");
            for (status, answer) in op["responses"].as_object().unwrap() {
                for link in answer["links"]
                    .as_object()
                    .into_iter()
                    .flat_map(|l| l.values())
                {
                    links.push((format!("{method} {path} {status}"), link.clone()));
                }
            }
        }
    }
    for (from, link) in &links {
        let pointer = link["operationRef"].as_str().unwrap();
        let target = doc
            .pointer(pointer.trim_start_matches('#'))
            .unwrap_or_else(|| panic!("{from}: {pointer} is not in the document"));
        for param in link["parameters"]
            .as_object()
            .into_iter()
            .flat_map(|p| p.keys())
        {
            let declared = target["parameters"]
                .as_array()
                .unwrap()
                .iter()
                .any(|p| p["name"] == *param && p["in"] == "path");
            assert!(declared, "{from}: {pointer} has no path parameter {param}");
        }
        // A body link names properties of the target's request body.
        for field in link["requestBody"]
            .as_object()
            .into_iter()
            .flat_map(|b| b.keys())
        {
            let body = &target["requestBody"]["content"]["application/json"]["schema"];
            let schema = body["$ref"]
                .as_str()
                .map_or(body, |r| doc.pointer(r.trim_start_matches('#')).unwrap());
            assert!(
                schema["properties"].get(field).is_some(),
                "{from}: the body of {pointer} has no {field}"
            );
        }
    }
    let into_bodies = links
        .iter()
        .filter(|(_, l)| l["requestBody"].is_object())
        .count();
    assert_eq!(
        into_bodies, 2,
        "execution → evaluation, agent → training run"
    );
    let linked = |from: &str| links.iter().filter(|(f, _)| f == from).count();
    for (from, at_least) in [
        ("post /v1/budgets 201", 3),
        ("post /v1/executions 201", 4),
        ("post /v1/attributions 201", 1),
        ("post /v1/attributions/sessions 201", 2),
        ("post /v1/agents 201", 6),
        ("post /v1/evaluations 202", 1),
        ("post /v1/training-runs 201", 3),
    ] {
        assert!(linked(from) >= at_least, "{from}: {} links", linked(from));
    }
    s.stop().await;
}

/// Trajectories and learning events name the version of their shape: the current one, 0 and
/// absent (the shape before versions) are read, a newer one is a 400 naming `schema_version`,
/// in the document too.
#[tokio::test]
async fn bodies_are_read_by_their_schema_version() {
    let s = spawn_stack().await;
    let trajectory = |id: &str| {
        json!({"trajectory_id": id, "agent_id": "coder-7", "conversation_id": id,
               "turns": [{"role": "user", "content": "2 + 2?"}, {"role": "assistant", "content": "4"}]})
    };
    let event = |id: &str| {
        json!({"event_id": id, "type": "feedback.created", "agent_id": "coder-7",
               "user_id": "alice", "value": 0.5})
    };
    for version in [None, Some(0), Some(1), Some(2)] {
        let suffix = version.map_or("absent".to_owned(), |v| v.to_string());
        let mut t = trajectory(&format!("t-{suffix}"));
        let mut e = event(&format!("e-{suffix}"));
        if let Some(v) = version {
            t["schema_version"] = v.into();
            e["schema_version"] = v.into();
        }
        let answers = [
            (
                s.a("POST", "/v1/trajectories", Some(&t)).await,
                "schema_version",
            ),
            (s.a("POST", "/v1/events", Some(&e)).await, "schema_version"),
            (
                s.a("POST", "/v1/events", Some(&json!([e]))).await,
                "[0].schema_version",
            ),
        ];
        for ((status, body), field) in answers {
            if version == Some(2) {
                assert_eq!(status, 400, "{body}");
                assert_eq!(body["field"], field, "{body}");
                assert!(
                    body["detail"].as_str().unwrap().contains(
                        "schema_version 2 is not supported: this reader takes versions 0 to 1"
                    ),
                    "{body}"
                );
            } else {
                assert_eq!(status, 202, "version {version:?}: {body}");
            }
        }
    }
    let (_, doc) = s.a("GET", "/openapi.json", None).await;
    let declared = &doc["components"]["schemas"]["SchemaVersion"];
    assert_eq!(
        (&declared["minimum"], &declared["maximum"]),
        (&json!(0), &json!(1)),
        "{declared}"
    );
}
