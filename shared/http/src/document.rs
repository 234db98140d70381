//! The merged OpenAPI document: every function's part, what the shared layers add to each
//! operation, and the links from creating operations to the routes that take their ids.

use std::collections::BTreeMap;

use utoipa::openapi::{
    ObjectBuilder, OpenApi, OpenApiBuilder, PathItem, RefOr, Required, Type,
    link::LinkBuilder,
    path::{Operation, ParameterBuilder, ParameterIn},
    security::{HttpAuthScheme, HttpBuilder, SecurityRequirement, SecurityScheme},
};

/// `meta` and `parts` as one document: the bearer security scheme, the answers and headers of
/// the shared layers, unique operation ids, and only the links whose target is in it.
pub(crate) fn merged(meta: OpenApi, parts: impl IntoIterator<Item = OpenApi>) -> OpenApi {
    let mut doc = OpenApiBuilder::new()
        .info(
            utoipa::openapi::InfoBuilder::new()
                .title("agentrl")
                .version(env!("CARGO_PKG_VERSION"))
                .description(Some(
                    "Thinking budgets, diff scoring, reward verification, attribution and \
                     trajectory collection for AI agents. Errors are RFC 9457 problem+json.",
                ))
                .build(),
        )
        .build();
    doc.merge(meta);
    for part in parts {
        if cfg!(debug_assertions) {
            let clashes = clashing_schemas(&doc, &part);
            assert!(
                clashes.is_empty(),
                "different schemas under one name: {clashes:?}"
            );
        }
        doc.merge(part);
    }
    let components = doc.components.get_or_insert_with(Default::default);
    components.add_security_scheme(
        "bearer",
        SecurityScheme::Http(
            HttpBuilder::new()
                .scheme(HttpAuthScheme::Bearer)
                .description(Some(
                    "An API key (local stack) or a JWT carrying a tenant_id claim (AWS)",
                ))
                .build(),
        ),
    );
    doc.security = Some(vec![SecurityRequirement::new(
        "bearer",
        Vec::<String>::new(),
    )]);
    document_idempotency_key(&mut doc);
    document_common_answers(&mut doc);
    unique_operation_ids(&mut doc);
    drop_dangling_links(&mut doc);
    doc
}

/// Declares the answers the shared layers give on every operation they wrap, where the
/// operation does not declare them itself: 401 from authentication; 400 for a path or query
/// parameter the extractors refuse; on operations with a body (POST, PUT, PATCH), 400
/// (malformed JSON), 413 (over the body limit) and 415 (not JSON); on POST, PUT and PATCH,
/// 409 and 422 from the idempotency layer. All are problem+json.
fn document_common_answers(doc: &mut OpenApi) {
    use utoipa::openapi::{ContentBuilder, Ref, RefOr, ResponseBuilder, path::Operation};
    let problem = |description: &str| {
        RefOr::T(
            ResponseBuilder::new()
                .description(description)
                .content(
                    "application/problem+json",
                    ContentBuilder::new()
                        .schema(Some(RefOr::Ref(Ref::from_schema_name("Problem"))))
                        .build(),
                )
                .build(),
        )
    };
    let add = |op: &mut Operation, status: &str, description: &str| {
        op.responses
            .responses
            .entry(status.to_owned())
            .or_insert_with(|| problem(description));
    };
    for item in doc.paths.paths.values_mut() {
        let idempotent = [item.post.as_mut(), item.put.as_mut(), item.patch.as_mut()];
        for op in idempotent.into_iter().flatten() {
            add(op, "409", "The same Idempotency-Key is still in progress");
            add(
                op,
                "422",
                "The Idempotency-Key was used with another request",
            );
        }
        let writes = [item.post.as_mut(), item.put.as_mut(), item.patch.as_mut()];
        for op in writes
            .into_iter()
            .flatten()
            .filter(|op| op.request_body.is_some())
        {
            add(
                op,
                "400",
                "Malformed JSON or an invalid field (the field is named)",
            );
            add(op, "413", "Body over the limit");
            add(op, "415", "Content type is not JSON");
        }
        let public = |op: &Operation| {
            op.security
                .as_ref()
                .is_some_and(|s| s.iter().all(|r| *r == SecurityRequirement::default()))
        };
        for op in operations(item) {
            if op.parameters.as_ref().is_some_and(|p| !p.is_empty()) {
                add(
                    op,
                    "400",
                    "A malformed path or query parameter (the parameter is named)",
                );
            }
            if !public(op) {
                add(op, "401", "Missing, malformed or unknown credentials");
            }
        }
    }
}

