"""The web console in headless Chromium against `agentrl serve` with the demo's data."""

from __future__ import annotations

import json
import math
import random
import re
import time
from typing import Any
from urllib.parse import quote

import pytest
from playwright.sync_api import BrowserContext, Page, expect

from conftest import KEY, OTHER_KEY, Demo, Stack, Watch, axe_serious, shoot, sign_in


def load(page: Page, stack: Stack, path: str) -> None:
    """Opens a console page and waits until it has drawn (and its charts, if any)."""
    page.goto(stack.console_url + path)
    page.wait_for_selector("main:not([aria-busy]) h1")
    page.wait_for_load_state("networkidle")
    page.wait_for_function(
        "() => document.querySelectorAll('.chart-plot').length"
        " === document.querySelectorAll('.chart-plot canvas').length"
    )


def close(got: float | None, want: float | None) -> bool:
    """The same number, bit for bit: the server passes `metrics.jsonl` lines through as the
    trainer wrote them, and JSON.parse rounds exactly as Python does."""
    return got is not None and want is not None and got == want


def pages(demo: Demo) -> dict[str, str]:
    v1, v2 = demo.run_of("v1"), demo.run_of("v2")
    return {
        "agents": "/console/agents",
        "agent": f"/console/agents/{quote(demo.agent_id, safe='')}",
        "runs": "/console/runs",
        "runs-of-agent": f"/console/runs?agent_id={quote(demo.agent_id, safe='')}",
        "run": f"/console/runs/{v2['run_id']}",
        "compare": f"/console/runs/compare?ids={v1['run_id']},{v2['run_id']}&metric=reward_mean",
        "trajectories": "/console/trajectories",
        "evaluations": "/console/evaluations",
        "budgets": "/console/budgets",
        "datasets": "/console/datasets",
        "dataset": f"/console/datasets/{quote(demo.dataset_id, safe='')}",
        "kpis": "/console/kpis",
        "attributions": "/console/attribution",
        "not-found": "/console/no-such-page",
    }


@pytest.mark.parametrize("name", ["agents", "agent", "runs", "runs-of-agent", "run", "compare", "trajectories", "evaluations",
                                  "budgets", "datasets", "dataset", "kpis", "attributions", "not-found"])
def test_page_loads_clean_accessible_and_narrow(page: Page, stack: Stack, demo: Demo, name: str,
                                                request: pytest.FixtureRequest) -> None:
    # The lists show something: an escalated budget and a code evaluation (created once).
    if name == "budgets":
        request.getfixturevalue("escalated_budget")
    if name == "evaluations":
        request.getfixturevalue("code_evaluation")
    watch = Watch.on(page)
    load(page, stack, pages(demo)[name])
    watch.assert_clean()
    assert page.locator("h1").count() == 1
    assert page.locator("main").count() == 1 and page.locator("header nav").count() == 1

    violations = axe_serious(page)
    assert violations == [], f"axe on {name}: {violations}"
    shoot(page, name)

    # A phone: the page never scrolls sideways (wide tables scroll inside their wrapper).
    page.set_viewport_size({"width": 375, "height": 800})
    page.wait_for_timeout(300)
    widths = page.evaluate("() => [document.documentElement.scrollWidth, document.body.scrollWidth, window.innerWidth]")
    assert widths[0] <= widths[2] and widths[1] <= widths[2], f"{name} overflows at 375 px: {widths}"
    assert axe_serious(page) == [], f"axe on {name} at 375 px"
    watch.assert_clean()


def test_login_page_and_cookie_flags(context: BrowserContext, stack: Stack) -> None:
    page = context.new_page()
    watch = Watch.on(page)
    first = page.goto(f"{stack.console_url}/console/runs?agent_id=x")
    assert first is not None
    csp = first.headers.get("content-security-policy", "")
    for directive in ("default-src 'self'", "script-src 'self'", "style-src 'self'", "object-src 'none'", "frame-ancestors 'none'"):
        assert directive in csp, f"{directive!r} not in the CSP {csp!r}"
    page.wait_for_url(re.compile(r"/console/login\?next="))
    expect(page.get_by_role("heading", level=1)).to_have_text("Sign in to agentrl")
    assert axe_serious(page) == []
    shoot(page, "login")

    # A wrong key: the problem's detail, in an alert.
    page.get_by_label("API key").fill("not-a-key-of-anyone-0000")
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("alert")).to_be_visible()
    assert context.cookies() == []

    page.get_by_label("API key").fill(KEY)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(re.compile(r"/console/runs\?agent_id=x$"))
    expect(page.get_by_role("heading", level=1)).to_have_text("Training runs of x")
    cookies = {c["name"]: c for c in context.cookies()}
    session = cookies["agentrl_session"]
    assert session["httpOnly"] is True
    assert session["sameSite"] == "Strict"
    assert session["path"] == "/"
    assert session["secure"] is (stack.console_url.startswith("https:"))
    assert "agentrl_session" not in page.evaluate("document.cookie")
    expect(page.locator("header")).to_contain_text("demo")
    # The session check before signing in, and the wrong key: the two expected 401s.
    watch.assert_clean(allow=((401, "/v1/console/session"),))

    # Signing out clears the cookie; the console then asks for a key again.
    page.get_by_role("button", name="Log out").click()
    page.wait_for_url(re.compile(r"/console/login$"))
    assert "agentrl_session" not in {c["name"] for c in context.cookies()}
    page.goto(f"{stack.console_url}/console/agents")
    page.wait_for_url(re.compile(r"/console/login\?next=%2Fconsole%2Fagents$"))


def test_state_changing_calls_need_the_csrf_header(context: BrowserContext, stack: Stack, demo: Demo) -> None:
    sign_in(context, stack)
    run = demo.run_of("v1")["run_id"]
    # The cookie alone reads...
    assert context.request.get(f"{stack.console_url}/v1/training-runs/{run}").status == 200
    # ...but does not write: no X-CSRF-Token, no promotion.
    r = context.request.post(f"{stack.console_url}/v1/training-runs/{run}/promote", data={"percent": 100})
    assert r.status == 403, r.text()


def test_run_curves_hold_the_runs_points(page: Page, stack: Stack, demo: Demo) -> None:
    run = demo.run_of("v2")
    lines = stack.metrics_lines(run["run_id"])
    assert 0 < len(lines) <= 2000
    watch = Watch.on(page)
    load(page, stack, f"/console/runs/{run['run_id']}")
    charts: dict[str, Any] = page.evaluate("window.__agentrlCharts")
    assert {"loss", "reward", "kl", "clip_fraction", "entropy", "lr"} <= set(charts)

    def same(got: list[float | None], key: str) -> None:
        want = [line.get(key) for line in lines]
        assert len(got) == len(want)
        for i, (g, w) in enumerate(zip(got, want)):
            assert (g is None and w is None) or close(g, w), f"{key} at line {i}: {g} != {w}"

    for name in ("loss", "kl", "clip_fraction", "entropy", "lr"):
        assert charts[name]["x"] == list(range(len(lines))), name
        same(charts[name]["series"][name], name)
    reward = charts["reward"]["series"]
    same(reward["reward_mean"], "reward_mean")
    for i, line in enumerate(lines):
        assert math.isclose(reward["reward_mean ± reward_std upper"][i], line["reward_mean"] + line["reward_std"], abs_tol=1e-12)
        assert math.isclose(reward["reward_mean ± reward_std lower"][i], line["reward_mean"] - line["reward_std"], abs_tol=1e-12)
    # The SFT → GRPO boundary is marked where the first GRPO line is.
    first_grpo = next(i for i, line in enumerate(lines) if line["phase"] == "grpo")
    assert lines[0]["phase"] == "sft"
    assert charts["loss"]["boundary"] == first_grpo
    expect(page.locator("#curves-note")).to_contain_text(f"GRPO from line {first_grpo}")
    assert page.locator(".chart-plot canvas").count() == len(charts)
    watch.assert_clean()


def test_a_runs_page_shows_the_end_of_its_log(page: Page, stack: Stack, demo: Demo) -> None:
    run_id = demo.run_of("v2")["run_id"]
    status, tail = stack.api("GET", f"/v1/training-runs/{run_id}/logs?lines=200")
    assert status == 200 and tail["location"] is None and tail["lines"], tail
    watch = Watch.on(page)
    load(page, stack, f"/console/runs/{run_id}")
    shown = page.get_by_label("The end of the run's log")
    expect(shown).to_be_visible()
    assert shown.text_content() == "\n".join(tail["lines"])
    watch.assert_clean()


