//! A fault proxy on 127.0.0.1 in front of moto: it forwards the AWS adapters' requests and
//! fails some of them the way the services do under load, so retries, back-off and the
//! handling of lost answers run against real wire traffic.
//!
//! Every `period`-th request to a service fails, alternating two faults:
//! - **refused**: the proxy answers at once, without forwarding — DynamoDB
//!   `ThrottlingException` (400) and `InternalServerError` (500) in turn, SQS `InternalError`
//!   (500), S3 `SlowDown` (503);
//! - **lost answer**: the proxy forwards the request, moto applies it, and the client gets the
//!   same 500/503 instead of moto's answer, so its retry repeats a write that already
//!   happened (a conditional write then fails its condition, a send is delivered twice).
//!
//! A request whose body was failed once is forwarded on every retry, so a client with at
//! least two attempts always gets through; SQS receives are never answered with a lost
//! answer (that is a visibility timeout, which the conformance suite covers).

use std::{
    collections::HashSet,
    sync::{
        Arc, Mutex,
        atomic::{AtomicU64, Ordering},
    },
};

use axum::{
    body::{Body, Bytes},
    http::{HeaderMap, Method, StatusCode, Uri, header},
    response::Response,
};
use sha2::{Digest, Sha256};

/// The service a request is for, from its protocol headers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Service {
    /// `x-amz-target: DynamoDB_20120810.*`.
    DynamoDb,
    /// `x-amz-target: AmazonSQS.*`.
    Sqs,
    /// Everything else (REST requests on bucket paths).
    S3,
}

const SERVICES: [Service; 3] = [Service::DynamoDb, Service::Sqs, Service::S3];

/// Counts per service.
#[derive(Debug, Default)]
struct Counts {
    requests: AtomicU64,
    refused: AtomicU64,
    lost: AtomicU64,
}

/// What the proxy did to one service's requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tally {
    /// Requests received (retries included).
    pub requests: u64,
    /// Failed without forwarding.
    pub refused: u64,
    /// Forwarded and applied, answered with an error.
    pub lost: u64,
}

struct State {
    upstream: String,
    period: u64,
    http: reqwest::Client,
    counts: [Counts; 3],
    failed: Mutex<HashSet<[u8; 32]>>,
}

/// A running proxy; stops when dropped.
pub struct FaultProxy {
    /// The endpoint to give the AWS clients instead of moto's.
    pub endpoint: String,
    state: Arc<State>,
    task: tokio::task::JoinHandle<()>,
}

