"""A tracing processor for the OpenAI Agents SDK (`openai-agents`): each agent run becomes a
trajectory in agentrl.

    from agents import set_trace_processors
    from agentrl.integrations.openai_agents import AgentrlTracingProcessor

    set_trace_processors([AgentrlTracingProcessor(agent_id="support-bot")])

`set_trace_processors` replaces the SDK's default exporter (which sends traces to OpenAI);
`agents.add_trace_processor` keeps it. The SDK only traces message content while
`RunConfig.trace_include_sensitive_data` is on (the default): without it model calls carry no
messages and agentrl rejects them (the rejection is logged).

Each trace is exported when it ends, as GenAI spans (semantic conventions v1.37):

| Agents SDK span            | GenAI span                                                      |
|----------------------------|-----------------------------------------------------------------|
| the trace                  | the root span (`gen_ai.conversation.id`)                        |
| `AgentSpanData`            | `invoke_agent` (`gen_ai.agent.name`, `gen_ai.agent.id`)          |
| `GenerationSpanData`       | `chat` (messages, model, usage)                                 |
| `ResponseSpanData`         | `chat` (Responses API input/output items, instructions, usage)  |
| `FunctionSpanData`         | `execute_tool` (name, arguments, result, call id, error)        |
| other spans (handoffs, guardrails, custom) | not sent: they hold no turn                     |

The conversation is the trace's `group_id` when it has one, else its trace id. A trace with no
group is a conversation of its own, so it is ended explicitly when the trace ends and becomes a
trajectory at once. Traces that share a `group_id` are one conversation that may go on with the
next trace: agentrl ingests it once no span of it arrived for the tenant's quiet period
(`PUT /v1/config/traces`, `quiet_seconds`), or when you end it yourself
(`client.traces.end_conversation(group_id)`).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any

try:
    from agents.tracing import (
        AgentSpanData,
        FunctionSpanData,
        GenerationSpanData,
        ResponseSpanData,
        TracingProcessor,
    )
except ImportError as e:  # pragma: no cover - depends on the environment
    raise ImportError(
        "agentrl.integrations.openai_agents needs the OpenAI Agents SDK: "
        "pip install 'agentrl-sdk[agents]'"
    ) from e

from . import _spans
from ._spans import Exporter, Span

if TYPE_CHECKING:
    from agents.tracing import Trace
    from agents.tracing import Span as AgentsSpan

    from .._client import Client

__all__ = ["AgentrlTracingProcessor"]

_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_MICROSECOND = timedelta(microseconds=1)


@dataclass
class _Run:
    """A trace being recorded: its ended spans, until the trace ends."""

    trace_id: str
    name: str
    conversation_id: str
    grouped: bool
    start_ns: int
    spans: list[AgentsSpan[Any]] = field(default_factory=list)


class AgentrlTracingProcessor(TracingProcessor):
    """Sends each trace of the Agents SDK to agentrl as GenAI spans when it ends.

    `agent_id` names the agentrl agent the runs belong to: one id for every agent of the run,
    or a mapping from the SDK agents' names to ids (agents it does not name are known by their
    name). `client` (else `base_url` / `api_key`, else `AGENTRL_BASE_URL` / `AGENTRL_API_KEY`)
    is where they go. Exports run on a background thread: the agent never waits on them, and
    their failures are logged, not raised.
    """

    def __init__(
        self,
        agent_id: str | Mapping[str, str] | None = None,
        *,
        client: Client | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        service_name: str = "openai-agents",
    ) -> None:
        self._agent_id = agent_id
        self._exporter = Exporter(client, base_url=base_url, api_key=api_key, service_name=service_name)
        self._runs: dict[str, _Run] = {}
        self._lock = threading.Lock()

    def on_trace_start(self, trace: Trace) -> None:
        """Starts recording `trace`."""
        group_id = getattr(trace, "group_id", None)
        run = _Run(
            trace_id=_spans.otlp_id(trace.trace_id, 16),
            name=trace.name,
            conversation_id=group_id or trace.trace_id,
            grouped=bool(group_id),
            start_ns=_spans.now_ns(),
        )
        with self._lock:
            self._runs[trace.trace_id] = run

    def on_span_start(self, span: AgentsSpan[Any]) -> None:
        """Nothing: a span is read once it has ended."""

    def on_span_end(self, span: AgentsSpan[Any]) -> None:
        """Keeps an ended span of a recorded trace until the trace ends."""
        with self._lock:
            run = self._runs.get(span.trace_id)
            if run is not None:
                run.spans.append(span)

    def on_trace_end(self, trace: Trace) -> None:
        """Exports the trace's spans; ends its conversation unless the trace is in a group."""
        with self._lock:
            run = self._runs.pop(trace.trace_id, None)
        if run is None:
            return
        self._exporter.export(_Converter(run, trace.trace_id, self._agent_id).spans())
        if not run.grouped:
            self._exporter.end_conversation(run.conversation_id)

    def force_flush(self) -> None:
        """Waits until the ended traces were sent."""
        self._exporter.flush()

    def shutdown(self) -> None:
        """Sends what is pending and stops the exporter."""
        self._exporter.shutdown()


