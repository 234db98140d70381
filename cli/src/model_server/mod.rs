//! The built-in model server of `agentrl serve`: an OpenAI-compatible chat completions server
//! at `/models/v1` serving the models the trainer writes, on the CPU (candle), so the embedded
//! default closes the loop with no GPU and no other server. A call names a tenant's version
//! as the gateway does (`{agent_id}-v{N}`) or a shared base model under `models/`; the answer
//! carries the prompt's and the answers' token ids and the sampled tokens' logprobs (vLLM's
//! `return_token_ids`, OpenAI's `logprobs`), which the gateway records for the trainer.
//!
//! It answers one request at a time (a CPU's cores all go to one batch), with the `n` answers
//! of a request drawn together. It is the embedded default's server, not a production one:
//! on AWS and on GPUs the gateway's upstream is vLLM (see `docs/gateway.md`).

mod answer;
mod engine;
mod request;

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use agentrl_core::TenantId;
use agentrl_gateway::OpenAiError;
use agentrl_http::{Service, Tenant};
use agentrl_store::ports::Objects;
use agentrl_train::generate::{self, Completion, Token};
use agentrl_training::TrainingRepo;
use agentrl_training::serving;
use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde_json::{Value, json};
use tokio::sync::{Mutex, mpsc};
use utoipa::OpenApi;

use engine::{Engine, Served};
use request::Ask;

/// Where the server's routes live: its base URL is `{address}/models/v1`.
pub const BASE_PATH: &str = "/models/v1";

/// The largest request body (long agent contexts).
const MAX_BODY_BYTES: usize = 16 * 1024 * 1024;

/// What the server's handlers share.
#[derive(Clone)]
pub struct ModelServer {
    repo: TrainingRepo,
    objects: Arc<dyn Objects>,
    engine: Arc<Mutex<Engine>>,
}

impl ModelServer {
    /// A server reading versions from `repo` and files from `objects`, holding at most
    /// `capacity` models loaded, their files staged under `dir`.
    pub fn new(
        repo: TrainingRepo,
        objects: Arc<dyn Objects>,
        dir: std::path::PathBuf,
        capacity: usize,
    ) -> Self {
        Self {
            engine: Arc::new(Mutex::new(Engine::new(objects.clone(), dir, capacity))),
            repo,
            objects,
        }
    }
}

#[derive(OpenApi)]
#[openapi(
    paths(chat, models),
    tags((name = "models", description = "The built-in model server (agentrl serve): base URL /models/v1"))
)]
struct ModelsApi;

/// The server's routes and their OpenAPI document.
pub fn service(state: ModelServer) -> Service {
    let router = Router::new()
        .route(&format!("{BASE_PATH}/chat/completions"), post(chat))
        .route(&format!("{BASE_PATH}/models"), get(models))
        .layer(axum::extract::DefaultBodyLimit::max(MAX_BODY_BYTES));
    Service {
        router: router.with_state(state),
        openapi: ModelsApi::openapi(),
    }
}

/// A chat completion by one of the tenant's versions or a shared base model, with token ids
/// and logprobs when asked (`return_token_ids`, `logprobs`).
#[utoipa::path(post, path = "/models/v1/chat/completions", tag = "models",
    request_body(content = Object, description = "An OpenAI Chat Completions request; `model` names a version (`{agent_id}-v{N}`) or a base model under `models/`"),
    responses(
        (status = 200, description = "A `chat.completion` (or `text/event-stream` of `chat.completion.chunk`s with `stream: true`), with `prompt_token_ids` and each choice's `token_ids` under `return_token_ids`"),
        (status = 400, description = "A malformed field, or one this server does not support (named in `field`)", content_type = "application/problem+json"),
        (status = 404, description = "No such model for this tenant", content_type = "application/problem+json"),
        (status = 503, description = "The model's files do not load", content_type = "application/problem+json"),
    ))]
