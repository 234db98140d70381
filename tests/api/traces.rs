//! OTLP trace ingest over the local stack: a tool-using conversation exported over two
//! requests (one gzipped) in OTLP/JSON, assembled and ingested at its explicit end into the
//! turn table; rejected spans counted in `partial_success`; failures as OTLP `Status`; a
//! conversation that names none ingested by its trace after its quiet period; another
//! tenant's conversation a 404. The OpenTelemetry Python SDK's own exporter is
//! `otel_sdk_exports_a_two_agent_conversation`.

use std::io::Write;

use serde_json::{Value, json};

use crate::gateway::{python, rows_where, turns};
use crate::helpers::{Stack, spawn_stack};

const TRACE: &str = "5b8efff798038103d269b633813fc60c";

fn attr(key: &str, value: &Value) -> Value {
    let v = match value {
        Value::String(s) => json!({"stringValue": s}),
        Value::Number(n) => json!({"intValue": n.to_string()}),
        Value::Bool(b) => json!({"boolValue": b}),
        other => json!({"stringValue": other.to_string()}),
    };
    json!({"key": key, "value": v})
}

fn span(trace: &str, id: &str, parent: Option<&str>, start_s: u64, attributes: &Value) -> Value {
    let attributes: Vec<Value> = attributes
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| attr(k, v))
        .collect();
    let ns = |s: u64| (1_795_000_000 + s) * 1_000_000_000;
    json!({
        "traceId": trace, "spanId": id, "parentSpanId": parent.unwrap_or(""),
        "name": "span", "kind": 1,
        "startTimeUnixNano": ns(start_s).to_string(), "endTimeUnixNano": ns(start_s + 1).to_string(),
        "attributes": attributes,
    })
}

fn export(spans: Vec<Value>) -> Value {
    json!({"resourceSpans": [{
        "resource": {"attributes": [attr("service.name", &json!("tutor-service"))]},
        "scopeSpans": [{"scope": {"name": "test"}, "spans": spans}],
    }]})
}

fn messages(list: &Value) -> Value {
    Value::String(list.to_string())
}

/// Posts `body` to `/v1/traces` as OTLP/JSON (gzipped when asked) with tenant A's key.
async fn post(s: &Stack, body: &Value, gzip: bool) -> (u16, Value) {
    let bytes = serde_json::to_vec(body).unwrap();
    let mut req = s
        .http
        .post(format!("{}/v1/traces", s.base))
        .bearer_auth(&s.key_a)
        .header("content-type", "application/json");
    let bytes = if gzip {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        gz.write_all(&bytes).unwrap();
        req = req.header("content-encoding", "gzip");
        gz.finish().unwrap()
    } else {
        bytes
    };
    let resp = req.body(bytes).send().await.unwrap();
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap())
}

