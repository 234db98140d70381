//! The web console's side of the API, on SQLite and on DynamoDB (moto): an API key exchanged
//! for a session cookie with its flags, the cookie accepted like the key but only with the
//! session's CSRF token on calls that change state, tenant isolation through the cookie,
//! sign-out; the console's files served under their Content Security Policy; a run's curves
//! (`/v1/training-runs/{id}/metrics`), whole and sampled.

use agentrl_store::ports::Query;
use reqwest::header::{HeaderMap, SET_COOKIE};
use serde_json::{Value, json};

use crate::helpers::{Stack, spawn_aws_stack, spawn_stack};

/// One request with optional cookie, CSRF token and extra header, without a bearer key.
async fn call(
    s: &Stack,
    method: &str,
    path: &str,
    cookie: Option<&str>,
    csrf: Option<&str>,
    body: Option<&Value>,
) -> (u16, Value, HeaderMap) {
    let mut req = s
        .http
        .request(method.parse().unwrap(), format!("{}{path}", s.base));
    if let Some(c) = cookie {
        req = req.header("cookie", format!("agentrl_session={c}"));
    }
    if let Some(t) = csrf {
        req = req.header("x-csrf-token", t);
    }
    if let Some(b) = body {
        req = req.json(b);
    }
    let resp = req.send().await.unwrap();
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let text = resp.text().await.unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
        headers,
    )
}

/// Signs in with `key`: the cookie's value, its `Set-Cookie` header and the session.
async fn sign_in(s: &Stack, key: &str) -> (String, String, Value) {
    let (status, session, headers) = call(
        s,
        "POST",
        "/v1/console/session",
        None,
        None,
        Some(&json!({"api_key": key})),
    )
    .await;
    assert_eq!(status, 201, "{session}");
    let set = headers[SET_COOKIE].to_str().unwrap().to_owned();
    let value = set
        .strip_prefix("agentrl_session=")
        .and_then(|rest| rest.split(';').next())
        .unwrap()
        .to_owned();
    (value, set, session)
}

async fn sessions_work(s: Stack) {
    // Refusals: a wrong key, a body with an unknown field.
    let (status, problem, _) = call(
        &s,
        "POST",
        "/v1/console/session",
        None,
        None,
        Some(&json!({"api_key": "not-a-key-0123456789"})),
    )
    .await;
    assert_eq!(status, 401, "{problem}");
    let (status, problem, _) = call(
        &s,
        "POST",
        "/v1/console/session",
        None,
        None,
        Some(&json!({"api_key": s.key_a, "tenant": "tenant-b"})),
    )
    .await;
    assert_eq!(status, 400, "{problem}");

    let (cookie, set, session) = sign_in(&s, &s.key_a).await;
    assert_eq!(session["tenant"], "tenant-a");
    let csrf = session["csrf_token"].as_str().unwrap().to_owned();
    assert_eq!(csrf.len(), 64);
    for flag in [
        "; HttpOnly",
        "; SameSite=Strict",
        "; Path=/",
        "; Max-Age=43200",
    ] {
        assert!(set.contains(flag), "{flag} in {set}");
    }
    assert!(!set.contains("Secure"), "plain HTTP: {set}");
    // Behind a TLS proxy the cookie is Secure.
    let resp = s
        .http
        .post(format!("{}/v1/console/session", s.base))
        .header("x-forwarded-proto", "https")
        .json(&json!({"api_key": s.key_a}))
        .send()
        .await
        .unwrap();
    assert!(
        resp.headers()[SET_COOKIE]
            .to_str()
            .unwrap()
            .ends_with("; Secure")
    );

    // Only a digest of the cookie is stored.
    let stored = s
        .stores
        .table
        .query(&Query::partition("#system#console-session"))
        .await
        .unwrap();
    assert!(!stored.items.is_empty());
    assert!(!format!("{:?}", stored.items).contains(&cookie));

    // The cookie reads like the key; a state change needs the CSRF token.
    let budget = json!({"task_id": "t-1", "task": {"description": "fix the build"}});
    let (status, refused, _) = call(
        &s,
        "POST",
        "/v1/budgets",
        Some(&cookie),
        None,
        Some(&budget),
    )
    .await;
    assert_eq!(status, 403, "{refused}");
    assert!(refused["detail"].as_str().unwrap().contains("X-CSRF-Token"));
    let (status, ..) = call(
        &s,
        "POST",
        "/v1/budgets",
        Some(&cookie),
        Some(&"0".repeat(64)),
        Some(&budget),
    )
    .await;
    assert_eq!(status, 403, "a wrong token");
    let (status, created, _) = call(
        &s,
        "POST",
        "/v1/budgets",
        Some(&cookie),
        Some(&csrf),
        Some(&budget),
    )
    .await;
    assert_eq!(status, 201, "{created}");
    let path = format!("/v1/budgets/{}", created["budget_id"].as_str().unwrap());
    assert_eq!(
        call(&s, "GET", &path, Some(&cookie), None, None).await.0,
        200
    );
    assert_eq!(
        s.a("GET", &path, None).await.0,
        200,
        "made for tenant-a, as the key's"
    );

    // Tenant B's session does not see it: a 404, as with B's key.
    let (cookie_b, _, session_b) = sign_in(&s, &s.key_b).await;
    assert_eq!(session_b["tenant"], "tenant-b");
    assert_eq!(
        call(&s, "GET", &path, Some(&cookie_b), None, None).await.0,
        404
    );

    // The session again, after a reload: the same token.
    let (status, again, _) =
        call(&s, "GET", "/v1/console/session", Some(&cookie), None, None).await;
    assert_eq!((status, &again["csrf_token"]), (200, &json!(csrf)));
    let (status, ..) = call(&s, "GET", "/v1/console/session", None, None, None).await;
    assert_eq!(status, 401);

    // Signing out needs the token too, ends the session and clears the cookie.
    let (status, ..) = call(
        &s,
        "DELETE",
        "/v1/console/session",
        Some(&cookie),
        None,
        None,
    )
    .await;
    assert_eq!(status, 403);
    let (status, _, headers) = call(
        &s,
        "DELETE",
        "/v1/console/session",
        Some(&cookie),
        Some(&csrf),
        None,
    )
    .await;
    assert_eq!(status, 204);
    assert!(
        headers[SET_COOKIE]
            .to_str()
            .unwrap()
            .starts_with("agentrl_session=; Path=/; Max-Age=0")
    );
    assert_eq!(
        call(&s, "GET", &path, Some(&cookie), None, None).await.0,
        401
    );
    assert_eq!(
        call(&s, "GET", &path, Some("f00d"), None, None).await.0,
        401,
        "a made-up cookie"
    );
    s.stop().await;
}