impl FaultProxy {
    /// Starts a proxy to `upstream` (moto, on loopback) failing every `period`-th request of
    /// each service.
    ///
    /// # Panics
    /// When `upstream` is not on loopback or no port can be bound.
    pub async fn start(upstream: &str, period: u64) -> Self {
        assert!(upstream.starts_with("http://127.0.0.1:") && period >= 2);
        let state = Arc::new(State {
            upstream: upstream.trim_end_matches('/').to_owned(),
            period,
            http: reqwest::Client::new(),
            counts: Default::default(),
            failed: Mutex::default(),
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let endpoint = format!("http://{}", listener.local_addr().unwrap());
        let shared = state.clone();
        let app = axum::Router::new().fallback(
            move |method: Method, uri: Uri, headers: HeaderMap, body: Bytes| {
                let state = shared.clone();
                async move { state.handle(method, uri, headers, body).await }
            },
        );
        let task = tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        Self {
            endpoint,
            state,
            task,
        }
    }

    /// What was done to `service`'s requests so far.
    pub fn tally(&self, service: Service) -> Tally {
        let c = &self.state.counts[index(service)];
        Tally {
            requests: c.requests.load(Ordering::Relaxed),
            refused: c.refused.load(Ordering::Relaxed),
            lost: c.lost.load(Ordering::Relaxed),
        }
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn index(service: Service) -> usize {
    SERVICES.iter().position(|s| *s == service).unwrap_or(2)
}

fn service_of(headers: &HeaderMap) -> (Service, &str) {
    let target = headers
        .get("x-amz-target")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if target.starts_with("DynamoDB_") {
        (Service::DynamoDb, target)
    } else if target.starts_with("AmazonSQS.") {
        (Service::Sqs, target)
    } else {
        (Service::S3, target)
    }
}

/// The error a service answers when it is overloaded or failing; `n` alternates DynamoDB's.
fn fault(service: Service, n: u64) -> Response {
    let (status, content_type, body) = match service {
        Service::DynamoDb if n.is_multiple_of(2) => (
            StatusCode::BAD_REQUEST,
            "application/x-amz-json-1.0",
            r#"{"__type":"com.amazonaws.dynamodb.v20120810#ThrottlingException","message":"Rate of requests exceeds the allowed throughput (injected)"}"#,
        ),
        Service::DynamoDb => (
            StatusCode::INTERNAL_SERVER_ERROR,
            "application/x-amz-json-1.0",
            r#"{"__type":"com.amazonaws.dynamodb.v20120810#InternalServerError","message":"Internal server error (injected)"}"#,
        ),
        Service::Sqs => (
            StatusCode::INTERNAL_SERVER_ERROR,
            "application/x-amz-json-1.0",
            r#"{"__type":"com.amazonaws.sqs#InternalError","message":"We encountered an internal error (injected)"}"#,
        ),
        Service::S3 => (
            StatusCode::SERVICE_UNAVAILABLE,
            "application/xml",
            "<Error><Code>SlowDown</Code><Message>Please reduce your request rate (injected)</Message></Error>",
        ),
    };
    Response::builder()
        .status(status)
        .header(header::CONTENT_TYPE, content_type)
        .body(Body::from(body))
        .unwrap()
}

impl State {
    async fn handle(&self, method: Method, uri: Uri, headers: HeaderMap, body: Bytes) -> Response {
        let (service, target) = service_of(&headers);
        let counts = &self.counts[index(service)];
        let n = counts.requests.fetch_add(1, Ordering::Relaxed) + 1;
        let digest: [u8; 32] = Sha256::new()
            .chain_update(method.as_str())
            .chain_update(uri.to_string())
            .chain_update(&body)
            .finalize()
            .into();
        let fail = n.is_multiple_of(self.period) && self.failed.lock().unwrap().insert(digest);
        let lose =
            fail && (n / self.period).is_multiple_of(2) && target != "AmazonSQS.ReceiveMessage";
        if fail && !lose {
            counts.refused.fetch_add(1, Ordering::Relaxed);
            return fault(service, n / self.period);
        }
        let answer = self.forward(method, &uri, &headers, body).await;
        if lose {
            counts.lost.fetch_add(1, Ordering::Relaxed);
            return fault(service, n / self.period);
        }
        answer
    }

    async fn forward(
        &self,
        method: Method,
        uri: &Uri,
        headers: &HeaderMap,
        body: Bytes,
    ) -> Response {
        let path = uri.path_and_query().map_or("/", |p| p.as_str());
        let mut request = self
            .http
            .request(method, format!("{}{path}", self.upstream))
            .body(body);
        for (name, value) in headers {
            if !matches!(
                *name,
                header::HOST
                    | header::CONTENT_LENGTH
                    | header::CONNECTION
                    | header::TRANSFER_ENCODING
            ) {
                request = request.header(name, value);
            }
        }
        let upstream = match request.send().await {
            Ok(r) => r,
            Err(e) => {
                return Response::builder()
                    .status(StatusCode::BAD_GATEWAY)
                    .body(Body::from(e.to_string()))
                    .unwrap();
            }
        };
        let mut response = Response::builder().status(upstream.status().as_u16());
        for (name, value) in upstream.headers() {
            if !matches!(
                *name,
                header::CONTENT_LENGTH | header::CONNECTION | header::TRANSFER_ENCODING
            ) {
                response = response.header(name, value);
            }
        }
        let bytes = upstream.bytes().await.unwrap_or_default();
        response.body(Body::from(bytes)).unwrap()
    }
}
