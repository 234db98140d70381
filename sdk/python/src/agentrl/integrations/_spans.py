"""What both integrations share: a span in the form agentrl's `POST /v1/traces` reads (OTLP/JSON,
GenAI semantic conventions v1.37), the attributes of its three kinds of GenAI spans, chat
messages in the conventions' parts format, and an exporter that sends from a background
thread.

The integrations observe an agent framework's own events (OpenAI Agents SDK spans, LangChain
callbacks) and have no OpenTelemetry SDK to lean on, so they build OTLP/JSON themselves; this
module keeps that encoding, and the message format the server parses, in one place.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import logging
import os
import queue
import re
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Union

from .._client import Client, __version__
from .._errors import AgentrlError

logger = logging.getLogger("agentrl.integrations")

#: The values an OTLP attribute holds here (arrays of them included).
Scalar = Union[str, bool, int, float]
AttributeValue = Union[Scalar, Sequence[Scalar]]

_HEX = re.compile(r"[0-9a-f]+")


def otlp_id(value: str, nbytes: int) -> str:
    """A framework's id as an OTLP id of `nbytes` bytes in hex: the id itself when it already is
    one after a `prefix_` (`trace_0af7…` from the Agents SDK, a UUID's hex), else a digest of it,
    so the same id always maps to the same OTLP id (a conversation exported twice counts once)."""
    tail = value.rsplit("_", 1)[-1].replace("-", "").lower()
    if len(tail) == 2 * nbytes and _HEX.fullmatch(tail) and set(tail) != {"0"}:
        return tail
    return hashlib.sha256(value.encode()).hexdigest()[: 2 * nbytes]


def new_span_id() -> str:
    """A random OTLP span id (hex)."""
    return os.urandom(8).hex()


def now_ns() -> int:
    """The current time in Unix nanoseconds, as spans record it."""
    return time.time_ns()


@dataclass
class Span:
    """One finished span, ids in hex and times in Unix nanoseconds."""

    trace_id: str
    span_id: str
    name: str
    start_ns: int
    end_ns: int
    parent_span_id: str | None = None
    attributes: dict[str, AttributeValue] = field(default_factory=dict)
    #: The status message of a span that ended in error.
    error: str | None = None

    def to_otlp(self) -> dict[str, Any]:
        """The span as an OTLP/JSON `Span`."""
        span: dict[str, Any] = {
            "traceId": self.trace_id,
            "spanId": self.span_id,
            "name": self.name,
            "kind": 1,  # SPAN_KIND_INTERNAL
            "startTimeUnixNano": str(self.start_ns),
            "endTimeUnixNano": str(max(self.end_ns, self.start_ns)),
            "attributes": [{"key": k, "value": any_value(v)} for k, v in self.attributes.items()],
        }
        if self.parent_span_id:
            span["parentSpanId"] = self.parent_span_id
        if self.error is not None:
            span["status"] = {"code": 2, "message": self.error}  # STATUS_CODE_ERROR
        return span


def any_value(value: AttributeValue) -> dict[str, Any]:
    """An attribute value as an OTLP/JSON `AnyValue` (64-bit integers as strings, as the
    protobuf JSON mapping writes them)."""
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": value}
    if isinstance(value, str):
        return {"stringValue": value}
    return {"arrayValue": {"values": [any_value(v) for v in value]}}


#: The most span JSON one export request carries: under the server's 6 MiB body limit, with
#: room for the envelope (a long run repeats its history in every model call).
MAX_REQUEST_BYTES = 4 * 1024 * 1024


def export_requests(spans: Sequence[Span], service_name: str) -> list[dict[str, Any]]:
    """OTLP/JSON `ExportTraceServiceRequest`s of `spans` from one service, as many as keep each
    under `MAX_REQUEST_BYTES` (a span larger than that goes alone; the server says why it
    refuses it)."""
    batches: list[list[dict[str, Any]]] = [[]]
    size = 0
    for span in spans:
        encoded = span.to_otlp()
        span_size = len(json.dumps(encoded))
        if batches[-1] and size + span_size > MAX_REQUEST_BYTES:
            batches.append([])
            size = 0
        batches[-1].append(encoded)
        size += span_size
    return [_export_request(batch, service_name) for batch in batches if batch]


def _export_request(spans: list[dict[str, Any]], service_name: str) -> dict[str, Any]:
    return {
        "resourceSpans": [{
            "resource": {"attributes": [{"key": "service.name", "value": any_value(service_name)}]},
            "scopeSpans": [{
                "scope": {"name": "agentrl.integrations", "version": __version__},
                "spans": spans,
            }],
        }]
    }


# --- GenAI attributes --------------------------------------------------------------------------


def compact(attributes: Mapping[str, AttributeValue | None]) -> dict[str, AttributeValue]:
    """`attributes` without the unset ones."""
    return {k: v for k, v in attributes.items() if v is not None}


def agent_attributes(name: str | None, agent_id: str | None) -> dict[str, AttributeValue]:
    """The attributes that name the agent a span belongs to (the server reads the id, else the
    name, on the span or its nearest ancestor)."""
    return compact({"gen_ai.agent.name": name, "gen_ai.agent.id": agent_id})


def chat_attributes(
    *,
    input_messages: Sequence[Mapping[str, Any]] | None,
    output_messages: Sequence[Mapping[str, Any]] | None,
    request_model: str | None = None,
    response_model: str | None = None,
    response_id: str | None = None,
    input_tokens: int | None = None,
    output_tokens: int | None = None,
) -> dict[str, AttributeValue]:
    """A `chat` span's attributes; the messages in the conventions' parts format, as the JSON
    strings `gen_ai.input.messages` / `gen_ai.output.messages` are."""
    return compact({
        "gen_ai.operation.name": "chat",
        "gen_ai.input.messages": None if input_messages is None else json.dumps(list(input_messages)),
        "gen_ai.output.messages": None if output_messages is None else json.dumps(list(output_messages)),
        "gen_ai.request.model": request_model,
        "gen_ai.response.model": response_model,
        "gen_ai.response.id": response_id,
        "gen_ai.usage.input_tokens": input_tokens,
        "gen_ai.usage.output_tokens": output_tokens,
    })


def tool_attributes(
    *, name: str, call_id: str | None, arguments: Any = None, result: Any = None
) -> dict[str, AttributeValue]:
    """An `execute_tool` span's attributes (arguments and result as text)."""
    return compact({
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": name,
        "gen_ai.tool.call.id": call_id,
        "gen_ai.tool.call.arguments": None if arguments is None else as_text(arguments),
        "gen_ai.tool.call.result": None if result is None else as_text(result),
    })


def as_text(value: Any) -> str:
    """A string as itself, anything else as JSON (objects the encoder does not know by `str`)."""
    return value if isinstance(value, str) else json.dumps(value, default=str)


# --- messages ----------------------------------------------------------------------------------

#: Content part types that carry text (chat completions, Responses API, LangChain blocks).
_TEXT_PARTS = {"text", "input_text", "output_text"}


def semconv_messages(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """OpenAI chat messages (`role`, `content` as text or parts, `tool_calls`, `tool_call_id`)
    as messages of the GenAI conventions v1.37 (`role`, `parts`): both frameworks can give
    their messages in the chat form, and this is the one conversion to what the server parses."""
    return [semconv_message(m) for m in messages]


def output_message(message: Mapping[str, Any]) -> dict[str, Any]:
    """A model's reply (a chat message) as an output message of the conventions, whose
    `finish_reason` says whether it stopped to call tools."""
    return semconv_message(message, finish_reason="tool_call" if message.get("tool_calls") else "stop")


def semconv_message(message: Mapping[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
    """One chat message in the conventions' form (`finish_reason` for an output message)."""
    role = str(message.get("role") or "user")
    if role == "tool":
        parts: list[dict[str, Any]] = [{
            "type": "tool_call_response",
            "id": message.get("tool_call_id"),
            "response": content_text(message.get("content")),
        }]
    else:
        parts = content_parts(message.get("content"))
        parts += [tool_call_part(c) for c in message.get("tool_calls") or ()]
    out: dict[str, Any] = {"role": role, "parts": parts}
    if finish_reason is not None:
        out["finish_reason"] = finish_reason
    return out


def content_parts(content: Any) -> list[dict[str, Any]]:
    """Message content (a string, or a list of content parts) as the conventions' parts: text
    parts as text, other parts by their type (the server names them in brackets)."""
    if content is None or content == "":
        return []
    if isinstance(content, str):
        return [{"type": "text", "content": content}]
    parts: list[dict[str, Any]] = []
    for part in content:
        if isinstance(part, str):
            parts.append({"type": "text", "content": part})
        elif isinstance(part, Mapping) and part.get("type") in _TEXT_PARTS:
            parts.append({"type": "text", "content": str(part.get("text", ""))})
        elif isinstance(part, Mapping):
            parts.append({"type": str(part.get("type", "unknown"))})
    return parts


def content_text(content: Any) -> str:
    """Message content as plain text (a tool result's)."""
    return "".join(p.get("content", "") for p in content_parts(content) if p["type"] == "text")


def tool_call_part(call: Mapping[str, Any]) -> dict[str, Any]:
    """A chat tool call (`{id, function: {name, arguments}}`) as a `tool_call` part, its
    arguments as the object they encode when they are JSON."""
    function = call.get("function") or {}
    return {
        "type": "tool_call",
        "id": call.get("id"),
        "name": function.get("name", ""),
        "arguments": parsed_arguments(function.get("arguments")),
    }


def parsed_arguments(arguments: Any) -> Any:
    """Tool call arguments as the JSON value a string of them encodes, else as given."""
    if isinstance(arguments, str):
        try:
            return json.loads(arguments)
        except ValueError:
            return arguments
    return arguments


# --- export ------------------------------------------------------------------------------------


@dataclass
class _Export:
    spans: list[Span]


@dataclass
class _End:
    conversation_id: str


@dataclass
class _Flush:
    done: threading.Event


#: What the thread is sent; None stops it.
_Item = Union[_Export, _End, _Flush, None]

#: Exports and ends waiting at most (while agentrl cannot be reached): past it new ones are
#: dropped, with a warning, rather than the agent's memory growing or the agent waiting.
MAX_QUEUED = 1000


class Exporter:
    """Sends spans and conversation ends to agentrl from one background thread, in the order
    they were submitted (a conversation's end follows its spans), so the agent never waits on
    HTTP. Failures are logged, never raised into the agent: tracing must not break the run it
    observes. `flush` waits for what was submitted; `shutdown` drains and stops (also at exit).
    """

    def __init__(
        self,
        client: Client | None = None,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        service_name: str,
    ) -> None:
        self._owns_client = client is None
        self._client = client if client is not None else Client(base_url, api_key)
        self._service_name = service_name
        self._queue: queue.Queue[_Item] = queue.Queue(MAX_QUEUED)
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="agentrl-exporter", daemon=True)
        self._thread.start()
        atexit.register(self.shutdown)

    def export(self, spans: Sequence[Span]) -> None:
        """Queues `spans` for one export request."""
        if spans:
            self._put(_Export(list(spans)))

    def end_conversation(self, conversation_id: str) -> None:
        """Queues the explicit end of a conversation (after the spans queued before it), so its
        trajectories are ingested now rather than after the quiet period."""
        self._put(_End(conversation_id))

    def flush(self, timeout: float | None = None) -> bool:
        """Waits until everything queued so far was sent (or failed); False on timeout."""
        if self._closed or not self._thread.is_alive():
            return True
        done = threading.Event()
        self._queue.put(_Flush(done))
        return done.wait(timeout)

    def shutdown(self, timeout: float | None = 10.0) -> None:
        """Sends what is queued, then stops the thread (and closes the client it made); after
        `timeout` seconds what is left is given up, with a warning."""
        if self._closed:
            return
        self._closed = True
        atexit.unregister(self.shutdown)
        try:
            self._queue.put(None, timeout=timeout)
        except queue.Full:
            pass
        self._thread.join(timeout)
        if self._thread.is_alive():
            logger.warning("agentrl exporter: shut down after %ss with exports still unsent", timeout)
        elif self._owns_client:
            self._client.close()

    def _put(self, item: _Export | _End) -> None:
        """Queues an item without ever waiting: one that does not fit is dropped and logged."""
        if self._closed:
            logger.warning("agentrl exporter is shut down: dropped %s", _describe(item))
            return
        try:
            self._queue.put_nowait(item)
        except queue.Full:
            logger.warning("agentrl exporter has %d items waiting: dropped %s", MAX_QUEUED, _describe(item))

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            try:
                self._send(item)
            except AgentrlError as e:  # an answer or a connection that failed, retries spent
                logger.warning("agentrl: %s failed: %s", _describe(item), e)
            except Exception:  # the agent must not see tracing failures
                logger.exception("agentrl: %s failed", _describe(item))

    def _send(self, item: _Export | _End | _Flush) -> None:
        """Sends one item (on the exporter's thread)."""
        if isinstance(item, _Flush):
            item.done.set()
        elif isinstance(item, _Export):
            for request in export_requests(item.spans, self._service_name):
                _log_partial_success(self._client.request("POST", "/v1/traces", json=request))
        else:
            self._client.traces.end_conversation(item.conversation_id)


def _describe(item: _Export | _End | _Flush) -> str:
    """What an item does, for a log line."""
    if isinstance(item, _Export):
        return f"exporting {len(item.spans)} span(s)"
    if isinstance(item, _End):
        return f"ending conversation {item.conversation_id!r}"
    return "flush"


def _log_partial_success(answer: Any) -> None:
    """Logs the spans the server rejected (OTLP's `partial_success`: the export itself took)."""
    partial = answer.get("partialSuccess") if isinstance(answer, dict) else None
    if partial and int(partial.get("rejectedSpans") or 0):
        logger.warning(
            "agentrl rejected %s span(s): %s", partial["rejectedSpans"], partial.get("errorMessage", "")
        )