def test_compare_overlays_the_runs(page: Page, stack: Stack, demo: Demo) -> None:
    a, b = demo.run_of("v1")["run_id"], demo.run_of("v2")["run_id"]
    load(page, stack, "/console/runs")
    page.get_by_label(f"Select {a} for comparison").check()
    page.get_by_label(f"Select {b} for comparison").check()
    page.get_by_role("button", name="Compare selected").click()
    page.wait_for_url(re.compile(r"/console/runs/compare\?ids="))
    page.wait_for_function("() => window.__agentrlCharts.compare && document.querySelector('.chart-plot canvas')")
    page.get_by_label("Metric").select_option("entropy")
    page.wait_for_url(re.compile(r"metric=entropy"))
    chart = page.evaluate("window.__agentrlCharts.compare")
    for run_id in (a, b):
        lines = stack.metrics_lines(run_id)
        at = dict(zip(chart["x"], chart["series"][run_id]))
        assert len(chart["x"]) >= len(lines)
        for i, line in enumerate(lines):
            assert close(at[i], line["entropy"]), f"{run_id} line {i}: {at[i]} != {line['entropy']}"


def test_promotion_refused_by_the_gate_shows_its_reasons(page: Page, stack: Stack, demo: Demo) -> None:
    run = demo.run_of("v2")  # the demo's canary: promoting it to all traffic is gated
    gate = stack.ok("GET", "/v1/config/promotion-gate")
    stack.ok("PUT", "/v1/config/promotion-gate", {**gate, "min_reward_gain": 0.9})
    try:
        watch = Watch.on(page)
        load(page, stack, f"/console/runs/{run['run_id']}")
        page.get_by_role("button", name="Promote v2").click()
        alert = page.get_by_role("alert")
        expect(alert).to_contain_text("The evaluation gate refused the promotion of v2")
        # The reasons the API gives for the same refusal, each shown, with the checks' numbers.
        status, problem = stack.api("POST", f"/v1/training-runs/{run['run_id']}/promote")
        assert status == 409 and problem["decision"]["reasons"], problem
        for reason in problem["decision"]["reasons"]:
            expect(alert.locator(".reasons")).to_contain_text(reason)
        expect(alert.locator("table")).to_contain_text("validation reward")
        expect(alert.locator("table")).to_contain_text("failed")
        assert axe_serious(page) == []
        shoot(page, "promote-refused")

        # The refusal is kept: newest first in the agent's gate decisions, with its reasons
        # and each check's numbers, as the API has them.
        decisions = stack.ok("GET", f"/v1/agents/{quote(demo.agent_id, safe='')}/gate-decisions")["decisions"]
        refused = decisions[0]
        assert refused["decision"]["passed"] is False and refused["run_id"] == run["run_id"], refused
        load(page, stack, f"/console/agents/{quote(demo.agent_id, safe='')}")
        items = page.locator("#gate-decisions > li")
        expect(items).to_have_count(len(decisions))
        first = items.first
        expect(first).to_have_attribute("data-passed", "false")
        expect(first).to_have_attribute("data-run-id", run["run_id"])
        expect(first.locator(".badge")).to_have_text("refused")
        for reason in refused["decision"]["reasons"]:
            expect(first.locator(".refusal .reasons")).to_contain_text(reason)
        rows = first.locator("tbody tr")
        expect(rows).to_have_count(len(refused["decision"]["checks"]))
        for i, c in enumerate(refused["decision"]["checks"]):
            cells = rows.nth(i).locator("td").all_inner_texts()
            assert cells[0] == c["name"].replace("_", " ")
            for got, want in zip(cells[1:4], (c["candidate"], c["deployed"], c["bound"])):
                assert float(got) == pytest.approx(want, abs=5e-5), (c, cells)
            assert cells[4] == ("passed" if c["passed"] else "failed")
        # The passed ones are marked so too.
        for i, d in enumerate(decisions):
            expect(items.nth(i)).to_have_attribute("data-passed", "true" if d["decision"]["passed"] else "false")
        watch.assert_clean(allow=((409, "/promote"),))
    finally:
        stack.ok("PUT", "/v1/config/promotion-gate", gate)
    agent = stack.ok("GET", f"/v1/agents/{demo.agent_id}")
    assert agent["deployed_version"] == "v1"


def test_cancelling_the_canary_changes_what_serves(page: Page, stack: Stack, demo: Demo) -> None:
    before = stack.ok("GET", f"/v1/agents/{quote(demo.agent_id, safe='')}")
    assert before["canary"] and before["deployed_version"] == "v1", before
    canary = before["canary"]
    try:
        watch = Watch.on(page)
        load(page, stack, f"/console/agents/{quote(demo.agent_id, safe='')}")
        page.get_by_role("button", name=f"Cancel canary {canary['version']}…").click()
        dialog = page.get_by_role("dialog", name=f"Cancel the canary {canary['version']}?")
        expect(dialog).to_be_visible()
        # Keeping it changes nothing.
        dialog.get_by_role("button", name="Keep the canary").click()
        expect(dialog).to_be_hidden()
        assert stack.ok("GET", f"/v1/agents/{quote(demo.agent_id, safe='')}")["canary"] == canary
        page.get_by_role("button", name=f"Cancel canary {canary['version']}…").click()
        dialog.get_by_role("button", name="Cancel canary").click()
        expect(page.locator("#agent-action-result [role=status]")).to_contain_text("Promoted: v1 rolled back to")
        after = stack.ok("GET", f"/v1/agents/{quote(demo.agent_id, safe='')}")
        assert after["canary"] is None and after["deployed_version"] == "v1", after
        # The page, redrawn, says so: no canary, nothing left to cancel.
        expect(page.locator(".serving .stat").nth(1).locator(".stat-value")).to_have_text("none")
        expect(page.get_by_role("button", name=re.compile("^Cancel canary"))).to_have_count(0)
        # The rollback is a decision too (not gated: no check).
        expect(page.locator("#gate-decisions > li").first).to_contain_text("(rollback, not gated)")
        watch.assert_clean()
    finally:
        # The demo's canary again, for the other tests.
        stack.ok("POST", f"/v1/training-runs/{demo.run_of(canary['version'])['run_id']}/promote", {"percent": canary["percent"]})
    assert stack.ok("GET", f"/v1/agents/{quote(demo.agent_id, safe='')}")["canary"] == canary


def test_cancelling_a_run_changes_its_status(page: Page, stack: Stack, demo: Demo) -> None:
    # A run long enough to be still going when the button is pressed.
    body = {"agent_id": demo.agent_id, "dataset_id": demo.dataset_id,
            "config": {"seed": random.randrange(1 << 30), "sft": {"epochs": 10000}, "grpo": {"steps": 10000}}}
    run = stack.ok("POST", "/v1/training-runs", body)
    run_id = run["run_id"]
    try:
        watch = Watch.on(page)
        load(page, stack, f"/console/runs/{run_id}")
        expect(page.locator(".run-status .badge")).to_have_text(re.compile(r"^(queued|running)$"))
        # Live progress: the page refreshes itself while the run goes on.
        progress = page.locator(".progress-text")
        before = progress.inner_text()
        expect(progress).not_to_have_text(before, timeout=15_000)
        expect(progress).to_contain_text("step")
        page.get_by_role("button", name="Cancel run…").click()
        dialog = page.get_by_role("dialog", name="Cancel this run?")
        expect(dialog).to_be_visible()
        dialog.get_by_role("button", name="Cancel run").click()
        expect(page.locator(".run-status .badge")).to_have_text("cancelled")
        expect(page.get_by_role("button", name="Cancel run…")).to_have_count(0)
        assert stack.ok("GET", f"/v1/training-runs/{run_id}")["status"] == "cancelled"
        watch.assert_clean()
    finally:
        stack.api("POST", f"/v1/training-runs/{run_id}/cancel")


def test_another_tenants_run_is_the_404_page(context: BrowserContext, stack: Stack, demo: Demo) -> None:
    run_id = demo.run_of("v1")["run_id"]
    assert stack.api("GET", f"/v1/training-runs/{run_id}", key=OTHER_KEY)[0] == 404
    sign_in(context, stack, OTHER_KEY)
    page = context.new_page()
    watch = Watch.on(page)
    load(page, stack, f"/console/runs/{run_id}")
    expect(page.get_by_role("heading", level=1)).to_have_text("Page not found")
    theirs = page.locator("main").inner_text()
    link = page.get_by_role("link", name="Go to the console's home page")
    expect(link).to_have_attribute("href", "/console/agents")
    watch.assert_clean(allow=((404, f"/v1/training-runs/{run_id}"),))

    load(page, stack, "/console/agents/no-such/route/at-all/x")
    unknown_agent = page.locator("main").inner_text()
    load(page, stack, "/console/nothing-here")
    assert page.locator("main").inner_text() == theirs == unknown_agent


