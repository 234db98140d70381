"""The OpenAI Agents SDK with `AgentrlTracingProcessor`: agents run by `Runner.run` against the
gateway and the built-in model server end as trajectories in the turn table."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest
from agents import (
    Agent,
    Model,
    ModelResponse,
    ModelSettings,
    OpenAIChatCompletionsModel,
    RunConfig,
    Runner,
    Usage,
    agent_span,
    function_span,
    function_tool,
    generation_span,
    response_span,
    set_trace_processors,
    set_tracing_disabled,
    trace,
)
from openai import AsyncOpenAI
from openai.types.responses import (
    EasyInputMessageParam,
    Response,
    ResponseFunctionToolCall,
    ResponseFunctionToolCallParam,
)
from openai.types.responses.response_input_item_param import FunctionCallOutput

import agentrl
from agentrl.integrations.openai_agents import AgentrlTracingProcessor
from conftest import MODEL, Server


@pytest.fixture
def processor(server: Server, agent: str) -> Iterator[AgentrlTracingProcessor]:
    """Our processor in place of the SDK's default one (which would export to OpenAI)."""
    processor = AgentrlTracingProcessor(agent_id=agent, base_url=server.base_url, api_key=server.api_key)
    set_tracing_disabled(False)
    set_trace_processors([processor])
    yield processor
    set_trace_processors([])
    processor.shutdown()


def gateway_model(server: Server, agent: str) -> OpenAIChatCompletionsModel:
    """The agent's model through the gateway (Chat Completions)."""
    client = AsyncOpenAI(base_url=f"{server.base_url}/gateway/{agent}/v1", api_key=server.api_key)
    return OpenAIChatCompletionsModel(model=MODEL, openai_client=client)


def trace_id(unique: str) -> str:
    """A trace id of the SDK's form (`trace_` and 32 hex digits), to find its conversation."""
    return f"trace_{unique:0<32}"


async def run(agent: Agent[Any], question: str, config: RunConfig, *, streamed: bool) -> Any:
    """The agent's final output, from `Runner.run` or by consuming `Runner.run_streamed`."""
    if not streamed:
        return (await Runner.run(agent, question, run_config=config)).final_output
    result = Runner.run_streamed(agent, question, run_config=config)
    async for _ in result.stream_events():
        pass
    return result.final_output


@pytest.mark.parametrize("streamed", [False, True], ids=["run", "run_streamed"])
def test_an_agent_run_becomes_a_trajectory(server: Server, agent: str, processor: AgentrlTracingProcessor,
                                           unique: str, streamed: bool) -> None:
    helper = Agent(name="helper", instructions="answer in one word", model=gateway_model(server, agent),
                   model_settings=ModelSettings(max_tokens=8, include_usage=True))
    conversation = trace_id(unique)

    output = asyncio.run(run(helper, "what is 2+2?", RunConfig(trace_id=conversation), streamed=streamed))
    processor.force_flush()

    rows = server.turn_rows(lambda r: r["conversation_id"] == conversation)
    assert [r["role"] for r in rows] == ["system", "user", "assistant"]
    assert {r["agent_id"] for r in rows} == {agent}
    assert len({r["trajectory_id"] for r in rows}) == 1
    assert rows[0]["content"] == "answer in one word"
    assert rows[1]["content"] == "what is 2+2?"
    reply = rows[2]
    assert isinstance(output, str)
    assert 0 < reply["output_tokens"] <= 8 and reply["input_tokens"] > 0


async def lookup_capital(country: str) -> str:
    """The capital of a country."""
    return "paris" if country == "france" else "unknown"


