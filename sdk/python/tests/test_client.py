"""The client against a real `agentrl serve`: the generated models and methods match the served
document, calls round-trip (a trajectory posted is listed and read back), pages are followed,
errors carry the problem, tenants are isolated, and a write retried after a lost answer (or a 503) has one effect."""

from __future__ import annotations

import asyncio
import http.server
import importlib.util
import sys
import threading
import time
from importlib.metadata import version
from pathlib import Path
from typing import Any, Iterator

import httpx
import pytest

import agentrl
from conftest import Server

SDK = Path(__file__).resolve().parents[1]


def _generator() -> Any:
    spec = importlib.util.spec_from_file_location("generate", SDK / "tools" / "generate.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["generate"] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_models_and_methods_are_those_of_the_served_document(client: agentrl.Client) -> None:
    doc = client.openapi()
    generate = _generator()
    package = SDK / "src" / "agentrl"
    assert generate.models_file(doc) == (package / "models.py").read_text(), (
        "models.py drifted from the API: run tools/generate.py against `agentrl serve`"
    )
    assert generate.resources_file(doc) == (package / "_resources.py").read_text(), (
        "_resources.py drifted from the API: run tools/generate.py against `agentrl serve`"
    )


def test_the_version_is_the_servers(client: agentrl.Client) -> None:
    served = client.openapi()["info"]["version"]
    assert agentrl.__version__ == version("agentrl-sdk") == served
    assert f'version = "{served}"' in (SDK / "pyproject.toml").read_text()


def _agent(name: str) -> agentrl.models.CreateAgentBody:
    return {"name": name, "type": "coding", "model": {"provider": "openai", "name": "gpt-4o"}}


def test_pages_are_followed_to_the_end(client: agentrl.Client, unique: str) -> None:
    made = {client.agents.create(_agent(f"pager-{unique}-{i}"))["agent_id"] for i in range(5)}
    first = client.agents.list(limit=2)
    assert len(first["agents"]) == 2 and first["next_cursor"]
    seen = [a["agent_id"] for a in client.agents.iter(limit=2)]
    assert made <= set(seen) and len(seen) == len(set(seen))


def test_errors_carry_the_problem(client: agentrl.Client, server: Server, unique: str) -> None:
    with pytest.raises(agentrl.NotFoundError) as missing:
        client.agents.get(f"missing-{unique}")
    assert missing.value.status == 404 and missing.value.detail
    with pytest.raises(agentrl.BadRequestError) as bad:
        client.agents.create({**_agent(""), "name": ""})
    assert bad.value.field == "name" and bad.value.status == 400
    with agentrl.Client(server.base_url, "not-a-key-of-anyone") as stranger:
        with pytest.raises(agentrl.AuthenticationError):
            stranger.agents.list()


def test_another_tenants_agent_is_not_found(client: agentrl.Client, server: Server, unique: str) -> None:
    mine = client.agents.create({**_agent("mine"), "agent_id": f"iso-{unique}"})
    with agentrl.Client(server.base_url, server.other_key) as other:
        with pytest.raises(agentrl.NotFoundError):
            other.agents.get(mine["agent_id"])
        assert all(a["agent_id"] != mine["agent_id"] for a in other.agents.iter())


def test_a_trajectory_posted_lands_in_the_turn_table(client: agentrl.Client, server: Server, unique: str) -> None:
    accepted = client.trajectories.create({
        "trajectory_id": f"tr-{unique}", "conversation_id": f"conv-{unique}", "agent_id": "sdk-writer",
        "turns": [
            {"role": "user", "content": "what is 2+2?"},
            {"role": "assistant", "content": "4"},
        ],
        "final_outcome": {"success": True, "reward": 1.0},
    })
    assert accepted["trajectory_id"] == f"tr-{unique}"
    rows = server.turn_rows(lambda r: r["trajectory_id"] == f"tr-{unique}")
    assert [r["role"] for r in rows] == ["user", "assistant"]
    assert rows[1]["content"] == "4"
    # The index is written right after the rows: listed by conversation, read back with its turns.
    deadline = time.monotonic() + 10
    while not (listed := list(client.trajectories.iter(session_id=f"conv-{unique}"))) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [t["trajectory_id"] for t in listed] == [f"tr-{unique}"]
    detail = client.trajectories.get(f"tr-{unique}")
    assert [t["role"] for t in detail["turns"]] == ["user", "assistant"]
    assert detail["success"] is True and detail["reward"] == 1.0 and detail["source"] == "api"


class _Flaky(http.server.BaseHTTPRequestHandler):
    """A proxy in front of the server that fails the first attempt of every write: `lose`
    forwards it and drops the answer (the server did the work), `busy` answers 503."""

    upstream = ""
    mode = "lose"
    keys: list[str] = []
    attempts = 0

    def do_GET(self) -> None:
        self._forward(self._relay())

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("content-length", 0)))
        cls = type(self)
        cls.keys.append(self.headers.get("idempotency-key", ""))
        cls.attempts += 1
        if cls.attempts == 1 and cls.mode == "busy":
            self.send_response(503)
            self.send_header("retry-after", "0")
            self.send_header("content-length", "0")
            self.end_headers()
            return
        answer = self._relay(body)
        if cls.attempts == 1 and cls.mode == "lose":
            self.close_connection = True  # the work is done; the answer never arrives
            return
        self._forward(answer)

    def _relay(self, body: bytes | None = None) -> httpx.Response:
        headers = {k: v for k, v in self.headers.items() if k.lower() not in {"host", "content-length"}}
        return httpx.request(self.command, type(self).upstream + self.path, headers=headers, content=body)

    def _forward(self, answer: httpx.Response) -> None:
        self.send_response(answer.status_code)
        for k, v in answer.headers.items():
            if k.lower() not in {"content-length", "transfer-encoding", "connection", "content-encoding"}:
                self.send_header(k, v)
        self.send_header("content-length", str(len(answer.content)))
        self.end_headers()
        self.wfile.write(answer.content)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def flaky(server: Server) -> Iterator[type[_Flaky]]:
    handler = type("Handler", (_Flaky,), {"upstream": server.base_url, "keys": [], "attempts": 0})
    proxy = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=proxy.serve_forever, daemon=True)
    thread.start()
    handler.url = f"http://127.0.0.1:{proxy.server_address[1]}"  # type: ignore[attr-defined]
    yield handler
    proxy.shutdown()