async fn chat(State(state): State<ModelServer>, Tenant(tenant): Tenant, body: Bytes) -> Response {
    match complete(state, tenant, &body).await {
        Ok(r) | Err(r) => r,
    }
}

async fn complete(state: ModelServer, tenant: TenantId, body: &[u8]) -> Result<Response, Response> {
    let fail = IntoResponse::into_response;
    let ask = request::parse(body).map_err(fail)?;
    let weights = serving::weights(&state.repo, state.objects.as_ref(), &tenant, &ask.model)
        .await
        .map_err(|e| fail(OpenAiError::from(e)))?
        .ok_or_else(|| {
            fail(
                OpenAiError::new(
                    StatusCode::NOT_FOUND,
                    format!("the model `{}` does not exist", ask.model),
                    "model_not_found",
                )
                .with_field("model"),
            )
        })?;
    // One request at a time: the lock is held until its last token.
    let mut engine = state.engine.clone().lock_owned().await;
    let served = engine.get(&weights).await.map_err(|e| {
        tracing::warn!(model = %ask.model, error = %format!("{e:#}"), "a model did not load");
        fail(OpenAiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            format!("the model `{}` could not be loaded: {e:#}", ask.model),
            "model_unavailable",
        ))
    })?;
    let prompt = prompt(&served, &ask).map_err(fail)?;
    let rng = ChaCha8Rng::seed_from_u64(ask.seed.unwrap_or_else(rand::random));
    let meta = answer::Meta::new(ask.model.clone());
    if ask.stream {
        return Ok(stream(engine, served, ask, prompt, rng, meta));
    }
    // A client that hangs up stops the draw at its next token.
    let gone = HangUp::default();
    let listening = gone.0.clone();
    let (ask, outs) = tokio::task::spawn_blocking(move || {
        let mut rng = rng;
        let outs = generate::generate(
            &served.view,
            &served.tok,
            &prompt,
            &ask.generation,
            &mut rng,
            &mut |_| !listening.load(Ordering::Relaxed),
        );
        drop(engine);
        (ask, outs.map(|o| (o, served, prompt)))
    })
    .await
    .map_err(|_| fail(generation_failed("the generating thread panicked")))?;
    let (outs, served, prompt) = outs.map_err(|e| fail(generation_failed(&e.to_string())))?;
    drop(gone);
    let body = answer::completion(&meta, &ask, &served.tok, &prompt, &outs);
    Ok(axum::Json(body).into_response())
}

/// Set when the request's future is dropped (its client went away) before it answered.
#[derive(Default)]
struct HangUp(Arc<AtomicBool>);

