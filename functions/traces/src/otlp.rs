//! OTLP/HTTP trace export as the OpenTelemetry protocol specifies it: the
//! `ExportTraceServiceRequest` in binary protobuf (`application/x-protobuf`) or OTLP/JSON
//! (`application/json`: lowerCamelCase keys, trace and span ids as hex, 64-bit integers as
//! strings or numbers, enums as integers, unknown fields ignored), optionally gzip-compressed;
//! answers `ExportTraceServiceResponse`, failures a `google.rpc.Status`, both in the request's
//! encoding. One set of message types serves both encodings; fields the builder does not
//! read (kinds, links, events, dropped counts) are skipped by both decoders.

use std::collections::BTreeMap;
use std::io::Read;

use agentrl_core::traces::{INHERITED, Span, SpanError};
use base64::Engine;
use prost::Message;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

/// The request.
#[derive(Clone, PartialEq, Message, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ExportTraceServiceRequest {
    #[prost(message, repeated, tag = "1")]
    #[serde(default)]
    pub resource_spans: Vec<ResourceSpans>,
}

#[derive(Clone, PartialEq, Message, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ResourceSpans {
    #[prost(message, optional, tag = "1")]
    #[serde(default)]
    pub resource: Option<Resource>,
    #[prost(message, repeated, tag = "2")]
    #[serde(default)]
    pub scope_spans: Vec<ScopeSpans>,
}

#[derive(Clone, PartialEq, Message, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Resource {
    #[prost(message, repeated, tag = "1")]
    #[serde(default)]
    pub attributes: Vec<KeyValue>,
}

#[derive(Clone, PartialEq, Message, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ScopeSpans {
    #[prost(message, repeated, tag = "2")]
    #[serde(default)]
    pub spans: Vec<WireSpan>,
}

#[derive(Clone, PartialEq, Message, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct WireSpan {
    #[prost(bytes = "vec", tag = "1")]
    #[serde(default, deserialize_with = "hex_id")]
    pub trace_id: Vec<u8>,
    #[prost(bytes = "vec", tag = "2")]
    #[serde(default, deserialize_with = "hex_id")]
    pub span_id: Vec<u8>,
    #[prost(bytes = "vec", tag = "4")]
    #[serde(default, deserialize_with = "hex_id")]
    pub parent_span_id: Vec<u8>,
    #[prost(string, tag = "5")]
    #[serde(default)]
    pub name: String,
    #[prost(fixed64, tag = "7")]
    #[serde(default, deserialize_with = "integer")]
    pub start_time_unix_nano: u64,
    #[prost(fixed64, tag = "8")]
    #[serde(default, deserialize_with = "integer")]
    pub end_time_unix_nano: u64,
    #[prost(message, repeated, tag = "9")]
    #[serde(default)]
    pub attributes: Vec<KeyValue>,
    #[prost(message, optional, tag = "15")]
    #[serde(default)]
    pub status: Option<Status>,
}

/// A span's status: code 2 is `STATUS_CODE_ERROR`.
#[derive(Clone, PartialEq, Message, Deserialize)]
pub(crate) struct Status {
    #[prost(string, tag = "2")]
    #[serde(default)]
    pub message: String,
    #[prost(int32, tag = "3")]
    #[serde(default, deserialize_with = "status_code")]
    pub code: i32,
}

#[derive(Clone, PartialEq, Message, Deserialize)]
pub(crate) struct KeyValue {
    #[prost(string, tag = "1")]
    #[serde(default)]
    pub key: String,
    #[prost(message, optional, tag = "2")]
    #[serde(default)]
    pub value: Option<AnyValue>,
}

#[derive(Clone, PartialEq, Message, Deserialize)]
pub(crate) struct AnyValue {
    #[prost(oneof = "Any", tags = "1, 2, 3, 4, 5, 6, 7")]
    #[serde(flatten)]
    pub value: Option<Any>,
}

