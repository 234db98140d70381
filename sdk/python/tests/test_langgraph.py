"""LangGraph with `AgentrlCallbackHandler`: a graph whose model node calls the gateway (the
built-in model server) and whose tool node runs a real `@tool` ends as a trajectory with its
assistant and tool turns."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.tools import BaseTool, tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.prebuilt import ToolNode
from pydantic import SecretStr

import agentrl
from agentrl.integrations.langchain import AgentrlCallbackHandler
from conftest import MODEL, Server

CALL_ID = "call_lookup_1"


@tool
def lookup_capital(country: str) -> str:
    """The capital of a country."""
    return "paris" if country == "france" else "unknown"


@tool
def lookup_population(country: str) -> str:
    """The population of a country."""
    raise LookupError(f"no census of {country}")


@pytest.fixture
def handler(server: Server, agent: str) -> Iterator[AgentrlCallbackHandler]:
    handler = AgentrlCallbackHandler(agent_id=agent, base_url=server.base_url, api_key=server.api_key)
    yield handler
    handler.shutdown()


def graph(server: Server, agent: str, tool: BaseTool = lookup_capital) -> CompiledStateGraph[Any, Any, Any, Any]:
    """plan → tools → answer. `plan` is a scripted chat model that asks for `tool` (the random
    built-in model never calls a tool); `tools` is LangGraph's ToolNode running the real tool
    with that call (a tool's error becomes its answer); `answer` is ChatOpenAI through the
    gateway."""
    planner = FakeMessagesListChatModel(responses=[AIMessage(
        content="", tool_calls=[{"name": tool.name, "args": {"country": "france"}, "id": CALL_ID}])])
    answerer = ChatOpenAI(model=MODEL, base_url=f"{server.base_url}/gateway/{agent}/v1",  # type: ignore[call-arg]
                          api_key=SecretStr(server.api_key), max_tokens=8)
    builder = StateGraph(MessagesState)
    builder.add_node("plan", lambda state: {"messages": [planner.invoke(state["messages"])]})
    builder.add_node("tools", ToolNode([tool], handle_tool_errors=True))
    builder.add_node("answer", lambda state: {"messages": [answerer.invoke(state["messages"])]})
    builder.add_edge(START, "plan")
    builder.add_edge("plan", "tools")
    builder.add_edge("tools", "answer")
    builder.add_edge("answer", END)
    return builder.compile()


def check_turns(rows: list[dict[str, Any]], agent: str, tool: str = "lookup_capital") -> dict[str, Any]:
    """The conversation's turns: the question, the call of `tool`, the tool's answer to it (the
    turn returned), the reply."""
    assert [r["role"] for r in rows] == ["user", "assistant", "tool", "assistant"]
    assert {r["agent_id"] for r in rows} == {agent}
    assert rows[0]["content"] == "capital of france?"
    call = rows[1]["tool_calls"][0]
    assert (call["id"], call["name"]) == (CALL_ID, tool)
    assert rows[2]["tool_call_id"] == CALL_ID
    assert 0 < rows[3]["output_tokens"] <= 8
    return rows[2]


def test_a_graph_run_becomes_a_trajectory(server: Server, agent: str, handler: AgentrlCallbackHandler) -> None:
    run_id = uuid.uuid4()

    out = graph(server, agent).invoke({"messages": [HumanMessage("capital of france?")]},
                                      config={"callbacks": [handler], "run_id": run_id})
    assert handler.flush(10)

    assert out["messages"][2].content == "paris"
    # Not a LangGraph thread: the conversation is the run, ended by the handler.
    answer = check_turns(server.turn_rows(lambda r: r["conversation_id"] == str(run_id)), agent)
    assert (answer["tool_result"], answer["error"]) == ("paris", None)


def test_a_failing_tool_is_a_tool_turn_in_error(server: Server, agent: str, handler: AgentrlCallbackHandler) -> None:
    run_id = uuid.uuid4()

    graph(server, agent, lookup_population).invoke({"messages": [HumanMessage("capital of france?")]},
                                                   config={"callbacks": [handler], "run_id": run_id})
    assert handler.flush(10)

    answer = check_turns(server.turn_rows(lambda r: r["conversation_id"] == str(run_id)), agent,
                         "lookup_population")
    assert answer["error"] == "LookupError: no census of france"


def test_an_async_graph_thread_is_left_open_for_the_next_invocation(
        server: Server, agent: str, handler: AgentrlCallbackHandler, client: agentrl.Client, unique: str) -> None:
    thread = f"thread-{unique}"

    asyncio.run(graph(server, agent).ainvoke(
        {"messages": [HumanMessage("capital of france?")]},
        config={"callbacks": [handler], "configurable": {"thread_id": thread}}))
    assert handler.flush(10)

    # The handler did not end the thread (its spans still wait): ending it now ingests them.
    ended = client.traces.end_conversation(thread)
    assert len(ended["trajectory_ids"]) == 1
    answer = check_turns(server.turn_rows(lambda r: r["conversation_id"] == thread), agent)
    assert answer["tool_result"] == "paris"