#[tokio::test]
async fn console_sessions_on_sqlite() {
    sessions_work(spawn_stack().await).await;
}

#[tokio::test]
async fn console_sessions_on_dynamodb() {
    sessions_work(spawn_aws_stack().await).await;
}

#[tokio::test]
async fn the_console_is_served_under_its_policy() {
    let s = spawn_stack().await;
    let resp = s
        .http
        .get(format!("{}/console/runs/run-1", s.base))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let csp = resp.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(csp.contains("script-src 'self'") && !csp.contains("unsafe-inline"));
    assert!(resp.text().await.unwrap().contains("<html"));
    s.stop().await;
}

#[tokio::test]
async fn a_runs_curves_are_every_line_or_an_even_sample() {
    let s = spawn_stack().await;
    crate::training::fixtures(&s, "tenant-a", "2026-11-24-abc").await;
    let agent = json!({"agent_id": "coder-7", "name": "Coder", "type": "coding",
        "model": {"provider": "self-hosted", "name": "qwen-tiny"}, "base_model": "tiny"});
    assert_eq!(s.a("POST", "/v1/agents", Some(&agent)).await.0, 201);
    let (status, run) = s
        .a(
            "POST",
            "/v1/training-runs",
            Some(&json!({"agent_id": "coder-7", "dataset_id": "2026-11-24-abc"})),
        )
        .await;
    assert_eq!(status, 201, "{run}");
    let id = run["run_id"].as_str().unwrap();
    let output = run["artifacts"]["output"].as_str().unwrap();

    // 30 SFT steps, 60 GRPO steps with an evaluation every 20, and a torn last line.
    let mut lines: Vec<Value> = (1..=30)
        .map(|step| json!({"step": step, "phase": "sft", "loss": 1.0 / f64::from(step)}))
        .collect();
    for step in 1..=60 {
        lines.push(json!({"step": step, "phase": "grpo", "loss": 0.5, "reward_mean": f64::from(step) / 60.0}));
        if step % 20 == 0 {
            lines.push(json!({"step": step, "phase": "grpo", "eval_success": 0.5}));
        }
    }
    let mut file: String = lines.iter().map(|l| format!("{l}\n")).collect();
    file.push_str("{\"step\": 61, \"pha");
    s.stores
        .objects
        .put(&format!("{output}metrics.jsonl"), file.into())
        .await
        .unwrap();

    let path = format!("/v1/training-runs/{id}/metrics");
    let (status, all) = s.a("GET", &path, None).await;
    assert_eq!(status, 200, "{all}");
    assert_eq!(
        (all["total"].as_u64(), &all["downsampled"]),
        (Some(93), &json!(false))
    );
    let points = all["points"].as_array().unwrap();
    for (i, (point, line)) in points.iter().zip(&lines).enumerate() {
        // As the file has it, digit for digit (read back by the same parser as the answer).
        let mut expected: Value = serde_json::from_str(&line.to_string()).unwrap();
        expected["line"] = json!(i);
        assert_eq!(point, &expected);
    }

    let (status, sample) = s.a("GET", &format!("{path}?max_points=20"), None).await;
    assert_eq!(status, 200, "{sample}");
    let points = sample["points"].as_array().unwrap();
    assert_eq!((points.len(), &sample["downsampled"]), (20, &json!(true)));
    assert_eq!(points[0]["line"], 0);
    assert_eq!(points[19]["line"], 92, "the last step");
    let evals = points.iter().filter(|p| p.get("eval_success").is_some());
    assert_eq!(evals.count(), 3, "every evaluation (3 ≤ 20/4)");

    for bad in ["1", "10001", "x"] {
        let (status, problem) = s.a("GET", &format!("{path}?max_points={bad}"), None).await;
        assert_eq!(status, 400, "{bad}: {problem}");
        assert!(problem.to_string().contains("max_points"), "{problem}");
    }
    let (status, ..) = s.send("GET", &path, Some(&s.key_b), None).await;
    assert_eq!(status, 404, "another tenant's run");
    s.stop().await;
}