@pytest.mark.parametrize("mode", ["lose", "busy"])
def test_a_retried_write_has_one_effect(flaky: type[_Flaky], client: agentrl.Client, server: Server,
                                        unique: str, mode: str) -> None:
    flaky.mode = mode
    name = f"retried-{mode}-{unique}"
    with agentrl.Client(flaky.url, server.api_key, max_retries=2) as through:  # type: ignore[attr-defined]
        created = through.agents.create(_agent(name))  # no agent_id: the server assigns one
    assert flaky.attempts == 2
    assert flaky.keys[0] and flaky.keys[0] == flaky.keys[1], "every attempt carries one key"
    same_name = [a for a in client.agents.iter() if a["name"] == name]
    assert [a["agent_id"] for a in same_name] == [created["agent_id"]]


def test_no_retries_left_raises_the_transport_failure(server: Server) -> None:
    # A closed port: every attempt fails to connect.
    with agentrl.Client("http://127.0.0.1:9", server.api_key, max_retries=1) as dead:
        with pytest.raises(agentrl.APIConnectionError):
            dead.health()


def test_the_async_client_does_the_same(server: Server, unique: str) -> None:
    async def run() -> None:
        async with agentrl.AsyncClient(server.base_url, server.api_key) as c:
            made = await c.agents.create({**_agent("async"), "agent_id": f"async-{unique}"})
            assert (await c.agents.get(made["agent_id"]))["name"] == "async"
            ids = [a["agent_id"] async for a in c.agents.iter(limit=1)]
            assert made["agent_id"] in ids
            with pytest.raises(agentrl.NotFoundError):
                await c.agents.get(f"nobody-{unique}")

    asyncio.run(run())


def test_the_openai_client_talks_to_the_agents_gateway(client: agentrl.Client, server: Server,
                                                       agent: str, unique: str) -> None:
    session = f"s-{unique}"
    openai = agentrl.openai_client(agent, session, base_url=server.base_url, api_key=server.api_key)
    raw = openai.chat.completions.with_raw_response.create(
        model="anything", messages=[{"role": "user", "content": "what is 1+2?"}], max_tokens=4)
    assert raw.headers["x-agentrl-session"] == session
    assert raw.parse().choices[0].message.content is not None
    ended = client.gateway.end_session(agent, session, body={"success": True, "reward": 1.0})
    (trajectory,) = ended["trajectory_ids"]
    rows = server.turn_rows(lambda r: r["trajectory_id"] == trajectory)
    assert [r["role"] for r in rows] == ["user", "assistant"]
    assert rows[0]["agent_id"] == agent
