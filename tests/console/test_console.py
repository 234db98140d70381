"""The web console in headless Chromium against `agentrl serve` with the demo's data."""

from __future__ import annotations

import math
import random
import re
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
        "not-found": "/console/no-such-page",
    }


@pytest.mark.parametrize("name", ["agents", "agent", "runs", "runs-of-agent", "run", "compare", "not-found"])
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