/// `AnyValue`'s oneof; OTLP/JSON names each case `{case}Value`.
#[derive(Clone, PartialEq, prost::Oneof, Deserialize)]
pub(crate) enum Any {
    #[prost(string, tag = "1")]
    #[serde(rename = "stringValue")]
    String(String),
    #[prost(bool, tag = "2")]
    #[serde(rename = "boolValue")]
    Bool(bool),
    #[prost(int64, tag = "3")]
    #[serde(rename = "intValue")]
    Int(#[serde(deserialize_with = "integer")] i64),
    #[prost(double, tag = "4")]
    #[serde(rename = "doubleValue")]
    Double(f64),
    #[prost(message, tag = "5")]
    #[serde(rename = "arrayValue")]
    Array(ArrayValue),
    #[prost(message, tag = "6")]
    #[serde(rename = "kvlistValue")]
    Kvlist(KeyValueList),
    #[prost(bytes, tag = "7")]
    #[serde(rename = "bytesValue")]
    Bytes(#[serde(deserialize_with = "base64_bytes")] Vec<u8>),
}

#[derive(Clone, PartialEq, Message, Deserialize)]
pub(crate) struct ArrayValue {
    #[prost(message, repeated, tag = "1")]
    #[serde(default)]
    pub values: Vec<AnyValue>,
}

#[derive(Clone, PartialEq, Message, Deserialize)]
pub(crate) struct KeyValueList {
    #[prost(message, repeated, tag = "1")]
    #[serde(default)]
    pub values: Vec<KeyValue>,
}

/// The answer: `partial_success` set only when some spans were rejected.
#[derive(Clone, PartialEq, Message)]
pub(crate) struct ExportTraceServiceResponse {
    #[prost(message, optional, tag = "1")]
    pub partial_success: Option<ExportTracePartialSuccess>,
}

#[derive(Clone, PartialEq, Message)]
pub(crate) struct ExportTracePartialSuccess {
    #[prost(int64, tag = "1")]
    pub rejected_spans: i64,
    #[prost(string, tag = "2")]
    pub error_message: String,
}

/// `google.rpc.Status`, the body of a failed export.
#[derive(Clone, PartialEq, Message)]
pub(crate) struct RpcStatus {
    #[prost(int32, tag = "1")]
    pub code: i32,
    #[prost(string, tag = "2")]
    pub message: String,
}

fn hex_id<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
    let s = String::deserialize(d)?;
    hex::decode(&s).map_err(|e| serde::de::Error::custom(format!("not a hex id: {e}")))
}

/// A 64-bit integer as JSON writes it: a decimal string (the protobuf JSON mapping) or a
/// number.
fn integer<'de, D: Deserializer<'de>, T>(d: D) -> Result<T, D::Error>
where
    T: std::str::FromStr + TryFrom<u64> + TryFrom<i64>,
{
    match Value::deserialize(d)? {
        Value::String(s) => s
            .parse()
            .map_err(|_| serde::de::Error::custom(format!("not an integer: {s:?}"))),
        Value::Number(n) => n
            .as_u64()
            .and_then(|u| T::try_from(u).ok())
            .or_else(|| n.as_i64().and_then(|i| T::try_from(i).ok()))
            .ok_or_else(|| serde::de::Error::custom(format!("not an integer in range: {n}"))),
        other => Err(serde::de::Error::custom(format!("not an integer: {other}"))),
    }
}

/// A status code as an integer, or by its enum name.
fn status_code<'de, D: Deserializer<'de>>(d: D) -> Result<i32, D::Error> {
    match Value::deserialize(d)? {
        Value::String(s) => match s.as_str() {
            "STATUS_CODE_UNSET" => Ok(0),
            "STATUS_CODE_OK" => Ok(1),
            "STATUS_CODE_ERROR" => Ok(2),
            other => other
                .parse()
                .map_err(|_| serde::de::Error::custom(format!("not a status code: {other:?}"))),
        },
        Value::Number(n) => n
            .as_i64()
            .and_then(|i| i32::try_from(i).ok())
            .ok_or_else(|| serde::de::Error::custom(format!("not a status code: {n}"))),
        other => Err(serde::de::Error::custom(format!(
            "not a status code: {other}"
        ))),
    }
}

fn base64_bytes<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
    let s = String::deserialize(d)?;
    base64::engine::general_purpose::STANDARD
        .decode(&s)
        .map_err(|e| serde::de::Error::custom(format!("not base64: {e}")))
}

/// How the request was encoded (and the answer will be).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Encoding {
    Protobuf,
    Json,
}

impl Encoding {
    /// The encoding a `Content-Type` names; `None` for another.
    pub(crate) fn of(content_type: &str) -> Option<Self> {
        let essence = content_type.split(';').next().unwrap_or("").trim();
        match essence.to_ascii_lowercase().as_str() {
            "application/x-protobuf" | "application/protobuf" => Some(Self::Protobuf),
            "application/json" => Some(Self::Json),
            _ => None,
        }
    }

