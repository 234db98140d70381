//! The web console: a single-page app (plain ES modules, no bundler; see `docs/console.md`)
//! that reads the same public API the SDKs use. Its files are embedded in the binary at build
//! time and served at `/console/` with a Content Security Policy that allows no inline script
//! or style and no other origin: the page can only run the code shipped here and talk to the
//! API it came from.
//!
//! A path under `/console/` outside the app's own files is a view of the app
//! (`/console/runs/run-1`, `/console/agents/team/bot.v1`): it gets `index.html`, whose script
//! routes on the path, so every view is a link. A missing file is a 404: one under a folder
//! of the app's files (`/console/views/nope.js`) or a file name at the top
//! (`/console/nope.js`).
//!
//! `/console/config.json` tells the page how to sign in ([`ConsoleConfig`]): with the API key
//! (no identity provider configured) or through an OIDC provider (authorization code with
//! PKCE), whose token endpoint's origin is then the one other origin the page may fetch.

pub mod config;

use std::sync::{Arc, OnceLock};

use axum::{
    Router,
    extract::Path,
    http::{HeaderMap, HeaderValue, StatusCode, header},
    response::{IntoResponse, Json, Redirect, Response},
    routing::get,
};
use sha2::{Digest, Sha256};

pub use config::ConsoleConfig;

/// Every file of `console/src`, by path relative to it.
static ASSETS: &[(&str, &[u8])] = include!(concat!(env!("OUT_DIR"), "/assets.rs"));

/// What the console's pages may load and run: only this origin's files, no inline code, and
/// fetches to this origin and `also_connect` (the identity provider's token endpoint).
pub fn content_security_policy(also_connect: Option<&str>) -> String {
    let connect = also_connect.map_or_else(|| "'self'".to_owned(), |o| format!("'self' {o}"));
    format!(
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
         connect-src {connect}; font-src 'self'; object-src 'none'; base-uri 'none'; \
         frame-ancestors 'none'; form-action 'self'"
    )
}

/// The routes: `/` leads to `/console/`, which serves the app, and `/console` to the app's
/// first page (a path every HTTP API route of the console matches: `/console/{proxy+}` needs
/// a segment).
pub fn router(config: ConsoleConfig) -> Router {
    let csp = HeaderValue::from_str(&content_security_policy(config.connect_origin()))
        .expect("origins are written as ASCII without control characters");
    let page = Arc::new(Page { csp, config });
    let config_page = page.clone();
    let root_page = page.clone();
    Router::new()
        .route("/", get(|| async { Redirect::to("/console/") }))
        .route(
            "/console",
            get(|| async { Redirect::permanent("/console/agents") }),
        )
        .route(
            "/console/config.json",
            get(move || async move {
                let mut response = Json(config_page.config.document()).into_response();
                response
                    .headers_mut()
                    .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
                config_page.secured(response)
            }),
        )
        .route(
            "/console/",
            get(move |headers: HeaderMap| async move { root_page.serve("", &headers) }),
        )
        .route(
            "/console/{*path}",
            get(
                move |Path(path): Path<String>, headers: HeaderMap| async move {
                    page.serve(&path, &headers)
                },
            ),
        )
}

/// What every answer of the console is built with.
struct Page {
    /// The Content Security Policy, with the provider's origin where one is configured.
    csp: HeaderValue,
    config: ConsoleConfig,
}

impl Page {
    /// The file at `path`, `index.html` for a view, or a 404 for a missing file.
    fn serve(&self, path: &str, headers: &HeaderMap) -> Response {
        self.secured(file(path, headers))
    }

    /// The headers every console response carries.
    fn secured(&self, mut response: Response) -> Response {
        let h = response.headers_mut();
        h.insert(header::CONTENT_SECURITY_POLICY, self.csp.clone());
        h.insert(
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        );
        h.insert(
            header::REFERRER_POLICY,
            HeaderValue::from_static("no-referrer"),
        );
        h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
        response
    }
}

