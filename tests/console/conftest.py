"""Fixtures of the console's browser tests: the demo's data, a real `agentrl serve` on a free
loopback port with two tenants, and headless Chromium from Debian's package driven by
Playwright (never a downloaded browser).

The binary comes from `AGENTRL_BIN`, else `$CARGO_TARGET_DIR/debug/agentrl`, else
`target/debug/agentrl`. To run against a server already up instead (e.g. while developing),
set `AGENTRL_CONSOLE_URL` (where /console/ is served), `AGENTRL_CONSOLE_API_URL` (where the API
answers bearer keys; default: the same), `AGENTRL_CONSOLE_DATA_DIR` (its data directory, filled
by `agentrl demo`), and `AGENTRL_CONSOLE_KEY` / `AGENTRL_CONSOLE_OTHER_KEY` (the keys of the
tenants `demo` and `other`).
"""

from __future__ import annotations

import glob
import json
import os
import re
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import pytest
from playwright.sync_api import Browser, BrowserContext, ConsoleMessage, Page, Request, Response, sync_playwright

ROOT = Path(__file__).resolve().parents[2]
KEY = os.environ.get("AGENTRL_CONSOLE_KEY", "console-tests-key-demo-0001")
OTHER_KEY = os.environ.get("AGENTRL_CONSOLE_OTHER_KEY", "console-tests-key-other-0001")
CHROMIUM = os.environ.get("AGENTRL_CHROMIUM", "/usr/bin/chromium")
AXE = ROOT / "console" / "node_modules" / "axe-core" / "axe.min.js"


def _binary() -> str:
    if os.environ.get("AGENTRL_BIN"):
        return os.environ["AGENTRL_BIN"]
    target = os.environ.get("CARGO_TARGET_DIR", str(ROOT / "target"))
    path = Path(target) / "debug" / "agentrl"
    if not path.exists():
        raise RuntimeError(f"no agentrl binary at {path}: build it or set AGENTRL_BIN")
    return str(path)


@dataclass
class Stack:
    """A running console and API with the demo's data."""

    console_url: str
    api_url: str
    data_dir: Path

    def api(self, method: str, path: str, body: Any = None, key: str = KEY) -> tuple[int, Any]:
        """Calls the API with a bearer key (as the SDK does): (status, parsed body)."""
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.api_url + path, data=data, method=method)
        req.add_header("Authorization", f"Bearer {key}")
        if data is not None:
            req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                raw, status = r.read(), r.status
        except urllib.error.HTTPError as e:
            raw, status = e.read(), e.code
        return status, (json.loads(raw) if raw else None)

    def ok(self, method: str, path: str, body: Any = None, key: str = KEY) -> Any:
        status, got = self.api(method, path, body, key)
        assert status < 300, f"{method} {path}: {status} {got}"
        return got

    def metrics_lines(self, run_id: str) -> list[dict[str, Any]]:
        """The run's metrics.jsonl as the trainer wrote it."""
        files = glob.glob(str(self.data_dir / "objects" / "training-runs" / "*" / run_id / "metrics.jsonl"))
        assert len(files) == 1, f"metrics.jsonl of {run_id}: {files}"
        return [json.loads(line) for line in Path(files[0]).read_text().splitlines() if line.strip()]


@pytest.fixture(scope="session")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    if os.environ.get("AGENTRL_CONSOLE_URL"):
        url = os.environ["AGENTRL_CONSOLE_URL"].rstrip("/")
        yield Stack(url, os.environ.get("AGENTRL_CONSOLE_API_URL", url).rstrip("/"), Path(os.environ["AGENTRL_CONSOLE_DATA_DIR"]))
        return
    data = tmp_path_factory.mktemp("agentrl-console")
    binary = _binary()
    demo = subprocess.run([binary, "demo", "--data-dir", str(data)], capture_output=True, text=True, timeout=300,
                          stdin=subprocess.DEVNULL)
    assert demo.returncode == 0, f"agentrl demo failed:\n{demo.stdout[-3000:]}\n{demo.stderr[-3000:]}"
    log = open(data / "serve.log", "w+")
    proc = subprocess.Popen(
        [binary, "serve", "--addr", "127.0.0.1:0", "--data-dir", str(data),
         "--api-key", f"demo={KEY}", "--api-key", f"other={OTHER_KEY}"],
        stdout=subprocess.DEVNULL, stderr=log, stdin=subprocess.DEVNULL,
    )
    try:
        base = _wait_listening(data / "serve.log", proc)
        yield Stack(base, base, data)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def _wait_listening(log: Path, proc: subprocess.Popen[bytes]) -> str:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        found = re.search(r"agentrl listening on (http://\S+)", log.read_text())
        if found:
            return found.group(1)
        if proc.poll() is not None:
            raise RuntimeError(f"agentrl serve exited: {log.read_text()}")
        time.sleep(0.05)
    raise RuntimeError(f"agentrl serve did not start: {log.read_text()}")