    pub(crate) fn content_type(self) -> &'static str {
        match self {
            Self::Protobuf => "application/x-protobuf",
            Self::Json => "application/json",
        }
    }
}

/// Why a body could not be read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum DecodeError {
    /// Past the decompressed size limit: 413.
    #[error("the decompressed body exceeds {0} bytes")]
    TooLarge(usize),
    /// Not gzip, not the message: 400.
    #[error("{0}")]
    Malformed(String),
}

/// The body, gunzipped when `gzip` (to at most `limit` bytes).
pub(crate) fn inflate(body: &[u8], gzip: bool, limit: usize) -> Result<Vec<u8>, DecodeError> {
    if !gzip {
        return Ok(body.to_vec());
    }
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(body)
        .take(limit as u64 + 1)
        .read_to_end(&mut out)
        .map_err(|e| DecodeError::Malformed(format!("not gzip: {e}")))?;
    if out.len() > limit {
        return Err(DecodeError::TooLarge(limit));
    }
    Ok(out)
}

/// The request in `encoding`.
pub(crate) fn decode(
    bytes: &[u8],
    encoding: Encoding,
) -> Result<ExportTraceServiceRequest, DecodeError> {
    match encoding {
        Encoding::Protobuf => ExportTraceServiceRequest::decode(bytes)
            .map_err(|e| DecodeError::Malformed(format!("not an ExportTraceServiceRequest: {e}"))),
        Encoding::Json => serde_json::from_slice(bytes)
            .map_err(|e| DecodeError::Malformed(format!("not an ExportTraceServiceRequest: {e}"))),
    }
}

/// The spans of a request, each with the resource attributes it inherits; the spans that
/// cannot be used, with why.
pub(crate) fn spans(request: ExportTraceServiceRequest) -> (Vec<Span>, Vec<SpanError>) {
    let mut good = Vec::new();
    let mut bad = Vec::new();
    let mut position = 0usize;
    for resource_spans in request.resource_spans {
        let inherited: Vec<(String, Value)> = resource_spans
            .resource
            .map(|r| attributes(r.attributes))
            .unwrap_or_default()
            .into_iter()
            .filter(|(k, _)| INHERITED.contains(&k.as_str()))
            .collect();
        for span in resource_spans.scope_spans.into_iter().flat_map(|s| s.spans) {
            position += 1;
            match convert(span, &inherited) {
                Ok(s) => good.push(s),
                Err((span, reason)) => bad.push(SpanError {
                    span: span.unwrap_or_else(|| format!("#{position}")),
                    reason,
                }),
            }
        }
    }
    (good, bad)
}

fn convert(
    span: WireSpan,
    inherited: &[(String, Value)],
) -> Result<Span, (Option<String>, String)> {
    let span_id = Span::id_hex("span_id", &span.span_id, 8).map_err(|e| (None, e))?;
    let fault = |e: String| (Some(span_id.clone()), e);
    let trace_id = Span::id_hex("trace_id", &span.trace_id, 16).map_err(fault)?;
    let parent_span_id = if span.parent_span_id.is_empty() {
        None
    } else {
        Some(Span::id_hex("parent_span_id", &span.parent_span_id, 8).map_err(fault)?)
    };
    let mut attributes: BTreeMap<String, Value> = inherited.iter().cloned().collect();
    attributes.extend(self::attributes(span.attributes));
    let error = span.status.filter(|s| s.code == 2).map(|s| {
        if s.message.is_empty() {
            "error".to_owned()
        } else {
            s.message
        }
    });
    Ok(Span {
        trace_id,
        span_id,
        parent_span_id,
        name: span.name,
        start_ns: span.start_time_unix_nano,
        end_ns: span.end_time_unix_nano,
        attributes,
        error,
    })
}

fn attributes(list: Vec<KeyValue>) -> Vec<(String, Value)> {
    list.into_iter()
        .map(|kv| (kv.key, kv.value.map_or(Value::Null, value)))
        .collect()
}

fn value(v: AnyValue) -> Value {
    match v.value {
        None => Value::Null,
        Some(Any::String(s)) => Value::String(s),
        Some(Any::Bool(b)) => Value::Bool(b),
        Some(Any::Int(i)) => Value::from(i),
        Some(Any::Double(d)) => serde_json::Number::from_f64(d).map_or(Value::Null, Value::Number),
        Some(Any::Array(a)) => Value::Array(a.values.into_iter().map(value).collect()),
        Some(Any::Kvlist(l)) => Value::Object(attributes(l.values).into_iter().collect()),
        Some(Any::Bytes(b)) => Value::String(base64::engine::general_purpose::STANDARD.encode(b)),
    }
}

