"""A LangChain / LangGraph callback handler: each run of a chain or graph becomes a trajectory in
agentrl.

    from agentrl.integrations.langchain import AgentrlCallbackHandler

    handler = AgentrlCallbackHandler(agent_id="support-bot")
    graph.invoke(inputs, config={"callbacks": [handler], "configurable": {"thread_id": "t-1"}})

The outermost run the handler sees (no parent, or a parent it never saw) is the conversation;
its model calls and tool runs under it become GenAI spans (semantic conventions v1.37):

| LangChain callback                                | GenAI span                                               |
|---------------------------------------------------|----------------------------------------------------------|
| the outermost run (`on_chain_start`, …)           | `invoke_agent` root span (`gen_ai.agent.id`, run name)    |
| `on_chat_model_start` … `on_llm_end` / `_error`    | `chat` (input messages, reply with tool calls, usage, model) |
| `on_tool_start` … `on_tool_end` / `_error`         | `execute_tool` (name, `tool_call_id`, arguments, result, error) |

The conversation id is the handler's `conversation_id` when given, else LangGraph's `thread_id`
(from the run's metadata), else the outermost run's id. When the outermost run ends its spans
are exported and the conversation is ended explicitly, so it becomes a trajectory at once;
except for a conversation that the next invocation may continue — a LangGraph thread, or the
handler's own `conversation_id` — which agentrl ingests once no span of it arrived for the
tenant's quiet period (`PUT /v1/config/traces`, `quiet_seconds`), or when you end it
(`client.traces.end_conversation(id)`).

The handler is thread-safe and does no I/O in callbacks (exports run on a background thread),
so it runs inline in async graphs too.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from uuid import UUID

try:
    from langchain_core.callbacks import BaseCallbackHandler
    from langchain_core.messages import BaseMessage, ToolMessage, convert_to_openai_messages
    from langchain_core.outputs import ChatGeneration, LLMResult
except ImportError as e:  # pragma: no cover - depends on the environment
    raise ImportError(
        "agentrl.integrations.langchain needs LangChain: pip install 'agentrl-sdk[langchain]'"
    ) from e

from . import _spans
from ._spans import Exporter, Span

if TYPE_CHECKING:
    from .._client import Client

__all__ = ["AgentrlCallbackHandler"]


@dataclass
class _Conversation:
    """The spans of one outermost run, until it ends."""

    conversation_id: str
    #: A LangGraph thread or the handler's named conversation, which later invocations may
    #: continue: left open.
    continued: bool
    root: Span
    spans: list[Span] = field(default_factory=list)
    #: The runs under the outermost one (itself included), to find it from any of them.
    runs: set[UUID] = field(default_factory=set)


class AgentrlCallbackHandler(BaseCallbackHandler):
    """Sends each outermost LangChain / LangGraph run to agentrl as GenAI spans when it ends.

    `agent_id` is the agentrl agent the runs belong to (else they are known by the outermost
    run's name); `conversation_id` puts every run of this handler in one conversation, left open
between runs. `client`
    (else `base_url` / `api_key`, else `AGENTRL_BASE_URL` / `AGENTRL_API_KEY`) is where they go.
    Failures to send are logged, never raised into the chain.
    """

    #: Called on the event loop in async runs: callbacks only record, never block.
    run_inline = True

    def __init__(
        self,
        agent_id: str | None = None,
        *,
        conversation_id: str | None = None,
        client: Client | None = None,
        base_url: str | None = None,
        api_key: str | None = None,
        service_name: str = "langchain",
    ) -> None:
        self._agent_id = agent_id
        self._conversation_id = conversation_id
        self._exporter = Exporter(client, base_url=base_url, api_key=api_key, service_name=service_name)
        self._lock = threading.Lock()
        self._root_of: dict[UUID, UUID] = {}
        self._conversations: dict[UUID, _Conversation] = {}
        #: Model calls and tool runs under way, by run id.
        self._open: dict[UUID, Span] = {}

    # --- runs --------------------------------------------------------------------------------

    def on_chain_start(self, serialized: dict[str, Any] | None, inputs: Any, *, run_id: UUID,
                       parent_run_id: UUID | None = None, metadata: dict[str, Any] | None = None,
                       **kwargs: Any) -> None:
        """A chain or graph (node) run: the outermost one opens the conversation."""
        self._enter(run_id, parent_run_id, metadata, _run_name(serialized, kwargs))

    def on_chain_end(self, outputs: Any, *, run_id: UUID, **kwargs: Any) -> None:
        """Ends the conversation when the outermost run ends."""
        self._leave(run_id, error=None)

    def on_chain_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        """Ends the conversation, in error, when the outermost run fails."""
        self._leave(run_id, error=_describe(error))

    def on_chat_model_start(self, serialized: dict[str, Any] | None, messages: list[list[BaseMessage]], *,
                            run_id: UUID, parent_run_id: UUID | None = None,
                            metadata: dict[str, Any] | None = None, **kwargs: Any) -> None:
        """A model call: its span opens with the messages sent (of the first prompt, in the rare
        batched call: its reply is the one `on_llm_end` reads)."""
        self._open_span(run_id, parent_run_id, metadata, _run_name(serialized, kwargs), "chat", _spans.chat_attributes(
            input_messages=_spans.semconv_messages(convert_to_openai_messages(messages[0])),
            output_messages=None,
            request_model=_request_model(metadata, kwargs.get("invocation_params")),
        ))

    def on_llm_end(self, response: LLMResult, *, run_id: UUID, **kwargs: Any) -> None:
        """The reply of a model call, with its tool calls, usage and model."""
        self._close_span(run_id, _reply_attributes(response), error=None)

    def on_llm_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        """A model call that failed."""
        self._close_span(run_id, {}, error=_describe(error))

    def on_tool_start(self, serialized: dict[str, Any] | None, input_str: str, *, run_id: UUID,
                      parent_run_id: UUID | None = None, metadata: dict[str, Any] | None = None,
                      inputs: dict[str, Any] | None = None, **kwargs: Any) -> None:
        """A tool run: its span opens with the call it answers (`tool_call_id`, which LangChain
        passes when the tool was invoked with a model's tool call) and its arguments."""
        name = (serialized or {}).get("name") or kwargs.get("name") or "tool"
        self._open_span(run_id, parent_run_id, metadata, name, "execute_tool", _spans.tool_attributes(
            name=name, call_id=kwargs.get("tool_call_id"), arguments=inputs if inputs is not None else input_str,
        ))

    def on_tool_end(self, output: Any, *, run_id: UUID, **kwargs: Any) -> None:
        """The tool's result (a `ToolMessage` with status `error` is a failed run)."""
        failed = isinstance(output, ToolMessage) and output.status == "error"
        result = _result(output)
        self._close_span(run_id, _spans.compact({"gen_ai.tool.call.result": result}),
                         error=(result or "error") if failed else None)

    def on_tool_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        """A tool run that raised."""
        self._close_span(run_id, {}, error=_describe(error))

    # --- the handler's own API ----------------------------------------------------------------

    def flush(self, timeout: float | None = None) -> bool:
        """Waits until the ended runs were sent; False on timeout."""
        return self._exporter.flush(timeout)

    def shutdown(self) -> None:
        """Sends what is pending and stops the exporter."""
        self._exporter.shutdown()

    # --- bookkeeping --------------------------------------------------------------------------

    def _enter(self, run_id: UUID, parent_run_id: UUID | None, metadata: Mapping[str, Any] | None,
               name: str) -> _Conversation:
        """Registers a run under its conversation, opening one for an outermost run."""
        with self._lock:
            root = self._root_of.get(parent_run_id) if parent_run_id is not None else None
            if root is None:
                root = run_id
                self._conversations[run_id] = self._new_conversation(run_id, metadata or {}, name)
            conversation = self._conversations[root]
            self._root_of[run_id] = root
            conversation.runs.add(run_id)
            return conversation

    def _new_conversation(self, run_id: UUID, metadata: Mapping[str, Any], name: str) -> _Conversation:
        thread_id = metadata.get("thread_id")
        conversation_id = self._conversation_id or (str(thread_id) if thread_id else str(run_id))
        root = Span(
            trace_id=_spans.otlp_id(str(run_id), 16),
            span_id=_spans.otlp_id(str(run_id), 8),
            name=f"invoke_agent {name}",
            start_ns=_spans.now_ns(),
            end_ns=0,
            attributes={
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.conversation.id": conversation_id,
                **_spans.agent_attributes(name, self._agent_id),
            },
        )
        continued = self._conversation_id is not None or bool(thread_id)
        return _Conversation(conversation_id, continued=continued, root=root)

    def _leave(self, run_id: UUID, *, error: str | None) -> None:
        """Forgets an ended run; when it is the outermost, exports its conversation's spans."""
        with self._lock:
            conversation = self._conversations.pop(run_id, None)
            if conversation is None:
                return
            for run in conversation.runs:
                self._root_of.pop(run, None)
                self._open.pop(run, None)
        conversation.root.end_ns = _spans.now_ns()
        conversation.root.error = error
        self._exporter.export([conversation.root, *conversation.spans])
        if not conversation.continued:
            self._exporter.end_conversation(conversation.conversation_id)

    def _open_span(self, run_id: UUID, parent_run_id: UUID | None, metadata: Mapping[str, Any] | None,
                   name: str, operation: str, attributes: dict[str, _spans.AttributeValue]) -> None:
        conversation = self._enter(run_id, parent_run_id, metadata, name)
        span = Span(
            trace_id=conversation.root.trace_id,
            span_id=_spans.new_span_id(),
            parent_span_id=conversation.root.span_id,
            name=f"{operation} {name}",
            start_ns=_spans.now_ns(),
            end_ns=0,
            attributes={
                **attributes,
                "gen_ai.conversation.id": conversation.conversation_id,
                **_spans.agent_attributes(None, self._agent_id),
            },
        )
        with self._lock:
            self._open[run_id] = span

    def _close_span(self, run_id: UUID, attributes: Mapping[str, _spans.AttributeValue],
                    *, error: str | None) -> None:
        """Finishes a model call's or tool run's span; when it was the outermost run itself (a
        model invoked on its own), its conversation ends too."""
        with self._lock:
            span = self._open.pop(run_id, None)
            conversation = self._conversations.get(self._root_of.get(run_id, run_id))
            if span is None or conversation is None:
                return
            span.attributes.update(attributes)
            span.end_ns = _spans.now_ns()
            span.error = error
            conversation.spans.append(span)
        self._leave(run_id, error=error)


def _run_name(serialized: Mapping[str, Any] | None, kwargs: Mapping[str, Any]) -> str:
    """A run's name: the one LangChain passes (a graph's, a node's), else its serialized name."""
    return str(kwargs.get("name") or (serialized or {}).get("name") or "langchain")


def _request_model(metadata: Mapping[str, Any] | None, params: Mapping[str, Any] | None) -> str | None:
    """The model asked for: LangChain's `ls_model_name` metadata, else the invocation's."""
    for source, keys in ((metadata, ("ls_model_name",)), (params, ("model", "model_name"))):
        for key in keys:
            if source and source.get(key):
                return str(source[key])
    return None


def _reply_attributes(response: LLMResult) -> dict[str, _spans.AttributeValue]:
    """A chat model's reply (the first generation) as a `chat` span's output attributes."""
    generation = response.generations[0][0] if response.generations and response.generations[0] else None
    if not isinstance(generation, ChatGeneration):
        return {}
    message = generation.message
    metadata = message.response_metadata or {}
    usage = getattr(message, "usage_metadata", None) or {}
    token_usage = (response.llm_output or {}).get("token_usage") or {}
    return _spans.chat_attributes(
        input_messages=None,
        output_messages=[_spans.output_message(convert_to_openai_messages(message))],
        response_model=metadata.get("model_name"),
        response_id=metadata.get("id") or message.id,
        input_tokens=usage.get("input_tokens", token_usage.get("prompt_tokens")),
        output_tokens=usage.get("output_tokens", token_usage.get("completion_tokens")),
    )


def _result(output: Any) -> str | None:
    """A tool's output as text (messages by their content)."""
    if output is None:
        return None
    if isinstance(output, BaseMessage):
        return _spans.content_text(output.content)
    return _spans.as_text(output)


def _describe(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"

