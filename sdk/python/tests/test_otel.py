"""`agentrl.otel.configure`: spans with GenAI attributes, started with the OpenTelemetry SDK's
global tracer, reach `POST /v1/traces` and end as a trajectory."""

from __future__ import annotations

import json
from typing import Any

import pytest
from opentelemetry import trace

import agentrl
import agentrl.otel
from conftest import Server


def message(role: str, *parts: dict[str, Any]) -> dict[str, Any]:
    return {"role": role, "parts": list(parts)}


def text(content: str) -> dict[str, Any]:
    return {"type": "text", "content": content}


def test_genai_spans_of_the_configured_provider_become_a_trajectory(
        server: Server, agent: str, client: agentrl.Client, unique: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTRL_BASE_URL", server.base_url)
    monkeypatch.setenv("AGENTRL_API_KEY", server.api_key)
    provider = agentrl.otel.configure(service_name="otel-test")
    assert trace.get_tracer_provider() is provider
    tracer = trace.get_tracer("agentrl-sdk-tests")
    conversation = f"otel-{unique}"
    user = message("user", text("capital of france?"))
    call = message("assistant", {"type": "tool_call", "id": "call_1", "name": "lookup", "arguments": {"q": "france"}})
    answer = message("tool", {"type": "tool_call_response", "id": "call_1", "response": "paris"})

    with tracer.start_as_current_span("invoke_agent helper", attributes={
            "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.id": agent,
            "gen_ai.conversation.id": conversation}):
        with tracer.start_as_current_span("chat pico", attributes={
                "gen_ai.operation.name": "chat", "gen_ai.request.model": "pico",
                "gen_ai.input.messages": json.dumps([user]), "gen_ai.output.messages": json.dumps([call]),
                "gen_ai.usage.input_tokens": 12, "gen_ai.usage.output_tokens": 5}):
            pass
        with tracer.start_as_current_span("execute_tool lookup", attributes={
                "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup",
                "gen_ai.tool.call.id": "call_1", "gen_ai.tool.call.result": "paris"}):
            pass
        with tracer.start_as_current_span("chat pico", attributes={
                "gen_ai.operation.name": "chat", "gen_ai.request.model": "pico",
                "gen_ai.input.messages": json.dumps([user, call, answer]),
                "gen_ai.output.messages": json.dumps([message("assistant", text("paris."))]),
                "gen_ai.usage.input_tokens": 30, "gen_ai.usage.output_tokens": 3}):
            pass
    assert provider.force_flush(10_000)

    ended = client.traces.end_conversation(conversation)
    assert len(ended["trajectory_ids"]) == 1
    rows = server.turn_rows(lambda r: r["conversation_id"] == conversation)
    assert [r["role"] for r in rows] == ["user", "assistant", "tool", "assistant"]
    assert {r["agent_id"] for r in rows} == {agent}
    assert rows[1]["tool_calls"][0]["id"] == "call_1"
    assert (rows[1]["input_tokens"], rows[1]["output_tokens"]) == (12, 5)
    assert (rows[2]["tool_call_id"], rows[2]["tool_result"]) == ("call_1", "paris")
    assert (rows[3]["content"], rows[3]["output_tokens"]) == ("paris.", 3)
    provider.shutdown()