/// The export's answer in `encoding`: `{}` when every span was taken, else the count and
/// reasons of those rejected.
pub(crate) fn response(rejected: &[SpanError], encoding: Encoding) -> Vec<u8> {
    let partial_success = (!rejected.is_empty()).then(|| ExportTracePartialSuccess {
        rejected_spans: i64::try_from(rejected.len()).unwrap_or(i64::MAX),
        error_message: summary(rejected),
    });
    match encoding {
        Encoding::Protobuf => ExportTraceServiceResponse { partial_success }.encode_to_vec(),
        Encoding::Json => json(&JsonResponse {
            partial_success: partial_success.map(|p| JsonPartialSuccess {
                rejected_spans: p.rejected_spans.to_string(),
                error_message: p.error_message,
            }),
        }),
    }
}

fn json(body: &impl Serialize) -> Vec<u8> {
    serde_json::to_vec(body).unwrap_or_default()
}

/// `ExportTraceServiceResponse` in OTLP/JSON: `{}` when every span was taken.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = ExportTraceServiceResponse)]
#[serde(rename_all = "camelCase")]
pub(crate) struct JsonResponse {
    #[serde(skip_serializing_if = "Option::is_none")]
    partial_success: Option<JsonPartialSuccess>,
}

/// Spans that could not be used.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = ExportTracePartialSuccess)]
#[serde(rename_all = "camelCase")]
pub(crate) struct JsonPartialSuccess {
    /// How many (a 64-bit integer: a decimal string in JSON).
    rejected_spans: String,
    /// Why, for the first few.
    error_message: String,
}

/// `google.rpc.Status` in JSON, the body of a failed export.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = OtlpStatus)]
pub(crate) struct JsonStatus {
    /// The gRPC status code: 3 `INVALID_ARGUMENT`, 8 `RESOURCE_EXHAUSTED`,
    /// 12 `UNIMPLEMENTED`, 14 `UNAVAILABLE`.
    code: i32,
    message: String,
}

/// The first few rejections' reasons, and how many more there were.
fn summary(rejected: &[SpanError]) -> String {
    const SHOWN: usize = 5;
    let mut message: Vec<String> = rejected
        .iter()
        .take(SHOWN)
        .map(ToString::to_string)
        .collect();
    if rejected.len() > SHOWN {
        message.push(format!("and {} more", rejected.len() - SHOWN));
    }
    message.join("; ")
}