/// Names `part` gives to schemas that differ from `doc`'s of the same name: merging keeps one
/// schema per name, so such a clash would silently describe one of the types wrongly (checked
/// in debug builds, which every test runs).
fn clashing_schemas(doc: &OpenApi, part: &OpenApi) -> Vec<String> {
    let (Some(ours), Some(theirs)) = (&doc.components, &part.components) else {
        return Vec::new();
    };
    theirs
        .schemas
        .iter()
        .filter(|(name, schema)| {
            ours.schemas.get(*name).is_some_and(|mine| {
                serde_json::to_value(mine).ok() != serde_json::to_value(schema).ok()
            })
        })
        .map(|(name, _)| name.clone())
        .collect()
}

/// Declares the `Idempotency-Key` header on every POST, PUT and PATCH operation, as the
/// idempotency middleware honours it there.
fn document_idempotency_key(doc: &mut OpenApi) {
    let header = ParameterBuilder::new()
        .name("Idempotency-Key")
        .parameter_in(ParameterIn::Header)
        .required(Required::False)
        .description(Some(
            "Retries with the same key get the first answer back; reused with another \
             request → 422; while the first is in progress → 409 (1–255 visible ASCII)",
        ))
        .schema(Some(
            ObjectBuilder::new()
                .schema_type(Type::String)
                .min_length(Some(1))
                .max_length(Some(255))
                .pattern(Some("^[!-~]{1,255}$")),
        ))
        .build();
    for item in doc.paths.paths.values_mut() {
        for op in [item.post.as_mut(), item.put.as_mut(), item.patch.as_mut()]
            .into_iter()
            .flatten()
        {
            op.parameters
                .get_or_insert_with(Vec::new)
                .push(header.clone());
        }
    }
}

/// `doc` as JSON. utoipa 5.5 writes a link's `operationRef`, `operationId` and `requestBody`
/// in snake case (its `Link` lacks serde's camelCase renaming), which no OpenAPI reader
/// understands, so they are renamed here.
pub(crate) fn json(doc: &OpenApi) -> String {
    let Ok(mut value) = serde_json::to_value(doc) else {
        return "{}".to_owned();
    };
    let links = value["paths"]
        .as_object_mut()
        .into_iter()
        .flat_map(|paths| paths.values_mut())
        .filter_map(serde_json::Value::as_object_mut)
        .flat_map(|item| item.values_mut())
        .filter_map(|op| op.get_mut("responses")?.as_object_mut())
        .flat_map(|responses| responses.values_mut())
        .filter_map(|response| response.get_mut("links")?.as_object_mut())
        .flat_map(|links| links.values_mut())
        .filter_map(serde_json::Value::as_object_mut);
    for link in links {
        for (from, to) in [
            ("operation_ref", "operationRef"),
            ("operation_id", "operationId"),
            ("request_body", "requestBody"),
        ] {
            if let Some(v) = link.remove(from) {
                link.insert(to.to_owned(), v);
            }
        }
    }
    value.to_string()
}

/// The operation `method` (lower case) of `item`.
fn operation<'a>(item: &'a mut PathItem, method: &str) -> Option<&'a mut Operation> {
    match method {
        "get" => item.get.as_mut(),
        "post" => item.post.as_mut(),
        "put" => item.put.as_mut(),
        "patch" => item.patch.as_mut(),
        "delete" => item.delete.as_mut(),
        _ => None,
    }
}

fn operations(item: &mut PathItem) -> impl Iterator<Item = &mut Operation> {
    [
        item.get.as_mut(),
        item.post.as_mut(),
        item.put.as_mut(),
        item.patch.as_mut(),
        item.delete.as_mut(),
    ]
    .into_iter()
    .flatten()
}

/// Declares that the `field` of the `status` answer of `from` (`("post", "/v1/budgets")`) is
/// the `{param}` path parameter of each `to` operation (`("get", "/v1/budgets/{id}", "id")`),
/// as OpenAPI links: generated clients and stateful testers follow them from what an
/// operation created to the routes that read or act on it. A link whose target is not in the
/// merged document (a function deployed alone) is dropped when the document is merged.
///
/// # Panics
/// When `from` or its `status` answer is not in `doc`: the declaration is wrong.
pub fn link_ids(
    doc: &mut OpenApi,
    from: (&str, &str),
    status: &str,
    field: &str,
    to: &[(&str, &str, &str)],
) {
    let response = response_mut(doc, from, status);
    for (method, path, param) in to {
        let link = LinkBuilder::new()
            .operation_ref(operation_ref(method, path))
            .parameter(*param, format!("$response.body#/{field}"))
            .description(format!(
                "`{field}` is the `{param}` of {} {path}",
                method.to_uppercase()
            ))
            .build();
        response
            .links
            .insert(link_name(method, path), RefOr::T(link));
    }
}