class _Converter:
    """The GenAI spans of one ended trace."""

    def __init__(self, run: _Run, sdk_trace_id: str, agent_id: str | Mapping[str, str] | None) -> None:
        self._run = run
        self._agent_id = agent_id
        self._root_id = _spans.otlp_id(sdk_trace_id, 8)
        self._by_id = {s.span_id: s for s in run.spans}
        # Tool calls the model asked for that no tool run has answered yet, oldest first.
        self._pending_calls: list[Mapping[str, Any]] = []

    def spans(self) -> list[Span]:
        """The root span, then the spans that map to GenAI spans in their start order (a tool
        run is matched to the call before it)."""
        root = Span(
            trace_id=self._run.trace_id,
            span_id=self._root_id,
            name=self._run.name,
            start_ns=self._run.start_ns,
            end_ns=_spans.now_ns(),
            attributes={
                "gen_ai.conversation.id": self._run.conversation_id,
                **_spans.agent_attributes(None, self._agent_id if isinstance(self._agent_id, str) else None),
            },
        )
        ordered = sorted(self._run.spans, key=lambda s: (_ns(s.started_at), _ns(s.ended_at)))
        return [root, *(s for s in map(self._span, ordered) if s is not None)]

    def _span(self, sdk: AgentsSpan[Any]) -> Span | None:
        """The GenAI span of an SDK span, or None for one that holds no turn."""
        mapped = self._name_and_attributes(sdk)
        if mapped is None:
            return None
        name, attributes = mapped
        attributes["gen_ai.conversation.id"] = self._run.conversation_id
        return Span(
            trace_id=self._run.trace_id,
            span_id=_spans.otlp_id(sdk.span_id, 8),
            parent_span_id=self._parent(sdk),
            name=name,
            start_ns=_ns(sdk.started_at),
            end_ns=_ns(sdk.ended_at),
            attributes=attributes,
            error=_error(sdk),
        )

    def _name_and_attributes(self, sdk: AgentsSpan[Any]) -> tuple[str, dict[str, _spans.AttributeValue]] | None:
        """The GenAI name and attributes of an SDK span (model calls and tool runs name the
        agent they run under, so they need no ancestor to be attributed)."""
        data = sdk.span_data
        if isinstance(data, AgentSpanData):
            return f"invoke_agent {data.name}", {"gen_ai.operation.name": "invoke_agent", **self._agent(data.name)}
        agent = self._agent(self._agent_name(sdk))
        if isinstance(data, GenerationSpanData):
            return f"chat {data.model}" if data.model else "chat", {**self._generation(data), **agent}
        if isinstance(data, ResponseSpanData):
            return "chat", {**self._response(data), **agent}
        if isinstance(data, FunctionSpanData):
            return f"execute_tool {data.name}", {**self._function(data), **agent}
        return None

    def _agent(self, name: str | None) -> dict[str, _spans.AttributeValue]:
        """The attributes naming the agent called `name` (its agentrl id when one is given)."""
        if isinstance(self._agent_id, Mapping):
            agent_id = self._agent_id.get(name) if name is not None else None
        else:
            agent_id = self._agent_id
        return _spans.agent_attributes(name, agent_id)

    def _ancestors(self, sdk: AgentsSpan[Any]) -> Iterable[AgentsSpan[Any]]:
        seen: set[str] = set()
        parent = self._by_id.get(sdk.parent_id) if sdk.parent_id else None
        while parent is not None and parent.span_id not in seen:
            seen.add(parent.span_id)
            yield parent
            parent = self._by_id.get(parent.parent_id) if parent.parent_id else None

    def _agent_name(self, sdk: AgentsSpan[Any]) -> str | None:
        """The name of the agent whose run `sdk` is part of."""
        return next((a.span_data.name for a in self._ancestors(sdk) if isinstance(a.span_data, AgentSpanData)), None)

    def _parent(self, sdk: AgentsSpan[Any]) -> str:
        """The nearest ancestor that is sent (spans that are not sent are skipped), else the root."""
        sent = (AgentSpanData, GenerationSpanData, ResponseSpanData, FunctionSpanData)
        parent = next((a for a in self._ancestors(sdk) if isinstance(a.span_data, sent)), None)
        return _spans.otlp_id(parent.span_id, 8) if parent is not None else self._root_id

    def _generation(self, data: GenerationSpanData) -> dict[str, _spans.AttributeValue]:
        """A Chat Completions call: its messages are chat messages; its output the reply message
        (or, from a streamed call, the Responses-shaped response the SDK assembled)."""
        output = None
        if data.output is not None:
            replies = [m for item in data.output for m in _output_messages(item)]
            output = self._outputs(replies)
        usage = data.usage or {}
        return _spans.chat_attributes(
            input_messages=None if data.input is None else _spans.semconv_messages(data.input),
            output_messages=output,
            request_model=data.model,
            input_tokens=usage.get("input_tokens"),
            output_tokens=usage.get("output_tokens"),
        )

    def _response(self, data: ResponseSpanData) -> dict[str, _spans.AttributeValue]:
        """A Responses API call: input items, the instructions as the system message, output items."""
        response = data.response
        if response is None:
            return _spans.chat_attributes(input_messages=None, output_messages=None)
        messages = [] if data.input is None else _chat_messages(data.input)
        if isinstance(response.instructions, str) and response.instructions:
            messages.insert(0, {"role": "system", "content": response.instructions})
        usage = response.usage
        return _spans.chat_attributes(
            input_messages=_spans.semconv_messages(messages),
            output_messages=self._outputs(_chat_messages(response.output)),
            response_model=response.model,
            response_id=response.id,
            input_tokens=usage.input_tokens if usage is not None else None,
            output_tokens=usage.output_tokens if usage is not None else None,
        )

    def _outputs(self, replies: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """The reply messages in the conventions' form; their tool calls wait for a tool run."""
        for reply in replies:
            self._pending_calls += reply.get("tool_calls") or []
        return [_spans.output_message(reply) for reply in replies]

    def _function(self, data: FunctionSpanData) -> dict[str, _spans.AttributeValue]:
        """A function tool run. The SDK's span does not hold the call id: it is the id of the
        earliest call still unanswered with the tool's name (and the same arguments, when one
        has them) that a model call before it asked for."""
        return _spans.tool_attributes(
            name=data.name, call_id=self._claim_call(data.name, data.input), arguments=data.input,
            result=data.output,
        )

    def _claim_call(self, name: str, arguments: str | None) -> str | None:
        named = [c for c in self._pending_calls if (c.get("function") or {}).get("name") == name]
        wanted = _spans.parsed_arguments(arguments)
        same = [c for c in named if _spans.parsed_arguments(c["function"].get("arguments")) == wanted]
        call = next(iter(same or named), None)
        if call is None:
            return None
        self._pending_calls.remove(call)
        return call.get("id")


def _ns(iso: str | None) -> int:
    """An SDK timestamp (ISO 8601) in Unix nanoseconds (now, for a span not stamped)."""
    if not iso:
        return _spans.now_ns()
    moment = datetime.fromisoformat(iso)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return (moment - _EPOCH) // _MICROSECOND * 1000


def _error(sdk: AgentsSpan[Any]) -> str | None:
    """The span's error as a status message (with the detail the SDK recorded, such as why a
    tool failed)."""
    error = sdk.error
    if not error:
        return None
    detail = (error.get("data") or {}).get("error")
    return f"{error['message']}: {detail}" if detail else error["message"]


def _output_messages(item: Mapping[str, Any]) -> Sequence[Mapping[str, Any]]:
    """A generation's output item as chat messages: a chat message as itself; a streamed call's
    Responses-shaped response by its output items."""
    if "output" in item and "role" not in item:
        return _chat_messages(item["output"])
    return [item]


def _chat_messages(items: str | Iterable[Any]) -> list[dict[str, Any]]:
    """Responses API items (messages, function calls and their outputs; dicts or the SDK's
    models) as chat messages: calls join the assistant message before them, an output is a tool
    message, items that are not messages (reasoning) are left out."""
    if isinstance(items, str):
        return [{"role": "user", "content": items}]
    out: list[dict[str, Any]] = []
    for item in map(_as_mapping, items):
        kind = item.get("type")
        if kind == "function_call":
            call = {"id": item.get("call_id"), "type": "function",
                    "function": {"name": item.get("name", ""), "arguments": item.get("arguments", "")}}
            if not out or out[-1]["role"] != "assistant":
                out.append({"role": "assistant", "content": None})
            out[-1].setdefault("tool_calls", []).append(call)
        elif kind == "function_call_output":
            out.append({"role": "tool", "tool_call_id": item.get("call_id"), "content": item.get("output")})
        elif "role" in item and kind in (None, "message"):
            role = "system" if item["role"] == "developer" else item["role"]
            out.append({"role": role, "content": item.get("content")})
    return out


def _as_mapping(item: Any) -> Mapping[str, Any]:
    """A Responses API item as a dict (the SDK gives typed dicts or pydantic models)."""
    return item if isinstance(item, Mapping) else item.model_dump()