/// A failed export's body: a `google.rpc.Status` with the gRPC code for the HTTP status
/// (3 `INVALID_ARGUMENT`, 8 `RESOURCE_EXHAUSTED`, ...), in `encoding`.
pub(crate) fn status(code: i32, message: &str, encoding: Encoding) -> Vec<u8> {
    match encoding {
        Encoding::Protobuf => RpcStatus {
            code,
            message: message.to_owned(),
        }
        .encode_to_vec(),
        Encoding::Json => json(&JsonStatus {
            code,
            message: message.to_owned(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kv(key: &str, value: Any) -> KeyValue {
        KeyValue {
            key: key.into(),
            value: Some(AnyValue { value: Some(value) }),
        }
    }

    fn request() -> ExportTraceServiceRequest {
        let span = |id: u8, trace: [u8; 16]| WireSpan {
            trace_id: trace.to_vec(),
            span_id: vec![0, 0, 0, 0, 0, 0, 0, id],
            parent_span_id: Vec::new(),
            name: "chat m".into(),
            start_time_unix_nano: 1_700_000_000_000_000_000,
            end_time_unix_nano: 1_700_000_000_500_000_000,
            attributes: vec![
                kv("gen_ai.operation.name", Any::String("chat".into())),
                kv("gen_ai.usage.input_tokens", Any::Int(12)),
                kv(
                    "list",
                    Any::Array(ArrayValue {
                        values: vec![AnyValue {
                            value: Some(Any::Bool(true)),
                        }],
                    }),
                ),
            ],
            status: Some(Status {
                message: "boom".into(),
                code: 2,
            }),
        };
        ExportTraceServiceRequest {
            resource_spans: vec![ResourceSpans {
                resource: Some(Resource {
                    attributes: vec![
                        kv("service.name", Any::String("tutor".into())),
                        kv("process.pid", Any::Int(7)),
                    ],
                }),
                scope_spans: vec![ScopeSpans {
                    spans: vec![span(1, [7; 16]), span(2, [0; 16])],
                }],
            }],
        }
    }

    /// Both encodings of one request read the same; the all-zero trace id is rejected.
    #[test]
    fn protobuf_and_json_decode_alike() {
        let from_proto = decode(&request().encode_to_vec(), Encoding::Protobuf).unwrap();
        let json = serde_json::json!({"resourceSpans": [{
            "resource": {"attributes": [
                {"key": "service.name", "value": {"stringValue": "tutor"}},
                {"key": "process.pid", "value": {"intValue": "7"}},
            ]},
            "scopeSpans": [{"scope": {"name": "x"}, "spans": [
                {"traceId": "07070707070707070707070707070707", "spanId": "0000000000000001",
                 "parentSpanId": "", "name": "chat m", "kind": 3,
                 "startTimeUnixNano": "1700000000000000000", "endTimeUnixNano": 1_700_000_000_500_000_000_u64,
                 "attributes": [
                    {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
                    {"key": "gen_ai.usage.input_tokens", "value": {"intValue": 12}},
                    {"key": "list", "value": {"arrayValue": {"values": [{"boolValue": true}]}}},
                 ],
                 "status": {"code": 2, "message": "boom"}},
                {"traceId": "00000000000000000000000000000000", "spanId": "0000000000000002",
                 "name": "chat m", "startTimeUnixNano": "1700000000000000000",
                 "endTimeUnixNano": "1700000000500000000",
                 "attributes": [
                    {"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
                    {"key": "gen_ai.usage.input_tokens", "value": {"intValue": "12"}},
                    {"key": "list", "value": {"arrayValue": {"values": [{"boolValue": true}]}}},
                 ],
                 "status": {"code": "STATUS_CODE_ERROR", "message": "boom"}},
            ]}],
        }]});
        let from_json = decode(json.to_string().as_bytes(), Encoding::Json).unwrap();
        assert_eq!(from_proto, from_json);
        let (spans, rejected) = self::spans(from_json);
        assert_eq!(spans.len(), 1);
        let s = &spans[0];
        assert_eq!(s.trace_id, "07".repeat(16));
        assert_eq!(s.span_id, "0000000000000001");
        assert_eq!(s.parent_span_id, None);
        assert_eq!(s.str("service.name"), Some("tutor"));
        assert!(!s.attributes.contains_key("process.pid"));
        assert_eq!(s.int("gen_ai.usage.input_tokens"), Some(12));
        assert_eq!(s.attributes["list"], serde_json::json!([true]));
        assert_eq!(s.error.as_deref(), Some("boom"));
        assert_eq!(rejected.len(), 1);
        assert!(rejected[0].reason.contains("all zeros"), "{rejected:?}");
    }

    #[test]
    fn responses_and_failures_in_both_encodings() {
        assert_eq!(response(&[], Encoding::Json), b"{}");
        assert!(response(&[], Encoding::Protobuf).is_empty());
        let rejected = vec![SpanError {
            span: "01".into(),
            reason: "bad".into(),
        }];
        let answer =
            ExportTraceServiceResponse::decode(response(&rejected, Encoding::Protobuf).as_slice())
                .unwrap();
        let partial = answer.partial_success.unwrap();
        assert_eq!(partial.rejected_spans, 1);
        assert_eq!(partial.error_message, "span 01: bad");
        let json: Value = serde_json::from_slice(&response(&rejected, Encoding::Json)).unwrap();
        assert_eq!(json["partialSuccess"]["rejectedSpans"], "1");
        let status = RpcStatus::decode(status(3, "no", Encoding::Protobuf).as_slice()).unwrap();
        assert_eq!((status.code, status.message.as_str()), (3, "no"));
        assert!(matches!(
            decode(b"\xff\xff\xff", Encoding::Protobuf),
            Err(DecodeError::Malformed(_))
        ));
        let big = vec![b'a'; 1000];
        let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        std::io::Write::write_all(&mut gz, &big).unwrap();
        let gz = gz.finish().unwrap();
        assert_eq!(inflate(&gz, true, 1000).unwrap(), big);
        assert!(matches!(
            inflate(&gz, true, 999),
            Err(DecodeError::TooLarge(999))
        ));
        assert!(matches!(
            inflate(b"plain", true, 999),
            Err(DecodeError::Malformed(_))
        ));
    }
}