class ToolCallFirst(Model):
    """A model whose first answer asks for `lookup_capital` (the random built-in model never
    calls a tool), recording its generation span as a model of one's own does; every later
    answer comes from the gateway. The tool itself is run by the SDK."""

    CALL_ID = "call_lookup_1"

    def __init__(self, gateway: Model) -> None:
        self.gateway = gateway
        self.called = False

    async def get_response(self, system_instructions: str | None, input: Any, model_settings: ModelSettings,
                           *args: Any, **kwargs: Any) -> ModelResponse:
        if self.called:
            return await self.gateway.get_response(system_instructions, input, model_settings, *args, **kwargs)
        self.called = True
        arguments = json.dumps({"country": "france"})
        call = {"id": self.CALL_ID, "type": "function", "function": {"name": "lookup_capital", "arguments": arguments}}
        with generation_span(
            input=[{"role": "system", "content": system_instructions}, {"role": "user", "content": input}],
            output=[{"role": "assistant", "content": None, "tool_calls": [call]}],
            model="scripted",
        ):
            pass
        item = ResponseFunctionToolCall(type="function_call", call_id=self.CALL_ID, name="lookup_capital",
                                        arguments=arguments, id="fc_1", status="completed")
        return ModelResponse(output=[item], usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError


def test_a_tool_run_is_a_tool_turn_answering_its_call(server: Server, agent: str,
                                                      processor: AgentrlTracingProcessor, unique: str) -> None:
    helper = Agent(name="helper", instructions="use the tool", tools=[function_tool(lookup_capital)],
                   model=ToolCallFirst(gateway_model(server, agent)), model_settings=ModelSettings(max_tokens=8))
    conversation = trace_id(unique)

    asyncio.run(Runner.run(helper, "capital of france?", run_config=RunConfig(trace_id=conversation)))
    processor.force_flush()

    rows = server.turn_rows(lambda r: r["conversation_id"] == conversation)
    assert [r["role"] for r in rows] == ["system", "user", "assistant", "tool", "assistant"]
    call = rows[2]["tool_calls"][0]
    assert (call["id"], call["name"], json.loads(call["arguments"])) == (
        ToolCallFirst.CALL_ID, "lookup_capital", {"country": "france"})
    # The SDK's function span holds no call id: the processor matched it to the call.
    assert rows[3]["tool_call_id"] == ToolCallFirst.CALL_ID
    assert rows[3]["tool_result"] == "paris"
    assert rows[3]["error"] is None
    assert rows[4]["output_tokens"] > 0


def response(output: list[dict[str, Any]]) -> Response:
    """A Responses API response of the built-in model with `output` items."""
    return Response.model_validate({
        "id": "resp_1", "created_at": 0, "model": MODEL, "object": "response", "output": output,
        "instructions": "use the tool", "parallel_tool_calls": False, "tool_choice": "auto", "tools": [],
        "usage": {"input_tokens": 7, "output_tokens": 3, "total_tokens": 10,
                  "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
                  "output_tokens_details": {"reasoning_tokens": 0}},
    })


def test_responses_api_spans_of_a_group_wait_for_its_end(server: Server, agent: str,
                                                         processor: AgentrlTracingProcessor,
                                                         client: agentrl.Client, unique: str) -> None:
    """Spans as the SDK's Responses API model records them (recorded here with the SDK's
    tracing API: the gateway speaks Chat Completions), in a trace with a group_id."""
    group = f"group-{unique}"
    user: EasyInputMessageParam = {"role": "user", "content": "capital of france?"}
    call: ResponseFunctionToolCallParam = {"type": "function_call", "call_id": "call_r1", "name": "lookup_capital",
                                           "arguments": json.dumps({"country": "france"})}
    answer: FunctionCallOutput = {"type": "function_call_output", "call_id": "call_r1", "output": "paris"}
    reply = {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed",
             "content": [{"type": "output_text", "text": "paris.", "annotations": []}]}

    with trace("support", group_id=group), agent_span(name="helper"):
        with response_span() as first:
            first.span_data.input = [user]
            first.span_data.response = response([{**call, "id": "fc_1", "status": "completed"}])
        with function_span("lookup_capital", input=call["arguments"], output="paris"):
            pass
        with response_span() as second:
            second.span_data.input = [user, call, answer]
            second.span_data.response = response([reply])
    processor.force_flush()

    # In a group the processor leaves the conversation open: its spans still wait.
    ended = client.traces.end_conversation(group)
    assert len(ended["trajectory_ids"]) == 1
    rows = server.turn_rows(lambda r: r["conversation_id"] == group)
    assert [r["role"] for r in rows] == ["system", "user", "assistant", "tool", "assistant"]
    assert {r["agent_id"] for r in rows} == {agent}
    assert rows[0]["content"] == "use the tool"
    assert rows[2]["tool_calls"][0]["id"] == "call_r1"
    assert (rows[2]["input_tokens"], rows[2]["output_tokens"]) == (7, 3)
    assert (rows[3]["tool_call_id"], rows[3]["tool_result"]) == ("call_r1", "paris")
    assert rows[4]["content"] == "paris."
