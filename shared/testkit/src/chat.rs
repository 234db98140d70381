//! A scripted OpenAI-compatible chat-completions server on 127.0.0.1: the stand-in for a
//! model provider in tests. Each request is answered by the test's script, which sees the
//! call's index and body; every request is kept for the test to inspect.

use std::{
    future::IntoFuture,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use axum::{
    Json, Router,
    extract::State,
    http::{HeaderMap, StatusCode},
    response::{IntoResponse, Response},
    routing::post,
};
use serde_json::{Value, json};

/// How the server answers one request.
#[derive(Debug, Clone)]
pub enum Scripted {
    /// 200 with a completion whose message content is `content` and the given usage.
    Reply {
        /// The assistant message's text.
        content: String,
        /// Reported prompt tokens.
        prompt_tokens: u64,
        /// Reported completion tokens.
        completion_tokens: u64,
    },
    /// An error status, with a `Retry-After` header when given.
    Status {
        /// The status code.
        status: u16,
        /// The `Retry-After` value.
        retry_after: Option<String>,
    },
    /// No answer for this long (past the client's timeout), then a 200.
    Hang(Duration),
    /// This answer, after this long (a slow provider).
    Delayed(Duration, Box<Scripted>),
}

impl Scripted {
    /// A valid judgment reply `{score, reasoning, confidence}` with 100/20 tokens.
    pub fn judgment(score: f64, confidence: f64, reasoning: &str) -> Self {
        Self::Reply {
            content: json!({"score": score, "reasoning": reasoning, "confidence": confidence})
                .to_string(),
            prompt_tokens: 100,
            completion_tokens: 20,
        }
    }

    /// A reply whose content is `text` as is (e.g. not JSON), with 100/20 tokens.
    pub fn text(text: &str) -> Self {
        Self::Reply {
            content: text.to_owned(),
            prompt_tokens: 100,
            completion_tokens: 20,
        }
    }
}

/// One request the server received.
#[derive(Debug, Clone)]
pub struct Received {
    /// When it arrived.
    pub at: Instant,
    /// Its JSON body.
    pub body: Value,
    /// Its `Authorization` header, if any.
    pub authorization: Option<String>,
}

type Script = dyn Fn(usize, &Value) -> Scripted + Send + Sync;

#[derive(Clone)]
struct Shared {
    script: Arc<Script>,
    received: Arc<Mutex<Vec<Received>>>,
}

/// A running scripted server; stops when dropped.
pub struct ChatServer {
    /// `http://127.0.0.1:PORT/v1`.
    pub base_url: String,
    received: Arc<Mutex<Vec<Received>>>,
    task: tokio::task::JoinHandle<()>,
}

impl ChatServer {
    /// Starts a server answering request `i` (from 0) with `script(i, body)`.
    ///
    /// # Panics
    /// When no loopback port can be bound.
    pub async fn start(script: impl Fn(usize, &Value) -> Scripted + Send + Sync + 'static) -> Self {
        let shared = Shared {
            script: Arc::new(script),
            received: Arc::default(),
        };
        let received = shared.received.clone();
        let app = Router::new()
            .route("/v1/chat/completions", post(complete))
            .with_state(shared);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind a loopback port");
        let addr = listener.local_addr().expect("a bound address");
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).into_future().await;
        });
        Self {
            base_url: format!("http://{addr}/v1"),
            received,
            task,
        }
    }

    /// Every request so far, in arrival order.
    pub fn received(&self) -> Vec<Received> {
        self.received
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

impl Drop for ChatServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn complete(
    State(shared): State<Shared>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    let index = {
        let mut received = shared.received.lock().unwrap_or_else(|p| p.into_inner());
        received.push(Received {
            at: Instant::now(),
            body: body.clone(),
            authorization: headers
                .get("authorization")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned),
        });
        received.len() - 1
    };
    let model = body["model"].as_str().unwrap_or("model").to_owned();
    let mut scripted = (shared.script)(index, &body);
    while let Scripted::Delayed(time, then) = scripted {
        tokio::time::sleep(time).await;
        scripted = *then;
    }
    match scripted {
        Scripted::Reply {
            content,
            prompt_tokens,
            completion_tokens,
        } => Json(json!({
            "id": format!("chatcmpl-{index}"),
            "object": "chat.completion",
            "model": model,
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens},
        }))
        .into_response(),
        Scripted::Status {
            status,
            retry_after,
        } => {
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            let mut response = (
                status,
                Json(json!({"error": {"message": "scripted failure"}})),
            )
                .into_response();
            if let Some(after) = retry_after.and_then(|a| a.parse().ok()) {
                response.headers_mut().insert("retry-after", after);
            }
            response
        }
        Scripted::Hang(time) => {
            tokio::time::sleep(time).await;
            Json(json!({"choices": []})).into_response()
        }
        Scripted::Delayed(..) => unreachable!("delays are unwrapped above"),
    }
}
