"""A two-agent, tool-using conversation traced with the OpenTelemetry Python SDK and sent to
agentrl's /v1/traces: the researcher's trace by the SDK's own OTLP/HTTP exporter (protobuf,
gzip), the writer's as OTLP/JSON (the SDK's encoding of the same message, ids in hex as
OTLP/JSON has them), and a span with an all-zero trace id, whose rejection the answer's
partial_success counts.

Usage: otel_export.py BASE_URL API_KEY CONVERSATION_ID; prints {"exported", "rejected"}.
"""

import base64
import json
import sys
import time

import requests
from google.protobuf.json_format import MessageToDict
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceResponse,
)
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanContext, Status, StatusCode

base, key, conversation = sys.argv[1:4]
endpoint = f"{base}/v1/traces"
auth = {"authorization": f"Bearer {key}"}


def messages(*items):
    return json.dumps(list(items))


def text(role, content):
    return {"role": role, "parts": [{"type": "text", "content": content}]}


memory = InMemorySpanExporter()
provider = TracerProvider(resource=Resource.create({"service.name": "research-app"}))
provider.add_span_processor(SimpleSpanProcessor(memory))
tracer = provider.get_tracer("agentrl-test")

system = text("system", "You research, briefly.")
user = text("user", "What is the capital of France?")
call = {
    "role": "assistant",
    "parts": [{"type": "tool_call", "id": "call_9", "name": "search", "arguments": {"q": "capital of France"}}],
}
result = {
    "role": "tool",
    "parts": [{"type": "tool_call_response", "id": "call_9", "response": "Paris is the capital."}],
}

with tracer.start_as_current_span(
    "invoke_agent researcher",
    attributes={
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "researcher",
        "gen_ai.conversation.id": conversation,
    },
):
    with tracer.start_as_current_span("chat gpt-4o") as span:
        span.set_attribute("gen_ai.operation.name", "chat")
        span.set_attribute("gen_ai.input.messages", messages(system, user))
        span.set_attribute("gen_ai.output.messages", messages(call))
        span.set_attribute("gen_ai.usage.input_tokens", 21)
        span.set_attribute("gen_ai.usage.output_tokens", 9)
    with tracer.start_as_current_span("execute_tool search") as span:
        span.set_attribute("gen_ai.operation.name", "execute_tool")
        span.set_attribute("gen_ai.tool.name", "search")
        span.set_attribute("gen_ai.tool.call.id", "call_9")
        span.set_attribute("gen_ai.tool.call.result", "Paris is the capital.")
    with tracer.start_as_current_span("chat gpt-4o") as span:
        span.set_attribute("gen_ai.operation.name", "chat")
        span.set_attribute("gen_ai.input.messages", messages(system, user, call, result))
        span.set_attribute("gen_ai.output.messages", messages(text("assistant", "Paris.")))
researcher = memory.get_finished_spans()
memory.clear()

exporter = OTLPSpanExporter(endpoint=endpoint, headers=auth, compression=Compression.Gzip)
assert exporter.export(researcher) == SpanExportResult.SUCCESS

# The writer, in a trace of its own in the same conversation, as OTLP/JSON.
with tracer.start_as_current_span(
    "invoke_agent writer",
    attributes={
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "writer",
        "gen_ai.conversation.id": conversation,
    },
):
    with tracer.start_as_current_span("chat gpt-4o") as span:
        span.set_attribute("gen_ai.operation.name", "chat")
        span.set_attribute("gen_ai.input.messages", messages(text("user", "Write it up: Paris.")))
        span.set_attribute("gen_ai.output.messages", messages(text("assistant", "The capital is Paris.")))
        span.set_status(Status(StatusCode.OK))
writer = memory.get_finished_spans()


def hex_ids(node):
    """OTLP/JSON writes trace and span ids in hex, where protobuf's JSON mapping has base64."""
    if isinstance(node, dict):
        return {
            k: base64.b64decode(v).hex() if k in ("traceId", "spanId", "parentSpanId") else hex_ids(v)
            for k, v in node.items()
        }
    if isinstance(node, list):
        return [hex_ids(v) for v in node]
    return node


body = hex_ids(MessageToDict(encode_spans(writer)))
answer = requests.post(endpoint, json=body, headers=auth, timeout=10)
assert answer.status_code == 200, answer.text
assert answer.json() == {}, answer.text

# A span with an all-zero (invalid) trace id, encoded by the SDK, counted as rejected.
now = time.time_ns()
invalid = ReadableSpan(
    name="chat",
    context=SpanContext(trace_id=0, span_id=0x1234, is_remote=False),
    attributes={"gen_ai.operation.name": "chat", "gen_ai.conversation.id": conversation},
    start_time=now,
    end_time=now + 1,
    resource=Resource.create({"service.name": "research-app"}),
)
answer = requests.post(
    endpoint,
    data=encode_spans([invalid]).SerializeToString(),
    headers={**auth, "content-type": "application/x-protobuf"},
    timeout=10,
)
assert answer.status_code == 200, answer.text
assert answer.headers["content-type"] == "application/x-protobuf"
response = ExportTraceServiceResponse()
response.ParseFromString(answer.content)
print(json.dumps({"exported": True, "rejected": response.partial_success.rejected_spans}))
