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
        "not-found": "/console/no-such-page",
    }


@pytest.mark.parametrize("name", ["agents", "agent", "runs", "runs-of-agent", "run", "compare", "trajectories", "not-found"])
def test_page_loads_clean_accessible_and_narrow(page: Page, stack: Stack, demo: Demo, name: str) -> None:
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
        watch.assert_clean(allow=((409, "/promote"),))
    finally:
        stack.ok("PUT", "/v1/config/promotion-gate", gate)
    agent = stack.ok("GET", f"/v1/agents/{demo.agent_id}")
    assert agent["deployed_version"] == "v1"


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