/// The file at `path`, `index.html` for a view, or a 404 for a missing file.
fn file(path: &str, headers: &HeaderMap) -> Response {
    let found = find(path).or_else(|| is_view(path).then(|| find("index.html")).flatten());
    let Some(i) = found else {
        return (StatusCode::NOT_FOUND, "no such file in the console").into_response();
    };
    let (name, bytes) = ASSETS[i];
    let tag = etag(i);
    let fresh = headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|t| t.trim() == tag));
    let mut response = if fresh {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        ([(header::CONTENT_TYPE, content_type(name))], bytes).into_response()
    };
    let h = response.headers_mut();
    h.insert(
        header::ETAG,
        HeaderValue::from_str(tag).expect("a quoted hex digest"),
    );
    // Revalidated on every load: a new binary's files are never hidden behind a cache.
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

/// The index of the file at `path` in [`ASSETS`].
fn find(path: &str) -> Option<usize> {
    ASSETS.binary_search_by(|(name, _)| (*name).cmp(path)).ok()
}

/// A path the app routes on: not under one of its folders, and not a file name at the top.
/// (Ids in views may hold dots, `agents/bot.v1`; views have a folder of their own.)
fn is_view(path: &str) -> bool {
    let (first, rest) = path.split_once('/').unwrap_or((path, ""));
    let in_app_folder = ASSETS
        .iter()
        .any(|(name, _)| name.split_once('/').is_some_and(|(dir, _)| dir == first));
    !in_app_folder && (!rest.is_empty() || !first.contains('.'))
}

fn content_type(name: &str) -> &'static str {
    match name.rsplit_once('.').map(|(_, ext)| ext) {
        Some("html") => "text/html; charset=utf-8",
        Some("js" | "mjs") => "text/javascript; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        Some("svg") => "image/svg+xml",
        Some("png") => "image/png",
        Some("ico") => "image/x-icon",
        Some("json") => "application/json",
        Some("woff2") => "font/woff2",
        _ => "application/octet-stream",
    }
}