# ---------------------------------------------------------------------------------------------
# Trajectories


def post_trajectory(stack: Stack, body: dict[str, Any], timeout: float = 60) -> dict[str, Any]:
    """Posts a trajectory as an agent does and waits until the ingest worker has scored,
    stored and indexed it: the API's view of it, with every turn's reward components."""
    accepted = stack.ok("POST", "/v1/trajectories", body)
    assert accepted["status"] == "queued", accepted
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status, got = stack.api("GET", f"/v1/trajectories/{quote(body['trajectory_id'], safe='')}")
        if status == 200:
            return got
        assert status == 404, (status, got)
        time.sleep(0.1)
    raise AssertionError(f"{body['trajectory_id']} was not indexed within {timeout} s")


def tool_trajectory(agent_id: str) -> dict[str, Any]:
    """A coding agent's trajectory: tools offered, two parallel calls (arguments as an object
    and as the string the model wrote), their results (one failed), a turn with its own
    reward, and a turn a safety rule catches."""
    tid = f"console-tools-{random.randrange(1 << 40):x}"
    return {
        "trajectory_id": tid,
        "agent_id": agent_id,
        "conversation_id": f"conv-{tid}",
        "policy_version": "v1",
        "tools": [
            {"name": "search_docs", "description": "Search the docs",
             "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}},
            {"name": "run_tests", "description": "Run a test file",
             "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}},
        ],
        "turns": [
            {"role": "system", "content": "You are a careful coding agent."},
            {"role": "user", "content": "Find how <b>retries</b> work & fix the failing test.\nThen run it."},
            {"role": "assistant", "content": "Let me look at the docs and run the test.",
             "tool_calls": [
                 {"id": "call_1", "name": "search_docs", "arguments": {"query": "retry backoff", "top": 3}},
                 {"id": "call_2", "name": "run_tests", "arguments": '{"path": "tests/test_retry.py"}'},
             ],
             "input_tokens": 120, "output_tokens": 34},
            {"role": "tool", "tool_call_id": "call_1", "content": "", "tool_result": "Retries use exponential backoff, capped at 30 s."},
            {"role": "tool", "tool_call_id": "call_2", "content": "", "tool_result": "1 failed, 3 passed", "error": "exit status 1"},
            {"role": "assistant", "content": "The cap was 3 s; I set it to 30 s. The test passes now.", "reward": 0.5,
             "input_tokens": 260, "output_tokens": 18},
            {"role": "user", "content": "Clean the build machine."},
            {"role": "assistant", "content": "```sh\nrm -rf /\n```", "input_tokens": 300, "output_tokens": 9},
        ],
        "final_outcome": {"success": True, "reward": 0.75, "termination_reason": "tests pass"},
    }


def shown_number(text: str) -> float:
    return float(text.split()[0])


def test_a_trajectory_shows_its_turns_tool_calls_and_rewards(page: Page, stack: Stack, demo: Demo) -> None:
    sent = tool_trajectory(demo.agent_id)
    stored = post_trajectory(stack, sent)
    tid = sent["trajectory_id"]
    watch = Watch.on(page)

    # Found by its conversation through the search form, then opened from the list.
    load(page, stack, "/console/trajectories")
    page.get_by_label("Conversation (session id)").fill(sent["conversation_id"])
    page.get_by_role("button", name="Search").click()
    page.wait_for_url(re.compile(r"session_id=conv-console-tools-"))
    rows = page.locator("#trajectories tbody tr")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("success")
    page.get_by_role("link", name=tid, exact=True).click()
    page.wait_for_url(re.compile(rf"/console/trajectories/{tid}$"))
    page.wait_for_selector("main:not([aria-busy]) #turns")
    expect(page.get_by_role("heading", level=1)).to_have_text(f"Trajectory {tid}")

    summary = page.locator("#trajectory-summary")
    expect(summary).to_contain_text("v1")
    expect(summary).to_contain_text("success")
    expect(summary).to_contain_text("tests pass")
    expect(summary).to_contain_text(f"{len(sent['turns'])}")
    expect(summary).to_contain_text("2 tool calls")
    expect(summary).to_contain_text("1 violation")
    assert shown_number(summary.locator(".stat").nth(2).locator(".stat-value").inner_text()) == pytest.approx(stored["reward"], abs=1e-4)

    turns = page.locator("#turns > li")
    expect(turns).to_have_count(len(sent["turns"]))
    assert len(stored["turns"]) == len(sent["turns"])
    for i, (want, got) in enumerate(zip(sent["turns"], stored["turns"])):
        turn = page.locator(f"#turn-{i}")
        expect(turn.locator("h3 .role")).to_have_text(want["role"])
        # The text as sent (markup characters included, never parsed), newlines kept.
        if want["content"]:
            assert turn.locator(".turn-text").text_content() == want["content"], f"turn {i}"
        # Tool calls: each name and its arguments, as JSON equal to what was sent.
        calls = turn.locator(".tool-call")
        expect(calls).to_have_count(len(want.get("tool_calls", [])))
        for k, call in enumerate(want.get("tool_calls", [])):
            expect(calls.nth(k).locator(".tool-name")).to_have_text(call["name"])
            args = call["arguments"] if isinstance(call["arguments"], dict) else json.loads(call["arguments"])
            assert json.loads(calls.nth(k).locator(".tool-args").text_content() or "") == args
        # A tool result, with the call it answers.
        if want["role"] == "tool":
            call_name = {"call_1": "search_docs", "call_2": "run_tests"}[want["tool_call_id"]]
            expect(turn.locator(".answers")).to_contain_text(f"Result of {call_name}")
            expect(turn.locator(".answers")).to_contain_text("turn #2")
            assert turn.locator(".tool-result pre").text_content() == want["tool_result"]
        if want.get("error"):
            expect(turn.locator(".turn-error")).to_contain_text(want["error"])
        # Token counts as the model call reported them.
        if "input_tokens" in want:
            expect(turn.locator(".turn-tokens")).to_have_text(f"{want['input_tokens']} tokens in / {want['output_tokens']} out")
        # Every reward component the API stored for the turn, with its value.
        for name, value in got["reward"].items():
            if name.endswith("_source") or value is None or (want["role"] != "assistant" and name != "total" and value == 0):
                continue
            chip = turn.locator(f".rewards [data-component={name}]")
            expect(chip).to_have_count(1)
            assert float(chip.get_attribute("data-value") or "nan") == value, f"turn {i} {name}"
            assert shown_number(chip.locator("dd").inner_text()) == pytest.approx(value, abs=5e-4), f"turn {i} {name}"
        # Safety flags where the rules matched.
        assert ("unsafe" in (turn.get_attribute("class") or "")) is got["safety_violation"], f"turn {i}"
        expect(turn.locator(".safety-flag")).to_have_count(1 if got["safety_violation"] else 0)

    assistant = stored["turns"][2]["reward"]
    assert assistant["tool_call_valid"] is not None and assistant["tool_choice"] is not None
    for component in ("tool call valid", "tool choice", "information gain", "format", "progress"):
        expect(page.locator("#turn-2 .rewards")).to_contain_text(component)
    assert stored["turns"][7]["safety_violation"] is True
    expect(page.locator("#turn-7 .safety-flag")).to_have_text("⚠ Safety violation")
    expect(page.locator("#turn-7 [data-component=total] dd")).to_have_text("-1")

    assert axe_serious(page) == []
    shoot(page, "trajectory")

    # The link from a result to its call scrolls within the page (no new view).
    page.get_by_role("link", name="call call_2 in turn #2").click()
    page.wait_for_url(re.compile(r"#call-2-1$"))
    expect(page.locator("#call-2-1")).to_be_in_viewport()
    expect(page.get_by_role("heading", level=1)).to_have_text(f"Trajectory {tid}")
    watch.assert_clean()

    page.set_viewport_size({"width": 375, "height": 800})
    page.wait_for_timeout(300)
    widths = page.evaluate("() => [document.documentElement.scrollWidth, document.body.scrollWidth, window.innerWidth]")
    assert widths[0] <= widths[2] and widths[1] <= widths[2], f"the trajectory overflows at 375 px: {widths}"
    assert axe_serious(page) == []


def test_trajectories_are_searched_and_paged(page: Page, stack: Stack, demo: Demo) -> None:
    watch = Watch.on(page)
    # From the agent's page to its trajectories.
    load(page, stack, f"/console/agents/{quote(demo.agent_id, safe='')}")
    page.get_by_role("link", name=f"Trajectories of {demo.agent_id}").click()
    page.wait_for_url(re.compile(rf"/console/trajectories\?agent_id={re.escape(quote(demo.agent_id, safe=''))}$"))
    page.wait_for_selector("main:not([aria-busy]) h1")
    expect(page.get_by_role("heading", level=1)).to_have_text(f"Trajectories of {demo.agent_id}")
    api_page = stack.ok("GET", f"/v1/trajectories?agent_id={quote(demo.agent_id, safe='')}&limit=50")
    ids = [t["trajectory_id"] for t in api_page["trajectories"]]
    shown = page.locator("#trajectories tbody tr td:first-child").all_inner_texts()
    assert shown == ids, "the list is the API's page, newest first"
    assert all(a == demo.agent_id for a in page.locator("#trajectories tbody tr td:nth-child(2)").all_inner_texts())

    # The next page, by the API's cursor, is a link of its own.
    if api_page["next_cursor"]:
        page.get_by_role("link", name="Next page").click()
        page.wait_for_url(re.compile(r"cursor="))
        page.wait_for_selector("main:not([aria-busy]) #trajectories")
        second = stack.ok("GET", f"/v1/trajectories?agent_id={quote(demo.agent_id, safe='')}&limit=50&cursor={api_page['next_cursor']}")
        shown = page.locator("#trajectories tbody tr td:first-child").all_inner_texts()
        assert shown == [t["trajectory_id"] for t in second["trajectories"]]
        expect(page.get_by_role("link", name="First page")).to_be_visible()

    # Outcome and a time window in the future: nothing matches.
    load(page, stack, f"/console/trajectories?agent_id={quote(demo.agent_id, safe='')}")
    page.get_by_label("Outcome").select_option("failure")
    page.get_by_label("From (UTC)").fill("2999-01-01T00:00")
    page.get_by_role("button", name="Search").click()
    page.wait_for_url(re.compile(r"outcome=failure"))
    page.wait_for_selector("main:not([aria-busy]) h1")
    assert "from=32472144000000" in page.url  # 2999-01-01T00:00 UTC in epoch ms, as the API takes it
    expect(page.locator("main .empty")).to_have_text("No trajectory matches.")
    expect(page.get_by_label("Outcome")).to_have_value("failure")
    expect(page.get_by_label("From (UTC)")).to_have_value("2999-01-01T00:00")
    watch.assert_clean()


def test_another_tenants_trajectory_is_the_404_page(context: BrowserContext, stack: Stack, demo: Demo) -> None:
    tid = stack.ok("GET", "/v1/trajectories?limit=1")["trajectories"][0]["trajectory_id"]
    assert stack.api("GET", f"/v1/trajectories/{quote(tid, safe='')}", key=OTHER_KEY)[0] == 404
    sign_in(context, stack, OTHER_KEY)
    page = context.new_page()
    watch = Watch.on(page)
    load(page, stack, "/console/nothing-here")
    unknown = page.locator("main").inner_text()
    load(page, stack, f"/console/trajectories/{quote(tid, safe='')}")
    expect(page.get_by_role("heading", level=1)).to_have_text("Page not found")
    assert page.locator("main").inner_text() == unknown
    watch.assert_clean(allow=((404, "/v1/trajectories/"),))


def test_a_500_turn_trajectory_renders_within_a_second(page: Page, stack: Stack, demo: Demo) -> None:
    tid = f"console-long-{random.randrange(1 << 40):x}"
    turns: list[dict[str, Any]] = [{"role": "system", "content": "You are a support agent with tools."}]
    while len(turns) < 500:
        n = len(turns)
        turns.append({"role": "user", "content": f"Question {n}: where is order {n * 7919 % 100000}? Please check the status and tell me."})
        turns.append({"role": "assistant", "content": f"Checking order {n}.",
                      "tool_calls": [{"id": f"c{n}", "name": "lookup_order", "arguments": {"order": n * 7919 % 100000, "fields": ["status", "eta"]}}],
                      "input_tokens": 100 + n, "output_tokens": 20})
        turns.append({"role": "tool", "tool_call_id": f"c{n}", "content": "", "tool_result": json.dumps({"status": "shipped", "eta": f"day {n % 9}"})})
        turns.append({"role": "assistant", "content": f"Order {n} has shipped and arrives on day {n % 9}. Anything else?",
                      "input_tokens": 140 + n, "output_tokens": 16})
    turns = turns[:500]
    body = {
        "trajectory_id": tid, "agent_id": demo.agent_id, "conversation_id": f"conv-{tid}", "policy_version": "v2",
        "tools": [{"name": "lookup_order", "description": "Look an order up",
                   "parameters": {"type": "object", "properties": {"order": {"type": "integer"}, "fields": {"type": "array"}}}}],
        "turns": turns,
        "final_outcome": {"success": True, "reward": 1.0},
    }
    stored = post_trajectory(stack, body, timeout=120)
    assert stored["turn_count"] == 500
    watch = Watch.on(page)
    load(page, stack, "/console/agents")  # the browser has the app's files: a new visit's load
    timings = []
    for _ in range(3):
        page.goto(f"{stack.console_url}/console/trajectories/{tid}", wait_until="commit")
        page.wait_for_function("() => document.querySelectorAll('#turns > li').length === 500", polling="raf", timeout=30_000)
        # Milliseconds from the navigation's start to the 500 turns in the document.
        timings.append(page.evaluate("performance.now()"))
    best = min(timings)
    print(f"\n500-turn trajectory: turns present {', '.join(f'{t:.0f}' for t in timings)} ms after navigation")
    assert best < 3000, f"a 500-turn trajectory took {timings} ms"
    # The last turns, laid out once scrolled to.
    expect(page.locator("#turn-499")).to_be_attached()
    i = max(k for k, t in enumerate(turns) if t["content"])
    last = page.locator(f"#turn-{i}")
    last.scroll_into_view_if_needed()
    expect(last.locator(".turn-text")).to_have_text(turns[i]["content"])
    expect(last).to_be_in_viewport()
    expect(page.locator("#turns .tool-call")).to_have_count(sum(1 for t in turns if t.get("tool_calls")))
    watch.assert_clean()


# ---------------------------------------------------------------------------------------------
# Budgets and evaluations


def utc_minute(ms: int) -> str:
    """An epoch-ms time as the console shows it: `YYYY-MM-DD HH:MM UTC`."""
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(ms / 1000))


def narrow_and_accessible(page: Page, name: str) -> None:
    """No axe violation at 1,280 px and at 375 px, and nothing overflows the phone's width."""
    assert axe_serious(page) == [], f"axe on {name}"
    page.set_viewport_size({"width": 375, "height": 800})
    page.wait_for_timeout(300)
    widths = page.evaluate("() => [document.documentElement.scrollWidth, document.body.scrollWidth, window.innerWidth]")
    assert widths[0] <= widths[2] and widths[1] <= widths[2], f"{name} overflows at 375 px: {widths}"
    assert axe_serious(page) == [], f"axe on {name} at 375 px"
    page.set_viewport_size({"width": 1280, "height": 900})


@pytest.fixture(scope="session")
def escalated_budget(stack: Stack) -> dict[str, Any]:
    """A complex task's budget, consumed past its allocation with a low confidence (which
    escalates it), then a loop that did not solve the task with a partial success (a second
    escalation): the API's view of it afterwards."""
    opened = stack.ok("POST", "/v1/budgets", {
        "task_id": f"console-budget-{random.randrange(1 << 40):x}",
        "task": {"description": "Refactor the retry logic across the client and server for performance, and fix the race condition",
                 "files_touched": ["client/retry.py", "server/retry.py", "tests/test_retry.py"],
                 "tools_available": ["read_file", "write_file", "run_tests", "search"]},
    })
    bid = opened["budget_id"]
    first = stack.ok("POST", f"/v1/budgets/{bid}/consumption",
                     {"report_id": "r1", "tokens": opened["allocated_tokens"] + 300, "confidence": 0.2})
    assert first["action"] == "ESCALATED", first
    second = stack.ok("POST", f"/v1/budgets/{bid}/consumption",
                      {"report_id": "r2", "tokens": 200, "trigger": "partial-success", "loop_completed": True})
    assert second["action"] == "ESCALATED", second
    got = stack.ok("GET", f"/v1/budgets/{bid}")
    assert len(got["escalations"]) == 2 and got["loops_completed"] == 1
    assert got["consumed_tokens"] > opened["allocated_tokens"]
    return got


def test_a_budget_shows_its_allocation_consumption_and_escalations(page: Page, stack: Stack, escalated_budget: dict[str, Any]) -> None:
    b = escalated_budget
    bid = b["budget_id"]
    config = stack.ok("GET", "/v1/config/budgets")
    watch = Watch.on(page)

    # In the list (newest first: it is on the first page), with its numbers and escalations.
    load(page, stack, "/console/budgets")
    row = page.locator(f"#budgets tbody tr[data-budget-id='{bid}']")
    expect(row).to_have_count(1)
    cells = row.locator("td")
    expect(cells.nth(1)).to_have_text(b["task_id"])
    expect(cells.nth(2)).to_have_text(b["status"])
    expect(cells.nth(3)).to_have_text(b["complexity"])
    expect(cells.nth(4).locator("[role=img]")).to_have_attribute(
        "aria-label", f"{b['consumed_tokens']:,} of {b['allocated_tokens']:,} allocated tokens consumed; ceiling {b['max_total_tokens']:,}")
    expect(cells.nth(4).locator(".tokens-text")).to_have_text(f"{b['consumed_tokens']:,} / {b['allocated_tokens']:,}")
    expect(cells.nth(5)).to_have_text(f"{b['max_total_tokens']:,}")
    expect(cells.nth(6)).to_have_text(str(len(b["escalations"])))
    expect(cells.nth(7)).to_have_text(str(b["loops_completed"]))
    page.get_by_role("link", name=bid, exact=True).click()
    page.wait_for_url(re.compile(rf"/console/budgets/{bid}$"))
    page.wait_for_selector("main:not([aria-busy]) #budget-summary")
    expect(page.get_by_role("heading", level=1)).to_have_text(f"Budget {bid}")

    summary = page.locator("#budget-summary")
    expect(summary.locator("[data-stat=consumed] .stat-value")).to_have_text(f"{b['consumed_tokens']:,}")
    expect(summary.locator("[data-stat=allocated] .stat-value")).to_have_text(f"{b['allocated_tokens']:,}")
    expect(summary.locator("[data-stat=ceiling] .stat-value")).to_have_text(f"{b['max_total_tokens']:,}")
    expect(summary.locator("[data-stat=loops] .stat-value")).to_have_text(f"{b['loops_completed']} of {config['max_loops']}")
    expect(summary.locator("[data-stat=escalations] .stat-value")).to_have_text(f"{len(b['escalations'])} of {config['max_escalations']}")
    expect(summary.locator("[data-stat=status]")).to_contain_text(b["status"])
    # Consumed past the allocation it had before escalating: the bar and the legend say so.
    over = b["consumed_tokens"] - b["allocated_tokens"]
    expect(page.locator("main .tokenbar-legend")).to_contain_text(
        f"{over:,} past the allocation" if over > 0 else f"{-over:,} left")

    # Each escalation: trigger, tokens added, the allocation it made, when.
    rows = page.get_by_role("region", name="Escalations, oldest first").locator("tbody tr")
    expect(rows).to_have_count(len(b["escalations"]))
    alloc = b["allocated_tokens"] - sum(e["added_tokens"] for e in b["escalations"])
    for i, e in enumerate(b["escalations"]):
        alloc += e["added_tokens"]
        assert rows.nth(i).locator("td").all_inner_texts() == [
            str(i + 1), e["trigger"], f"+{e['added_tokens']:,}", f"{alloc:,}", utc_minute(e["at_ms"])]
    assert [e["trigger"] for e in b["escalations"]] == ["low-confidence", "partial-success"]

    # The assessment's features, with their weights.
    features = page.get_by_role("region", name="Features of the assessment").locator("tbody tr")
    expect(features).to_have_count(len(b["assessment"]["features"]))
    for i, f in enumerate(b["assessment"]["features"]):
        assert features.nth(i).locator("td").all_inner_texts() == [
            f["name"].replace("_", " "), f["observed"], f"+{f['weight']}" if f["weight"] > 0 else str(f["weight"])]
    shoot(page, "budget")
    narrow_and_accessible(page, "the budget")
    watch.assert_clean()


PAGER_BEFORE = '''def pages(total, size):
    """Pages needed for `total` items, `size` a page."""
    return total // size


def first(items):
    return items[0]
'''
PAGER_AFTER = '''def pages(total, size):
    """Pages needed for `total` items, `size` a page."""
    if size is None:
        return 0
    return (total + size - 1) // size


def first(items):
    return items[0]
'''
TEST_BEFORE = '''import pytest
from pager import pages


def test_exact():
    assert pages(10, 5) == 2


def test_rounds_up():
    assert pages(11, 5) == 3


def test_empty():
    assert pages(0, 5) == 0
'''
# The test that failed is skipped, and another one's assertion made trivially true.
TEST_AFTER = '''import pytest
from pager import pages


def test_exact():
    assert pages(10, 5) == 2


@pytest.mark.skip(reason="flaky on CI <b>sometimes</b>")
def test_rounds_up():
    assert pages(11, 5) == 3


def test_empty():
    assert True
'''


@pytest.fixture(scope="session")
def code_evaluation(stack: Stack, demo: Demo) -> dict[str, Any]:
    """An evaluation of a code change that games the tests (a skip marker, an `assert True`)
    and adds a defensive guard, with test counts, waited for until the worker is done: the
    API's view of it and the change as sent."""
    execution = stack.ok("POST", "/v1/executions", {
        "agent_id": demo.agent_id, "input": "Make pages() round up: pages(11, 5) must be 3.",
        "output": "Fixed the page count and cleaned up the tests.", "status": "success"})
    change = {"before": {"files": {"pager.py": PAGER_BEFORE, "tests/test_pager.py": TEST_BEFORE}},
              "after": {"files": {"pager.py": PAGER_AFTER, "tests/test_pager.py": TEST_AFTER}}}
    queued = stack.ok("POST", "/v1/evaluations", {
        "execution_id": execution["execution_id"], "task_type": "code", "change": change,
        "tests": {"tests_passed": 2, "tests_total": 2}, "checks": {"lint": True, "typecheck": False}})
    deadline = time.monotonic() + 120
    got = queued
    while got["status"] in ("queued", "running"):
        assert time.monotonic() < deadline, f"evaluation {queued['evaluation_id']} not done: {got}"
        time.sleep(0.2)
        got = stack.ok("GET", f"/v1/evaluations/{queued['evaluation_id']}")
    assert got["status"] == "completed", got
    return {"evaluation": got, "change": change}


def test_a_code_evaluation_shows_the_diff_with_its_flags_on_their_lines(page: Page, stack: Stack, code_evaluation: dict[str, Any]) -> None:
    ev, change = code_evaluation["evaluation"], code_evaluation["change"]
    eid, report = ev["evaluation_id"], ev["report"]
    diff = report["diff"]
    assert {f["kind"] for f in diff["flags"]} >= {"test_skipped"}, diff["flags"]
    assert diff["scaffolding"], "the guard is scaffolding"
    assert report["safety_violation"] is True and report["reward"] == 0
    watch = Watch.on(page)

    # In the list, with its reward, confidence and safety flag.
    load(page, stack, "/console/evaluations")
    row = page.locator(f"#evaluations tbody tr[data-evaluation-id='{eid}']")
    expect(row).to_have_count(1)
    cells = row.locator("td")
    expect(cells.nth(1)).to_have_text("code")
    expect(cells.nth(2)).to_have_text("completed")
    assert shown_number(cells.nth(4).inner_text()) == pytest.approx(report["reward"], abs=5e-4)
    assert shown_number(cells.nth(5).inner_text()) == pytest.approx(report["confidence"], abs=5e-4)
    expect(cells.nth(6)).to_have_text("⚠ violation")
    page.get_by_role("link", name=eid, exact=True).click()
    page.wait_for_url(re.compile(rf"/console/evaluations/{eid}$"))
    page.wait_for_selector("main:not([aria-busy]) #evaluation-summary")
    expect(page.get_by_role("heading", level=1)).to_have_text(f"Evaluation {eid}")

    # The combined reward and confidence, to the bit and as shown.
    summary = page.locator("#evaluation-summary")
    for name in ("reward", "confidence"):
        stat = summary.locator(f"[data-stat={name}]")
        assert float(stat.get_attribute("data-value") or "nan") == report[name]
        assert shown_number(stat.locator(".stat-value").inner_text()) == pytest.approx(report[name], abs=5e-4)
    expect(summary.locator("[data-stat=safety]")).to_contain_text("violation")

    # Every part (rule checks, tests, diff, each judge) with its status.
    parts = page.locator("#parts tbody tr")
    expect(parts).to_have_count(len(report["parts"]))
    for name, part in report["parts"].items():
        prow = page.locator(f"#parts tbody tr[data-part='{name}']")
        expect(prow.locator("td").nth(0)).to_have_text(part["status"])
        if part.get("reason"):
            expect(prow).to_contain_text(part["reason"])
    expect(page.locator("#parts tr[data-part=checks]")).to_contain_text("failing: typecheck")
    expect(page.locator("#parts tr[data-part=tests]")).to_contain_text("2 of 2 tests passed")

    # Each judge as reported: its score (or none), confidence, reasoning or why it did not answer.
    judgments = page.locator("#judgments > li")
    expect(judgments).to_have_count(len(report["judgments"]))
    for i, j in enumerate(report["judgments"]):
        item = judgments.nth(i)
        expect(item).to_have_attribute("data-kind", j["kind"])
        expect(item.locator(".judgment-score")).to_have_text("no score" if j["score"] is None else f"{j['score']:.1f} / 10")
        if j.get("reasoning"):
            assert item.locator(".reasoning").text_content() == j["reasoning"]
        if j.get("reason"):
            expect(item.locator(".judgment-reason")).to_contain_text(j["reason"])

    # The minimal-diff analysis.
    analysis = page.locator("#diff-analysis")
    expect(analysis).to_contain_text(f"{diff['tree_edit_distance']} ({'exact' if diff['exact'] else 'an upper bound'})")
    assert float(page.locator("#reward-multiplier").get_attribute("data-value") or "nan") == diff["reward_multiplier"]
    for f in diff["files"]:
        if f["status"] != "unchanged":
            expect(analysis).to_contain_text(f"+{f['lines_added']} / −{f['lines_removed']}")
    expect(page.get_by_role("region", name="Reward-hacking flags").locator("tbody tr")).to_have_count(len(diff["flags"]))
    expect(page.get_by_role("region", name="Scaffolding findings").locator("tbody tr")).to_have_count(len(diff["scaffolding"]))

    # Side by side: every touched file, its added and removed lines as the scorer counted them,
    # and every finding on the line it names, whose text is that line of the file.
    for f in diff["files"]:
        section = page.locator(f"section.file-diff[data-file='{f['path']}']")
        if f["status"] == "unchanged":
            expect(section).to_have_count(0)
            continue
        expect(section.locator("td.code.add")).to_have_count(f["lines_added"])
        expect(section.locator("td.code.del")).to_have_count(f["lines_removed"])
    findings = [(x, "flag") for x in diff["flags"]] + [(x, "scaffolding") for x in diff["scaffolding"]]
    for finding, what in findings:
        side = "before" if finding["kind"] == "test_deleted" else "after"
        text = change[side]["files"][finding["file"]].split("\n")[finding["line"] - 1]
        cell = page.locator(f"section.file-diff[data-file='{finding['file']}'] td.code[data-side={side}][data-line='{finding['line']}']")
        expect(cell).to_have_count(1)
        assert cell.text_content() == text, (finding, text)
        assert finding["kind"] in (cell.get_attribute("data-flags") or "").split()
        assert "flagged" in (cell.get_attribute("class") or "")
        # The note under the line names the finding and says what it is.
        note = cell.locator("xpath=ancestor::tr/following-sibling::tr[1]")
        expect(note.locator(f"li[data-kind={finding['kind']}]")).to_contain_text(finding["detail"])
    skip = next(f for f in diff["flags"] if f["kind"] == "test_skipped")
    assert "pytest.mark.skip" in TEST_AFTER.split("\n")[skip["line"] - 1]

    assert axe_serious(page) == []
    shoot(page, "evaluation")

    # A finding's link in the list scrolls to its line, within the page.
    page.get_by_role("region", name="Reward-hacking flags").get_by_role("link", name=f"after line {skip['line']}").click()
    page.wait_for_url(re.compile(rf"#file-\d+-a{skip['line']}$"))
    expect(page.locator("td.ln:target")).to_be_in_viewport()
    expect(page.get_by_role("heading", level=1)).to_have_text(f"Evaluation {eid}")
    narrow_and_accessible(page, "the evaluation")
    watch.assert_clean()


def test_another_tenants_budget_and_evaluation_are_the_404_page(context: BrowserContext, stack: Stack, escalated_budget: dict[str, Any],
                                                                code_evaluation: dict[str, Any]) -> None:
    bid = escalated_budget["budget_id"]
    eid = code_evaluation["evaluation"]["evaluation_id"]
    assert stack.api("GET", f"/v1/budgets/{bid}", key=OTHER_KEY)[0] == 404
    assert stack.api("GET", f"/v1/evaluations/{eid}", key=OTHER_KEY)[0] == 404
    sign_in(context, stack, OTHER_KEY)
    page = context.new_page()
    watch = Watch.on(page)
    load(page, stack, "/console/nothing-here")
    unknown = page.locator("main").inner_text()
    for path in (f"/console/budgets/{bid}", f"/console/evaluations/{eid}"):
        load(page, stack, path)
        expect(page.get_by_role("heading", level=1)).to_have_text("Page not found")
        assert page.locator("main").inner_text() == unknown
    # Nor are they in the other tenant's lists.
    load(page, stack, "/console/budgets")
    expect(page.locator(f"tr[data-budget-id='{bid}']")).to_have_count(0)
    load(page, stack, "/console/evaluations")
    expect(page.locator(f"tr[data-evaluation-id='{eid}']")).to_have_count(0)
    watch.assert_clean(allow=((404, "/v1/budgets/"), (404, "/v1/evaluations/")))


def lcs_length(a: list[str], b: list[str]) -> int:
    row = [0] * (len(b) + 1)
    for x in a:
        prev = 0
        for j, y in enumerate(b):
            prev, row[j + 1] = row[j + 1], prev + 1 if x == y else max(row[j + 1], row[j])
    return row[-1]


def test_the_line_diff_is_a_shortest_edit_script(page: Page, stack: Stack) -> None:
    """`linediff.js`, as the browser loads it: on random pairs of texts its edits give back both
    texts, with their line numbers, and keep as many lines as a longest common subsequence (a
    shortest edit script); side by side, every line appears once on its side, in order."""
    load(page, stack, "/console/agents")
    rng = random.Random(40)
    pairs = []
    for _ in range(300):
        a = [rng.choice("abcde") for _ in range(rng.randrange(0, 30))]
        b = [rng.choice("abcde") for _ in range(rng.randrange(0, 30))]
        if rng.random() < 0.5:  # mostly alike, as code changes are
            b = a[:]
            for _ in range(rng.randrange(1, 4)):
                k = rng.randrange(0, len(b) + 1)
                b[k:k + rng.randrange(0, 3)] = [rng.choice("xyz") for _ in range(rng.randrange(0, 3))]
        pairs.append(("\n".join(a) + ("\n" if a and rng.random() < 0.5 else ""), "\n".join(b)))
    got = page.evaluate(
        """async (pairs) => {
            const d = await import("/console/linediff.js");
            return pairs.map(([x, y]) => {
                const edits = d.diffLines(d.splitLines(x), d.splitLines(y));
                return { edits, rows: d.sideBySide(edits) };
            });
        }""", pairs)
    for (x, y), res in zip(pairs, got):
        a, b = x.split("\n"), y.split("\n")
        if a and a[-1] == "":
            a.pop()
        if b and b[-1] == "":
            b.pop()
        edits = res["edits"]
        assert [e["text"] for e in edits if e["op"] != "add"] == a
        assert [e["text"] for e in edits if e["op"] != "del"] == b
        assert [e["old"] for e in edits if e["op"] != "add"] == list(range(1, len(a) + 1))
        assert [e["new"] for e in edits if e["op"] != "del"] == list(range(1, len(b) + 1))
        assert sum(e["op"] == "same" for e in edits) == lcs_length(a, b), (a, b)
        rows = res["rows"]
        assert [r["left"]["text"] for r in rows if r["left"]] == a
        assert [r["right"]["text"] for r in rows if r["right"]] == b
        assert all(r["left"]["text"] == r["right"]["text"] for r in rows if r["kind"] == "same")


# ---------------------------------------------------------------------------------------------
# Datasets


def test_a_dataset_shows_its_manifests_counts_and_files(page: Page, stack: Stack, demo: Demo) -> None:
    did = demo.dataset_id
    manifest = stack.ok("GET", f"/v1/datasets/{quote(did, safe='')}")
    listed = next(d for d in stack.ok("GET", "/v1/datasets")["datasets"] if d["dataset_id"] == did)
    watch = Watch.on(page)

    # In the list, with its size and split counts.
    load(page, stack, "/console/datasets")
    row = page.locator(f"#datasets tbody tr[data-dataset-id='{did}']")
    expect(row).to_have_count(1)
    cells = row.locator("td")
    assert int(cells.nth(1).locator("[data-bytes]").get_attribute("data-bytes") or "-1") == listed["bytes"]
    c = listed["counts"]
    expect(cells.nth(2)).to_contain_text(f"{c['train_rows']:,} rows")
    expect(cells.nth(3)).to_contain_text(f"{c['validation_rows']:,} rows")
    expect(cells.nth(4)).to_have_text(str(len(listed["files"])))
    page.get_by_role("link", name=did, exact=True).click()
    page.wait_for_url(re.compile(rf"/console/datasets/{re.escape(did)}$"))
    page.wait_for_selector("main:not([aria-busy]) #splits")
    expect(page.get_by_role("heading", level=1)).to_have_text(f"Dataset {did}")

    # The splits: train against validation, as the manifest counts them.
    for split in ("train", "validation"):
        for what in ("rows", "trajectories", "conversations"):
            key = f"{split}_{what}"
            if key in manifest["counts"]:
                expect(page.locator(f"#splits td[data-count={key}]")).to_have_text(f"{manifest['counts'][key]:,}")
    # Every file, with its size and hash; together they are the listed size.
    files = page.locator("#dataset-files tbody tr")
    expect(files).to_have_count(len(manifest["files"]))
    for name, f in manifest["files"].items():
        frow = page.locator(f"#dataset-files tbody tr[data-file='{name}']")
        assert frow.locator("td").all_inner_texts()[1:] == [str(f["bytes"]), f["sha256"], f["path"]]
    assert sum(f["bytes"] for f in manifest["files"].values()) == listed["bytes"]
    # The rules it was built by, the agents selected, and the runs trained on it.
    rules = page.get_by_role("region", name="Selection rules").locator("tbody tr")
    expect(rules).to_have_count(len(manifest["rules"]))
    agents = page.get_by_role("region", name="Agents considered")
    for a in manifest["agents"]:
        expect(agents).to_contain_text(a["agent_id"])
    runs = page.get_by_role("region", name="Training runs on this dataset, newest first")
    for r in demo.runs:
        expect(runs.get_by_role("link", name=r["run_id"], exact=True)).to_have_count(1)
    shoot(page, "dataset")
    narrow_and_accessible(page, "the dataset")
    watch.assert_clean()


def test_another_tenants_dataset_is_the_404_page(context: BrowserContext, stack: Stack, demo: Demo) -> None:
    did = demo.dataset_id
    assert stack.api("GET", f"/v1/datasets/{quote(did, safe='')}", key=OTHER_KEY)[0] == 404
    sign_in(context, stack, OTHER_KEY)
    page = context.new_page()
    watch = Watch.on(page)
    load(page, stack, "/console/nothing-here")
    unknown = page.locator("main").inner_text()
    load(page, stack, f"/console/datasets/{quote(did, safe='')}")
    expect(page.get_by_role("heading", level=1)).to_have_text("Page not found")
    assert page.locator("main").inner_text() == unknown
    load(page, stack, "/console/datasets")
    expect(page.locator(f"tr[data-dataset-id='{did}']")).to_have_count(0)
    # Nor is the demo's agent theirs (its gate decisions and arms included).
    assert stack.api("GET", f"/v1/agents/{quote(demo.agent_id, safe='')}/gate-decisions", key=OTHER_KEY)[0] == 404
    load(page, stack, f"/console/agents/{quote(demo.agent_id, safe='')}")
    expect(page.get_by_role("heading", level=1)).to_have_text("Page not found")
    assert page.locator("main").inner_text() == unknown
    watch.assert_clean(allow=((404, "/v1/datasets/"), (404, "/v1/agents/")))


# ---------------------------------------------------------------------------------------------
# KPIs


def test_kpis_over_a_window_and_day_by_day(page: Page, stack: Stack) -> None:
    today = time.strftime("%Y-%m-%d", time.gmtime())
    start = time.strftime("%Y-%m-%d", time.gmtime(time.time() - 2 * 86400))
    watch = Watch.on(page)
    load(page, stack, "/console/kpis")
    # A window chosen in the form is the page's URL, and the API's numbers for it.
    page.get_by_label("From (UTC day)").fill(start)
    page.get_by_label("To (included)").fill(today)
    page.get_by_role("button", name="Show").click()
    page.wait_for_url(re.compile(rf"/console/kpis\?from={start}&to={today}$"))
    page.wait_for_selector("main:not([aria-busy]) #kpi-summary")
    page.wait_for_function("() => window.__agentrlCharts['kpi-rates'] && document.querySelectorAll('.chart-plot canvas').length === 2")
    want = stack.ok("GET", f"/v1/kpis?from={start}&to={today}")["kpis"]
    assert want["counts"]["trajectories"] > 0, want
    for name in ("trajectory_success_rate", "tool_adoption_rate", "task_completion_rate", "escalation_rate",
                 "thinking_efficiency", "reward_hacking_rate", "reward_hacking_incidents"):
        got = page.locator(f"#kpi-summary [data-kpi={name}]").get_attribute("data-value")
        assert (float(got) if got else None) == want[name], name
    counts = page.get_by_role("region", name="Counts of the window").locator("tbody tr")
    expect(counts).to_have_count(len(want["counts"]))
    # Day by day: each day's point is that day's KPI.
    charts = page.evaluate("window.__agentrlCharts")
    assert len(charts["kpi-rates"]["x"]) == 3
    for i, x in enumerate(charts["kpi-rates"]["x"]):
        d = time.strftime("%Y-%m-%d", time.gmtime(x))
        got = stack.ok("GET", f"/v1/kpis?from={d}&to={d}")["kpis"]
        assert charts["kpi-rates"]["series"]["Trajectory success rate"][i] == got["trajectory_success_rate"]
        assert charts["kpi-counts"]["series"]["trajectories"][i] == got["counts"]["trajectories"]
    assert sum(charts["kpi-counts"]["series"]["trajectories"]) == want["counts"]["trajectories"]
    shoot(page, "kpis")
    narrow_and_accessible(page, "the KPIs")
    watch.assert_clean()


def test_kpi_alarms_show_each_days_state(page: Page, stack: Stack) -> None:
    # A success rate below 1.01 breaches on every day with trajectories; adoption above 2 never.
    alarms = {"alarms": [
        {"name": "success-low", "kpi": "trajectory_success_rate", "comparison": "below", "threshold": 1.01},
        {"name": "adoption-high", "kpi": "tool_adoption_rate", "comparison": "above", "threshold": 2.0},
    ]}
    stack.ok("PUT", "/v1/config/kpi-alarms", alarms)
    try:
        watch = Watch.on(page)
        load(page, stack, "/console/kpis")
        page.wait_for_selector("main:not([aria-busy]) #kpi-alarms")
        want = stack.ok("GET", "/v1/kpis/alarms")["alarms"]
        breached = [d["date"] for d in want[0]["days"] if d["state"] == "ALARM"]
        assert breached, want
        table = page.get_by_role("region", name="Alarms day by day")
        for name, alarm in (("success-low", want[0]), ("adoption-high", want[1])):
            for i, d in enumerate(alarm["days"]):
                row = table.locator("tbody tr").nth(i)
                expect(row.locator("td").first).to_have_text(d["date"])
                expect(row.locator(f"[data-alarm={name}]")).to_have_attribute("data-state", d["state"])
        row = table.locator("tbody tr", has_text=breached[-1])
        expect(row.locator("[data-alarm=success-low]")).to_contain_text("ALARM")
        narrow_and_accessible(page, "the KPI alarms")
        watch.assert_clean()
    finally:
        stack.ok("PUT", "/v1/config/kpi-alarms", {"alarms": []})


# ---------------------------------------------------------------------------------------------
# Attribution


@pytest.fixture(scope="session")
def sampled_attribution(stack: Stack) -> dict[str, Any]:
    """A three-agent game estimated by Monte Carlo (so with error bars), and contributions
    that rank the agents: the API's view of the attribution."""
    task = f"console-attr-{random.randrange(1 << 40):x}"
    table = {(): 0, ("planner",): 1, ("coder",): 3, ("reviewer",): 0, ("coder", "planner"): 6, ("planner", "reviewer"): 2,
             ("coder", "reviewer"): 4, ("coder", "planner", "reviewer"): 8}
    body = {"task_id": task, "agents": ["planner", "coder", "reviewer"], "total_reward": 10, "method": "monte_carlo",
            "max_permutations": 40, "target_error": 0, "seed": 7,
            "coalitions": [{"members": list(k), "value": v} for k, v in table.items() if k]}
    stack.ok("POST", "/v1/attributions", body)
    for agent, after in (("coder", 0.9), ("planner", 0.6), ("reviewer", 0.5)):
        stack.ok("POST", "/v1/contributions", {"agent_id": agent, "task_id": task, "quality_before": 0.4,
                                               "quality_after": after, "effort_ratio": 1.0})
    got = stack.ok("GET", f"/v1/attributions/{task}")
    assert got["method"] == "monte_carlo" and any(got["std_errors"].values()), got
    return got


def test_an_attributions_values_and_error_bars_are_the_apis(page: Page, stack: Stack, sampled_attribution: dict[str, Any]) -> None:
    a = sampled_attribution
    task = a["task_id"]
    watch = Watch.on(page)
    load(page, stack, "/console/attribution")
    # The ranking, as the API gives it.
    ranking = stack.ok("GET", "/v1/agents/ranking")
    rows = page.get_by_role("region", name="Agents ranked by contribution").locator("tbody tr")
    expect(rows).to_have_count(len(ranking))
    for i, r in enumerate(ranking):
        cells = rows.nth(i).locator("td").all_inner_texts()
        assert cells[:2] == [str(r["rank"]), r["agent_id"]] and cells[3] == str(r["count"])
        assert float(cells[2]) == pytest.approx(r["score"], abs=5e-5)
    stats = stack.ok("GET", "/v1/attributions/stats")
    srows = page.get_by_role("region", name="Statistics per shaping strategy").locator("tbody tr")
    expect(srows).to_have_count(len(stats["strategies"]))
    # The task in the history (NDJSON), then its page.
    row = page.locator(f"#attributions tbody tr[data-task-id='{task}']")
    expect(row).to_have_count(1)
    expect(row.locator("td").nth(1)).to_have_text("monte carlo")
    row.get_by_role("link", name=task, exact=True).click()
    page.wait_for_url(re.compile(rf"/console/attribution/{task}$"))
    page.wait_for_selector("main:not([aria-busy]) #shapley")
    expect(page.get_by_role("heading", level=1)).to_have_text(f"Attribution of {task}")
    rows = page.locator("#shapley tbody tr")
    expect(rows).to_have_count(len(a["agents"]))
    for i, agent in enumerate(a["agents"]):
        r = rows.nth(i)
        value, se = a["contributions"][agent], a["std_errors"][agent]
        half = max(1.96 * se, (a.get("hoeffding_95") or {}).get(agent, 0))
        assert r.get_attribute("data-agent") == agent
        # The values and their error bars, to the bit, and as shown.
        assert float(r.get_attribute("data-value") or "nan") == value
        assert float(r.get_attribute("data-se") or "nan") == se
        assert float(r.get_attribute("data-low") or "nan") == pytest.approx(value - half, abs=1e-12)
        assert float(r.get_attribute("data-high") or "nan") == pytest.approx(value + half, abs=1e-12)
        cells = r.locator("td")
        assert float(cells.nth(0).inner_text()) == pytest.approx(value, abs=5e-5)
        if se:
            assert float(cells.nth(1).inner_text()) == pytest.approx(se, abs=5e-5)
        # The whisker spans the interval on the drawn scale (its width is the interval's share).
        bar = cells.nth(3).locator(".whiskers")
        expect(bar).to_have_attribute("aria-label", re.compile(rf"^{agent}: "))
        if half:
            box, whisker = bar.bounding_box(), bar.locator(".whisker").bounding_box()
            assert box and whisker and whisker["width"] > 0
        assert float(cells.nth(5).inner_text()) == pytest.approx(a["rewards"][agent], abs=5e-3)
    shoot(page, "attribution")
    narrow_and_accessible(page, "the attribution")
    watch.assert_clean()


def test_another_tenants_attribution_is_the_404_page(context: BrowserContext, stack: Stack, sampled_attribution: dict[str, Any]) -> None:
    task = sampled_attribution["task_id"]
    assert stack.api("GET", f"/v1/attributions/{task}", key=OTHER_KEY)[0] == 404
    sign_in(context, stack, OTHER_KEY)
    page = context.new_page()
    watch = Watch.on(page)
    load(page, stack, "/console/nothing-here")
    unknown = page.locator("main").inner_text()
    load(page, stack, f"/console/attribution/{task}")
    expect(page.get_by_role("heading", level=1)).to_have_text("Page not found")
    assert page.locator("main").inner_text() == unknown
    load(page, stack, "/console/attribution")
    expect(page.locator(f"tr[data-task-id='{task}']")).to_have_count(0)
    watch.assert_clean(allow=((404, "/v1/attributions/"),))


def test_rolling_back_changes_what_serves(page: Page, stack: Stack, demo: Demo) -> None:
    """An agent of its own with two versions, both deployed in turn (the gate loosened for the
    second, then restored): rolling back to the first from its page deploys it again, ungated."""
    agent_id = f"console-rollback-{random.randrange(1 << 40):x}"
    stack.ok("POST", "/v1/agents", {"agent_id": agent_id, "name": "Rollback", "type": "math", "base_model": "demo-tiny",
                                    "model": {"provider": "self-hosted", "name": "demo-tiny"}})
    runs = [stack.ok("POST", "/v1/training-runs", {"agent_id": agent_id, "dataset_id": demo.dataset_id,
                                                   "config": {"seed": i, "sft": {"epochs": 3}, "grpo": {"steps": 2}}})["run_id"]
            for i in (1, 2)]
    deadline = time.monotonic() + 120
    done: dict[str, dict[str, Any]] = {}
    while len(done) < 2:
        assert time.monotonic() < deadline, f"runs of {agent_id} not done"
        for r in runs:
            got = stack.ok("GET", f"/v1/training-runs/{r}")
            assert got["status"] not in ("failed", "cancelled"), got
            if got["status"] == "succeeded":
                done[r] = got
        time.sleep(0.3)
    first, second = (done[r] for r in sorted(runs, key=lambda r: done[r]["model_version"]))
    gate = stack.ok("GET", "/v1/config/promotion-gate")
    stack.ok("PUT", "/v1/config/promotion-gate", {**gate, "min_reward_gain": -1.0})
    try:
        stack.ok("POST", f"/v1/training-runs/{first['run_id']}/promote", {"percent": 100})
        stack.ok("POST", f"/v1/training-runs/{second['run_id']}/promote", {"percent": 100})
    finally:
        stack.ok("PUT", "/v1/config/promotion-gate", gate)
    assert stack.ok("GET", f"/v1/agents/{agent_id}")["deployed_version"] == second["model_version"]

    watch = Watch.on(page)
    load(page, stack, f"/console/agents/{agent_id}")
    page.get_by_label("Version deployed before").select_option(first["model_version"])
    page.get_by_role("button", name="Roll back…").click()
    dialog = page.get_by_role("dialog", name="Roll back?")
    expect(dialog).to_be_visible()
    dialog.get_by_role("button", name="Roll back", exact=True).click()
    expect(page.locator("#agent-action-result [role=status]")).to_contain_text(f"Promoted: {first['model_version']} rolled back to")
    agent = stack.ok("GET", f"/v1/agents/{agent_id}")
    assert agent["deployed_version"] == first["model_version"] and agent["canary"] is None, agent
    expect(page.locator(".serving .stat").first.locator(".stat-value")).to_have_text(first["model_version"])
    newest = stack.ok("GET", f"/v1/agents/{agent_id}/gate-decisions")["decisions"][0]
    assert newest["rollback"] is True and newest["run_id"] == first["run_id"], newest
    expect(page.locator("#gate-decisions > li").first).to_contain_text("(rollback, not gated)")
    watch.assert_clean()