#[tokio::test]
async fn an_otlp_conversation_becomes_a_trajectory_at_its_end() {
    let s = spawn_stack().await;
    let conversation = json!({"gen_ai.conversation.id": "conv-otlp-1"});
    let user = json!({"role": "user", "parts": [{"type": "text", "content": "Weather in Paris?"}]});
    let call = json!({"role": "assistant", "parts": [{"type": "tool_call", "id": "call_1",
        "name": "get_weather", "arguments": {"city": "Paris"}}]});
    let result = json!({"role": "tool", "parts": [{"type": "tool_call_response", "id": "call_1",
        "response": "rainy, 12 C"}]});
    let answer = json!({"role": "assistant", "parts": [{"type": "text", "content": "Rainy."}]});
    let mut agent = json!({"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "tutor"});
    agent["gen_ai.conversation.id"] = conversation["gen_ai.conversation.id"].clone();

    // The first export: the second model call and the tool run (out of order), a span with
    // an all-zero trace id, a model call whose messages do not parse, and a plain HTTP span.
    let first = export(vec![
        span(
            TRACE,
            "0000000000000004",
            Some("0000000000000001"),
            30,
            &json!({
                "gen_ai.operation.name": "chat", "gen_ai.response.model": "gpt-4o",
                "gen_ai.input.messages": messages(&json!([user, call, result])),
                "gen_ai.output.messages": messages(&json!([answer])),
                "gen_ai.usage.input_tokens": 40, "gen_ai.usage.output_tokens": 3,
            }),
        ),
        span(
            TRACE,
            "0000000000000003",
            Some("0000000000000001"),
            20,
            &json!({
                "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_weather",
                "gen_ai.tool.call.id": "call_1", "gen_ai.tool.call.result": "rainy, 12 C",
            }),
        ),
        span(
            "00000000000000000000000000000000",
            "00000000000000aa",
            None,
            5,
            &json!({
                "gen_ai.operation.name": "chat",
            }),
        ),
        span(
            TRACE,
            "00000000000000bb",
            Some("0000000000000001"),
            6,
            &json!({
                "gen_ai.operation.name": "chat", "gen_ai.input.messages": "[{\"role\": ",
            }),
        ),
        span(
            TRACE,
            "00000000000000cc",
            None,
            7,
            &json!({"http.request.method": "GET"}),
        ),
    ]);
    let (status, answer_1) = post(&s, &first, false).await;
    assert_eq!(status, 200, "{answer_1}");
    assert_eq!(
        answer_1["partialSuccess"]["rejectedSpans"], "2",
        "{answer_1}"
    );
    let why = answer_1["partialSuccess"]["errorMessage"].as_str().unwrap();
    assert!(
        why.contains("all zeros") && why.contains("gen_ai.input.messages"),
        "{why}"
    );

    // The second, gzipped: the agent's root span and the first model call; then the same
    // export again (a retry): its spans count once.
    let second = export(vec![
        span(TRACE, "0000000000000001", None, 0, &agent),
        span(
            TRACE,
            "0000000000000002",
            Some("0000000000000001"),
            10,
            &json!({
                "gen_ai.operation.name": "chat",
                "gen_ai.input.messages": messages(&json!([user])),
                "gen_ai.output.messages": messages(&json!([call])),
            }),
        ),
    ]);
    for _ in 0..2 {
        let (status, answer_2) = post(&s, &second, true).await;
        assert_eq!((status, &answer_2), (200, &json!({})));
    }

    // Another tenant cannot end it.
    let end = "/v1/traces/conversations/conv-otlp-1/end";
    let (status, _, _) = s
        .send("POST", end, Some(&s.key_b), Some(&json!({"success": true})))
        .await;
    assert_eq!(status, 404);
    let (status, bad) = s
        .a("POST", end, Some(&json!({"choices": [{"success": true}]})))
        .await;
    assert_eq!(
        (status, bad["field"].as_str()),
        (400, Some("choices")),
        "{bad}"
    );
    let (status, ended) = s
        .a("POST", end, Some(&json!({"success": true, "reward": 1.0})))
        .await;
    assert_eq!(status, 202, "{ended}");
    let ids = ended["trajectory_ids"].as_array().unwrap();
    assert_eq!(ids.len(), 1, "{ended}");
    let rows = turns(&s, ids[0].as_str().unwrap()).await;
    let roles: Vec<&str> = rows.iter().map(|r| r.role.as_str()).collect();
    assert_eq!(roles, ["user", "assistant", "tool", "assistant"]);
    let summary = crate::trajectories::indexed(&s, ids[0].as_str().unwrap()).await;
    assert_eq!(
        (&summary["source"], &summary["conversation_id"]),
        (&json!("traces"), &json!("conv-otlp-1"))
    );
    assert_eq!(summary["turns"][1]["tool_calls"][0]["name"], "get_weather");
    assert!(
        rows.iter()
            .all(|r| r.agent_id == "tutor" && r.conversation_id == "conv-otlp-1")
    );
    assert_eq!(rows[0].content, "Weather in Paris?");
    assert_eq!(rows[1].tool_calls[0].id.as_deref(), Some("call_1"));
    assert_eq!(rows[1].tool_calls[0].name, "get_weather");
    assert_eq!(rows[1].tool_calls[0].arguments, r#"{"city":"Paris"}"#);
    assert_eq!(
        (
            rows[2].tool_call_id.as_deref(),
            rows[2].tool_result.as_deref()
        ),
        (Some("call_1"), Some("rainy, 12 C"))
    );
    assert_eq!(rows[3].content, "Rainy.");
    assert_eq!(
        (rows[3].input_tokens, rows[3].output_tokens),
        (Some(40), Some(3))
    );
    assert_eq!(rows[3].episode_success, Some(true));
    // Ended, its spans are gone: ending it again finds none.
    let (status, _) = s.a("POST", end, None).await;
    assert_eq!(status, 404);
    s.stop().await;
}

#[tokio::test]
async fn failures_answer_as_otlp_says() {
    let s = spawn_stack().await;
    let raw = |content_type: &str, body: &'static [u8]| {
        s.http
            .post(format!("{}/v1/traces", s.base))
            .bearer_auth(&s.key_a)
            .header("content-type", content_type)
            .body(body)
            .send()
    };
    // A protobuf body that does not decode: a google.rpc.Status in protobuf, code 3.
    let resp = raw("application/x-protobuf", b"\x0a\xff\xff\xff")
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 400);
    assert_eq!(resp.headers()["content-type"], "application/x-protobuf");
    let body = resp.bytes().await.unwrap();
    assert_eq!(&body[..3], b"\x08\x03\x12", "{body:?}");
    let resp = raw("application/json", b"{\"resourceSpans\": 7}")
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 400);
    let status: Value = resp.json().await.unwrap();
    assert_eq!(status["code"], 3, "{status}");
    let resp = raw("text/plain", b"hello").await.unwrap();
    assert_eq!(resp.status().as_u16(), 415);
    let gzip_bomb = {
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        gz.write_all(&vec![b' '; agentrl_traces::MAX_DECODED_BYTES + 1])
            .unwrap();
        gz.finish().unwrap()
    };
    let resp = s
        .http
        .post(format!("{}/v1/traces", s.base))
        .bearer_auth(&s.key_a)
        .header("content-type", "application/json")
        .header("content-encoding", "gzip")
        .body(gzip_bomb)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 413);
    let status: Value = resp.json().await.unwrap();
    assert_eq!(status["code"], 8, "{status}");
    s.stop().await;
}