/// A strong validator of the file at index `i`: its SHA-256, computed once per file.
fn etag(i: usize) -> &'static str {
    static TAGS: OnceLock<Vec<String>> = OnceLock::new();
    &TAGS.get_or_init(|| {
        ASSETS
            .iter()
            .map(|(_, bytes)| {
                let digest = Sha256::digest(bytes);
                let hex: String = digest[..12].iter().map(|x| format!("{x:02x}")).collect();
                format!("\"{hex}\"")
            })
            .collect()
    })[i]
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Body;
    use http_body_util::BodyExt;
    use tower::ServiceExt;

    async fn get(path: &str, headers: &[(&str, &str)]) -> (StatusCode, HeaderMap, Vec<u8>) {
        get_from(router(ConsoleConfig::api_key()), path, headers).await
    }

    async fn get_from(
        app: Router,
        path: &str,
        headers: &[(&str, &str)],
    ) -> (StatusCode, HeaderMap, Vec<u8>) {
        let mut request = axum::http::Request::builder().uri(path);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        let response = app
            .oneshot(request.body(Body::empty()).unwrap())
            .await
            .unwrap();
        let (parts, body) = response.into_parts();
        let bytes = body.collect().await.unwrap().to_bytes().to_vec();
        (parts.status, parts.headers, bytes)
    }

    fn index() -> &'static [u8] {
        ASSETS[find("index.html").expect("console/src/index.html")].1
    }

    #[test]
    fn assets_are_sorted_for_the_binary_search() {
        assert!(ASSETS.windows(2).all(|w| w[0].0 < w[1].0));
        assert!(ASSETS.iter().any(|(name, _)| name.ends_with(".js")));
    }

    #[tokio::test]
    async fn views_get_the_app_files_get_themselves_and_missing_files_a_404() {
        for view in [
            "/console/",
            "/console/runs/run-1",
            "/console/agents",
            "/console/agents/team/bot.v1",
            "/console/agents/bot.v1",
        ] {
            let (status, headers, body) = get(view, &[]).await;
            assert_eq!(status, StatusCode::OK, "{view}");
            assert_eq!(body, index(), "{view}");
            assert_eq!(headers[header::CONTENT_TYPE], "text/html; charset=utf-8");
            assert_eq!(
                headers[header::CONTENT_SECURITY_POLICY].to_str().unwrap(),
                content_security_policy(None)
            );
            assert_eq!(headers[header::X_CONTENT_TYPE_OPTIONS], "nosniff");
        }
        let (name, bytes) = ASSETS
            .iter()
            .find(|(name, _)| name.ends_with(".js"))
            .unwrap();
        let (status, headers, body) = get(&format!("/console/{name}"), &[]).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(&body, bytes);
        assert_eq!(
            headers[header::CONTENT_TYPE],
            "text/javascript; charset=utf-8"
        );
        for missing in [
            "/console/nope.js",
            "/console/views/nope.js",
            "/console/vendor/x",
        ] {
            let (status, headers, _) = get(missing, &[]).await;
            assert_eq!(status, StatusCode::NOT_FOUND, "{missing}");
            assert!(headers.contains_key(header::CONTENT_SECURITY_POLICY));
        }
    }

    #[tokio::test]
    async fn a_revalidation_with_the_same_tag_is_a_304() {
        let (_, headers, _) = get("/console/index.html", &[]).await;
        let tag = headers[header::ETAG].to_str().unwrap().to_owned();
        let (status, _, body) = get("/console/index.html", &[("if-none-match", &tag)]).await;
        assert_eq!(status, StatusCode::NOT_MODIFIED);
        assert!(body.is_empty());
        let (status, ..) = get("/console/index.html", &[("if-none-match", "\"other\"")]).await;
        assert_eq!(status, StatusCode::OK);
    }

    #[tokio::test]
    async fn the_roots_lead_to_the_console() {
        for (path, to) in [("/", "/console/"), ("/console", "/console/agents")] {
            let (status, headers, _) = get(path, &[]).await;
            assert!(status.is_redirection(), "{path}");
            assert_eq!(headers[header::LOCATION], to);
        }
    }

    #[tokio::test]
    async fn the_config_says_how_to_sign_in_and_the_policy_allows_only_the_token_origin() {
        let (status, headers, body) = get("/console/config.json", &[]).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(headers[header::CONTENT_TYPE], "application/json");
        let doc: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(doc, serde_json::json!({"oidc": null}));
        assert!(
            headers[header::CONTENT_SECURITY_POLICY]
                .to_str()
                .unwrap()
                .contains("connect-src 'self';")
        );

        let config = ConsoleConfig::from_lookup(|name| {
            let value = match name {
                "CLIENT_ID" => "console",
                "ISSUER" => "https://idp.example.com",
                "AUTHORIZATION_ENDPOINT" => "https://login.example.com/authorize",
                "TOKEN_ENDPOINT" => "https://Login.Example.com:443/oauth2/token?x=1",
                _ => return None,
            };
            Some(value.to_owned())
        })
        .unwrap();
        let app = router(config);
        for path in ["/console/config.json", "/console/agents", "/console/app.js"] {
            let (status, headers, body) = get_from(app.clone(), path, &[]).await;
            assert_eq!(status, StatusCode::OK, "{path}");
            let csp = headers[header::CONTENT_SECURITY_POLICY].to_str().unwrap();
            assert!(
                csp.contains("; connect-src 'self' https://login.example.com; "),
                "{csp}"
            );
            if path.ends_with(".json") {
                let doc: serde_json::Value = serde_json::from_slice(&body).unwrap();
                assert_eq!(doc["oidc"]["client_id"], "console");
                assert_eq!(
                    doc["oidc"]["authorization_endpoint"],
                    "https://login.example.com/authorize"
                );
            }
        }
    }
}