/// Declares that the `field` of the `status` answer of `from` goes into the `body_field` of
/// the request body of the operation `to` (`("post", "/v1/evaluations")`), as an OpenAPI link
/// whose `requestBody` holds the runtime expression: for the ids that a request names in its
/// body rather than its path.
///
/// # Panics
/// When `from` or its `status` answer is not in `doc`: the declaration is wrong.
pub fn link_body_field(
    doc: &mut OpenApi,
    from: (&str, &str),
    status: &str,
    field: &str,
    to: (&str, &str),
    body_field: &str,
) {
    let (method, path) = to;
    let link = LinkBuilder::new()
        .operation_ref(operation_ref(method, path))
        .request_body(Some(serde_json::json!({
            body_field: format!("$response.body#/{field}")
        })))
        .description(format!(
            "`{field}` is the `{body_field}` of the body of {} {path}",
            method.to_uppercase()
        ))
        .build();
    response_mut(doc, from, status)
        .links
        .insert(link_name(method, path), RefOr::T(link));
}

/// The `status` answer of the operation `from`.
fn response_mut<'d>(
    doc: &'d mut OpenApi,
    (method, path): (&str, &str),
    status: &str,
) -> &'d mut utoipa::openapi::Response {
    let response = doc
        .paths
        .paths
        .get_mut(path)
        .and_then(|item| operation(item, method))
        .and_then(|op| op.responses.responses.get_mut(status));
    let Some(RefOr::T(response)) = response else {
        panic!("no {status} answer of {method} {path} to link from");
    };
    response
}

/// A JSON pointer to an operation, as OpenAPI writes them (`#/paths/~1v1~1budgets~1{id}/get`).
fn operation_ref(method: &str, path: &str) -> String {
    format!(
        "#/paths/{}/{method}",
        path.replace('~', "~0").replace('/', "~1")
    )
}

/// `get_budgets_id` for `get /v1/budgets/{id}`: unique per operation, and of the characters
/// OpenAPI allows in component names.
fn link_name(method: &str, path: &str) -> String {
    std::iter::once(method)
        .chain(path.split('/').filter(|s| !s.is_empty() && *s != "v1"))
        .map(|s| s.replace(['{', '}'], "").replace('-', "_"))
        .collect::<Vec<_>>()
        .join("_")
}

/// Removes the links whose target operation is not in `doc`.
fn drop_dangling_links(doc: &mut OpenApi) {
    let present: Vec<String> = doc
        .paths
        .paths
        .iter_mut()
        .flat_map(|(path, item)| {
            ["get", "post", "put", "patch", "delete"]
                .into_iter()
                .filter(|m| operation(item, m).is_some())
                .map(|m| operation_ref(m, path))
                .collect::<Vec<_>>()
        })
        .collect();
    for item in doc.paths.paths.values_mut() {
        for op in operations(item) {
            for response in op.responses.responses.values_mut() {
                if let RefOr::T(response) = response {
                    response.links.retain(|_, link| match link {
                        RefOr::T(l) => present.contains(&l.operation_ref),
                        RefOr::Ref(_) => true,
                    });
                }
            }
        }
    }
}

/// Makes operation ids unique, as OpenAPI requires and client generators rely on: an id that
/// several operations share (each function names its handlers `create`, `read`, …) gets the
/// path's resource words appended (`read_budgets`, `read_agents_learning`); unique ids stay.
fn unique_operation_ids(doc: &mut OpenApi) {
    let mut count: BTreeMap<String, usize> = BTreeMap::new();
    for item in doc.paths.paths.values_mut() {
        for op in operations(item) {
            if let Some(id) = &op.operation_id {
                *count.entry(id.clone()).or_default() += 1;
            }
        }
    }
    for (path, item) in &mut doc.paths.paths {
        let words: Vec<String> = path
            .split('/')
            .filter(|s| !s.is_empty() && *s != "v1" && !s.starts_with('{'))
            .map(|s| s.replace('-', "_"))
            .collect();
        for op in operations(item) {
            if let Some(id) = &mut op.operation_id
                && count.get(id.as_str()).is_some_and(|n| *n > 1)
            {
                *id = format!("{id}_{}", words.join("_"));
            }
        }
    }
}