impl Drop for HangUp {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

fn generation_failed(reason: &str) -> OpenAiError {
    OpenAiError::new(
        StatusCode::INTERNAL_SERVER_ERROR,
        format!("generation failed: {reason}"),
        "generation_failed",
    )
}

/// The token ids the model is fed: the conversation through its chat template.
fn prompt(served: &Served, ask: &Ask) -> Result<Vec<u32>, OpenAiError> {
    if ask.tools.is_some() && !served.tok.has_chat_template() {
        return Err(OpenAiError::invalid(
            "tools",
            "the model's files have no chat template to present tools with",
        ));
    }
    let text = served
        .tok
        .generation_prompt(&ask.messages, ask.tools.as_ref())
        .map_err(|e| OpenAiError::invalid("messages", format!("the chat template: {e}")))?;
    let ids = served
        .tok
        .encode(&text)
        .map_err(|e| OpenAiError::invalid("messages", e.to_string()))?;
    let context = served.view.config.max_position_embeddings;
    if ids.is_empty() || ids.len() >= context {
        return Err(OpenAiError::invalid(
            "messages",
            format!(
                "the prompt is {} tokens; the model's context is {context}",
                ids.len()
            ),
        ));
    }
    Ok(ids)
}

/// What the generating thread tells the stream.
enum Event {
    Token(Token),
    Done(Result<Vec<Completion>, String>),
}

/// The answer as server-sent events, drawn on a blocking thread that stops when the client
/// goes away (its events then have no receiver).
fn stream(
    engine: tokio::sync::OwnedMutexGuard<Engine>,
    served: Arc<Served>,
    ask: Ask,
    prompt: Vec<u32>,
    rng: ChaCha8Rng,
    meta: answer::Meta,
) -> Response {
    let (tx, rx) = mpsc::channel::<Event>(64);
    let (generation, drawing, ids) = (ask.generation.clone(), served.clone(), prompt.clone());
    tokio::task::spawn_blocking(move || {
        let mut rng = rng;
        let outs = generate::generate(
            &drawing.view,
            &drawing.tok,
            &ids,
            &generation,
            &mut rng,
            &mut |t| tx.blocking_send(Event::Token(t)).is_ok(),
        );
        drop(engine);
        let _ = tx.blocking_send(Event::Done(outs.map_err(|e| e.to_string())));
    });
    let chunks = answer::Stream::new(meta, ask, prompt);
    let opening = frame(&chunks.opening());
    let frames = futures::stream::unfold(
        Some((rx, chunks, served, Some(opening))),
        |state| async move {
            let (mut rx, mut chunks, served, opening) = state?;
            let mut out = opening.unwrap_or_default();
            // Every event already waiting goes out in one write.
            let done = loop {
                match rx.recv().await {
                    Some(Event::Token(t)) => {
                        out.push_str(&frame(&chunks.token(&served.tok, &t)));
                        if rx.is_empty() {
                            break false;
                        }
                    }
                    Some(Event::Done(Ok(_))) => {
                        if let Some(usage) = chunks.usage() {
                            out.push_str(&frame(&usage));
                        }
                        out.push_str("data: [DONE]\n\n");
                        break true;
                    }
                    Some(Event::Done(Err(e))) => {
                        out.push_str(&frame(&json!({"error": {
                            "message": format!("generation failed: {e}"),
                            "type": "api_error", "code": "generation_failed"}})));
                        break true;
                    }
                    None => break true,
                }
            };
            let next = (!done).then_some((rx, chunks, served, None));
            Some((Ok::<_, Infallible>(Bytes::from(out)), next))
        },
    );
    Response::builder()
        .header(header::CONTENT_TYPE, "text/event-stream")
        .header(header::CACHE_CONTROL, "no-cache")
        .body(Body::from_stream(frames))
        .unwrap_or_else(|_| StatusCode::INTERNAL_SERVER_ERROR.into_response())
}

fn frame(chunk: &Value) -> String {
    format!("data: {chunk}\n\n")
}

/// The models the tenant's calls can name: shared base models, then its agents' versions.
#[utoipa::path(get, path = "/models/v1/models", tag = "models",
    responses((status = 200, description = "An OpenAI model list")))]
async fn models(State(state): State<ModelServer>, Tenant(tenant): Tenant) -> Response {
    let names = async {
        let mut names: Vec<String> = state
            .objects
            .list(agentrl_training::MODELS_PREFIX)
            .await?
            .into_iter()
            .filter_map(|m| {
                m.path
                    .strip_prefix(agentrl_training::MODELS_PREFIX)?
                    .strip_suffix("/config.json")
                    .map(str::to_owned)
            })
            .collect();
        names.extend(serving::version_names(&state.repo, &tenant).await?);
        Ok::<_, agentrl_store::StoreError>(names)
    };
    match names.await {
        Ok(names) => {
            let data: Vec<Value> = names
                .into_iter()
                .map(|id| json!({"id": id, "object": "model", "created": 0, "owned_by": "agentrl"}))
                .collect();
            axum::Json(json!({"object": "list", "data": data})).into_response()
        }
        Err(e) => OpenAiError::from(e).into_response(),
    }
}
