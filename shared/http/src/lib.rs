//! HTTP plumbing shared by every agentrl function and by the local stack.
//!
//! A function crate exposes an axum `Router` of its routes and its OpenAPI fragment;
//! [`app`] wraps them with health, `/openapi.json`, authentication (tenant from the
//! identity, never from the request), problem+json errors, body limits and telemetry.
//! The same wrapped router runs under `lambda_http` and under `agentrl serve`.
#![deny(missing_docs)]

pub mod api_keys;
mod app;
mod auth;
pub mod config;
pub mod consume;
mod document;
pub mod idempotency;
mod json;
pub mod kpis;
pub mod lambda;
mod observe;
pub mod oidc;
mod problem;
pub mod query;
pub mod sessions;
pub mod sqs;
pub mod telemetry;
pub mod trajectory_queue;

pub use app::{AppOptions, Service, app, openapi_document};
pub use auth::{Auth, Tenant};
pub use document::{link_body_field, link_ids};
pub use json::{ValidJson, fingerprint, integral_floats_as_integers, optional_body};
pub use observe::Metrics;
pub use problem::{ApiError, Problem};

/// Largest request body accepted by default (bytes).
pub const DEFAULT_BODY_LIMIT: usize = 1024 * 1024;