@dataclass
class Demo:
    """What the demo left: one agent, its runs and versions (found through the API)."""

    agent_id: str
    runs: list[dict[str, Any]]
    dataset_id: str

    def run_of(self, version: str) -> dict[str, Any]:
        return next(r for r in self.runs if r.get("model_version") == version)


@pytest.fixture(scope="session")
def demo(stack: Stack) -> Demo:
    # The demo's agent, not one a test registered (their ids start with `console-`).
    agents = [a for a in stack.ok("GET", "/v1/agents")["agents"] if not a["agent_id"].startswith("console-")]
    assert agents, "the demo registered no agent"
    agent = agents[0]
    runs = stack.ok("GET", f"/v1/training-runs?agent_id={agent['agent_id']}")["runs"]
    done = [r for r in runs if r["status"] == "succeeded" and r.get("model_version")]
    assert len(done) >= 2, f"the demo should leave two succeeded runs: {runs}"
    return Demo(agent["agent_id"], done, done[0]["dataset_id"])


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    assert Path(CHROMIUM).exists(), f"no Chromium at {CHROMIUM}: run infra/scripts/console-env.sh"
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM)
        yield b
        b.close()


@pytest.fixture
def context(browser: Browser) -> Iterator[BrowserContext]:
    ctx = browser.new_context(viewport={"width": 1280, "height": 900})
    yield ctx
    ctx.close()


def sign_in(ctx: BrowserContext, stack: Stack, key: str = KEY) -> None:
    """A session cookie in the context's jar, as the login page gets it."""
    r = ctx.request.post(f"{stack.console_url}/v1/console/session", data={"api_key": key})
    assert r.status == 201, f"POST /v1/console/session: {r.status} {r.text()}"


@pytest.fixture
def page(context: BrowserContext, stack: Stack) -> Page:
    """A page of a context signed in as the demo's tenant."""
    sign_in(context, stack)
    return context.new_page()


@dataclass
class Watch:
    """Everything that went wrong on a page: console errors, uncaught exceptions, failed
    requests and answers of 400 or more."""

    errors: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    responses: list[tuple[int, str]] = field(default_factory=list)

    @classmethod
    def on(cls, page: Page) -> "Watch":
        w = cls()

        def console(m: ConsoleMessage) -> None:
            if m.type == "error":
                w.errors.append(f"{m.text} [{m.location.get('url', '')}]")

        def failed(r: Request) -> None:
            w.failed.append(f"{r.method} {r.url}: {r.failure}")

        def response(r: Response) -> None:
            if r.status >= 400:
                w.responses.append((r.status, r.url))

        page.on("console", console)
        page.on("pageerror", lambda e: w.errors.append(f"uncaught: {e}"))
        page.on("requestfailed", failed)
        page.on("response", response)
        return w

    def assert_clean(self, allow: tuple[tuple[int, str], ...] = ()) -> None:
        """Nothing went wrong but the answers in `allow` ((status, part of the URL)), and the
        browser's console line each of them logs."""
        def allowed(status: int, url: str) -> bool:
            return any(status == s and part in url for s, part in allow)

        bad = [(s, u) for s, u in self.responses if not allowed(s, u)]
        errors = []
        for e in self.errors:
            m = re.match(r"Failed to load resource: the server responded with a status of (\d+) .*\[(.*)\]$", e)
            if m and allowed(int(m.group(1)), m.group(2)):
                continue
            errors.append(e)
        assert not bad, f"unexpected answers: {bad}"
        assert not self.failed, f"failed requests: {self.failed}"
        assert not errors, f"console errors: {errors}"


def axe_serious(page: Page) -> list[dict[str, Any]]:
    """axe-core's serious and critical violations on the page as it is. The script goes in
    through the DevTools protocol, which the page's CSP does not govern."""
    if not page.evaluate("typeof window.axe !== 'undefined'"):
        page.evaluate(AXE.read_text())
    return page.evaluate(
        """async () => {
            const r = await axe.run(document, { resultTypes: ["violations"] });
            return r.violations
              .filter(v => v.impact === "serious" || v.impact === "critical")
              .map(v => ({ id: v.id, impact: v.impact, help: v.help,
                           nodes: v.nodes.slice(0, 5).map(n => n.target.join(" ")) }));
        }"""
    )


def shoot(page: Page, name: str) -> None:
    """A screenshot for the docs, when AGENTRL_CONSOLE_SHOTS names a directory."""
    out = os.environ.get("AGENTRL_CONSOLE_SHOTS")
    if out:
        Path(out).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(out) / f"{name}.png"), full_page=True)