/// A conversation that names none is its trace, ingested once quiet after its root ended.
#[tokio::test]
async fn a_quiet_trace_is_ingested_by_the_sweep() {
    let s = spawn_stack().await;
    let (status, config) = s
        .a(
            "PUT",
            "/v1/config/traces",
            Some(&json!({"quiet_seconds": 1, "orphan_seconds": 60})),
        )
        .await;
    assert_eq!(status, 200, "{config}");
    let trace = "6b8efff798038103d269b633813fc60d";
    let user = json!({"role": "user", "parts": [{"type": "text", "content": "2+2?"}]});
    let answer = json!({"role": "assistant", "parts": [{"type": "text", "content": "4"}]});
    let body = export(vec![span(
        trace,
        "0000000000000001",
        None,
        0,
        &json!({
            "gen_ai.operation.name": "chat", "gen_ai.agent.id": "calc-1",
            "gen_ai.input.messages": messages(&json!([user])),
            "gen_ai.output.messages": messages(&json!([answer])),
        }),
    )]);
    let (status, _) = post(&s, &body, false).await;
    assert_eq!(status, 200);
    // The sweep runs every 5 s; the ingest worker then writes the rows.
    let rows = rows_where(&s, 300, &format!("conversation {trace}"), |r| {
        r.conversation_id == trace
    })
    .await;
    assert_eq!(rows.len(), 2);
    assert_eq!(
        (rows[0].agent_id.as_str(), rows[1].content.as_str()),
        ("calc-1", "4")
    );
    s.stop().await;
}

/// The OpenTelemetry Python SDK's OTLP/HTTP exporter (protobuf, and JSON) sends a
/// two-agent, tool-using conversation; it lands as one trajectory per agent.
#[tokio::test]
async fn otel_sdk_exports_a_two_agent_conversation() {
    let s = spawn_stack().await;
    let sent = python(
        "otel_export.py",
        vec![s.base.clone(), s.key_a.clone(), "conv-sdk-1".into()],
    )
    .await;
    assert_eq!(sent["exported"], true, "{sent}");
    let (status, ended) = s
        .a(
            "POST",
            "/v1/traces/conversations/conv-sdk-1/end",
            Some(&json!({"success": true})),
        )
        .await;
    assert_eq!(status, 202, "{ended}");
    let ids = ended["trajectory_ids"].as_array().unwrap();
    assert_eq!(ids.len(), 2, "{ended}");
    let mut agents = Vec::new();
    for id in ids {
        let rows = turns(&s, id.as_str().unwrap()).await;
        agents.push(rows[0].agent_id.clone());
        if rows[0].agent_id == "researcher" {
            let roles: Vec<&str> = rows.iter().map(|r| r.role.as_str()).collect();
            assert_eq!(roles, ["system", "user", "assistant", "tool", "assistant"]);
            assert_eq!(rows[2].tool_calls[0].name, "search");
            assert_eq!(
                (rows[2].input_tokens, rows[2].output_tokens),
                (Some(21), Some(9))
            );
            assert_eq!(
                rows[3].tool_result.as_deref(),
                Some("Paris is the capital.")
            );
        }
    }
    agents.sort();
    assert_eq!(agents, ["researcher", "writer"]);
    // The all-zero trace id span was counted in partial_success, as the script saw.
    assert_eq!(sent["rejected"], 1, "{sent}");
    s.stop().await;
}
