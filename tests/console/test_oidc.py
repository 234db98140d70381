"""The console signing in through an OIDC provider (authorization code + PKCE), as deployed on
AWS, against `agentrl serve --oidc-issuer` and a stub provider on 127.0.0.1: the real
redirects, the code traded with the verifier, the access token sent as a bearer token, and a
page of the token's tenant's data."""

from __future__ import annotations

import os
import re
import subprocess
import time
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import pytest
from playwright.sync_api import Browser, Page, Request, Route, expect

from conftest import Stack, Watch, _binary, _wait_listening, axe_serious
from stub_idp import StubIdp

CLIENT_ID = "agentrl-console-test"
AUDIENCE = "agentrl-api-test"
KEY = "oidc-tests-key-acme-0001"
OTHER_KEY = "oidc-tests-key-other-001"


@dataclass
class OidcStack:
    stack: Stack
    idp: StubIdp


@pytest.fixture(scope="module")
def oidc(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OidcStack]:
    idp = StubIdp(client_id=CLIENT_ID, tenant="acme", audience=AUDIENCE).start()
    data = tmp_path_factory.mktemp("agentrl-oidc")
    env = {
        **os.environ,
        "AGENTRL_CONSOLE_OIDC_CLIENT_ID": CLIENT_ID,
        "AGENTRL_CONSOLE_OIDC_ISSUER": idp.issuer,
        "AGENTRL_CONSOLE_OIDC_AUTHORIZATION_ENDPOINT": f"{idp.issuer}/authorize",
        "AGENTRL_CONSOLE_OIDC_TOKEN_ENDPOINT": f"{idp.issuer}/token",
        "AGENTRL_CONSOLE_OIDC_SCOPES": "openid profile",
    }
    log = open(data / "serve.log", "w+")
    proc = subprocess.Popen(
        [_binary(), "serve", "--addr", "127.0.0.1:0", "--data-dir", str(data),
         "--api-key", f"acme={KEY}", "--api-key", f"other={OTHER_KEY}",
         "--oidc-issuer", idp.issuer, "--oidc-audience", AUDIENCE],
        stdout=subprocess.DEVNULL, stderr=log, stdin=subprocess.DEVNULL, env=env,
    )
    try:
        base = _wait_listening(Path(data / "serve.log"), proc)
        idp.redirect_uri = f"{base}/console/callback"
        yield OidcStack(Stack(base, base, data), idp)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()
        idp.stop()


def budget(stack: Stack, key: str, task_id: str) -> str:
    status, got = stack.api("POST", "/v1/budgets", {"task_id": task_id, "task": {"description": "Fix the pager"}}, key)
    assert status == 201, got
    return got["budget_id"]


def test_signing_in_through_the_provider_with_pkce_reads_the_tokens_tenant(browser: Browser, oidc: OidcStack) -> None:
    stack, idp = oidc.stack, oidc.idp
    mine = budget(stack, KEY, "oidc-task-acme")
    theirs = budget(stack, OTHER_KEY, "oidc-task-other")

    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    watch = Watch.on(page)
    api_calls: list[Request] = []
    page.on("request", lambda r: api_calls.append(r) if "/v1/" in r.url else None)

    first = page.goto(f"{stack.console_url}/console/budgets")
    assert first is not None
    csp = first.headers["content-security-policy"]
    # Exactly one other origin to connect to: the token endpoint's.
    assert f"connect-src 'self' {idp.issuer};" in csp, csp
    page.wait_for_url(re.compile(r"/console/login\?next="))
    expect(page.get_by_role("heading", level=1)).to_have_text("Sign in to agentrl")
    assert page.get_by_label("API key").count() == 0
    assert axe_serious(page) == []

    page.get_by_role("button", name="Sign in with your identity provider").click()
    page.wait_for_url(re.compile(r"/console/budgets$"))
    expect(page.locator(f"tr[data-budget-id='{mine}']")).to_be_visible()
    assert page.locator(f"tr[data-budget-id='{theirs}']").count() == 0
    expect(page.locator("header")).to_contain_text("acme")

    # What the page asked the provider: a code, for S256, with a fresh state and challenge.
    asked = idp.authorize_queries[-1]
    assert asked["response_type"] == "code"
    assert asked["code_challenge_method"] == "S256"
    assert asked["client_id"] == CLIENT_ID
    assert asked["scope"] == "openid profile"
    assert asked["redirect_uri"] == f"{stack.console_url}/console/callback"
    assert len(asked["state"]) >= 16 and len(asked["code_challenge"]) == 43
    assert idp.token_answers == ["issued"], "the token endpoint checked the verifier"
    # The code is not left in the address bar or the history.
    assert "code=" not in page.url and page.evaluate("history.length") >= 1

    # Every API call carried the access token; no cookie was set.
    assert api_calls, "the page read the API"
    for r in api_calls:
        auth = r.headers.get("authorization", "")
        assert auth.startswith("Bearer ey"), f"{r.method} {r.url}: {auth!r}"
        assert "x-csrf-token" not in r.headers
    assert context.cookies() == []
    # The verifier and state were used once: nothing pending is left.
    assert page.evaluate("sessionStorage.getItem('agentrl.oidc.pending')") is None

    # Another tenant's budget is the 404 page, as with a key.
    page.goto(f"{stack.console_url}/console/budgets/{theirs}")
    expect(page.get_by_role("heading", level=1)).to_have_text("Page not found")
    watch.assert_clean(allow=((404, f"/v1/budgets/{theirs}"),))

    # Logging out forgets the token: the next page asks to sign in again.
    page.get_by_role("button", name="Log out").click()
    page.wait_for_url(re.compile(r"/console/login"))
    assert page.evaluate("sessionStorage.getItem('agentrl.oidc.token')") is None
    page.goto(f"{stack.console_url}/console/budgets")
    page.wait_for_url(re.compile(r"/console/login\?next="))
    context.close()


def test_a_callback_whose_state_was_not_issued_here_is_refused(browser: Browser, oidc: OidcStack) -> None:
    stack, idp = oidc.stack, oidc.idp
    context = browser.new_context()
    page: Page = context.new_page()
    # Start a sign-in, but stop at the provider's redirect back and come back with another state.
    back: list[str] = []

    def hold(route: Route) -> None:
        back.append(route.request.url)
        route.abort()

    page.route(f"{idp.issuer}/authorize*", hold)
    page.goto(f"{stack.console_url}/console/login")
    page.get_by_role("button", name="Sign in with your identity provider").click()
    deadline = time.monotonic() + 10
    while not back and time.monotonic() < deadline:
        page.wait_for_timeout(50)
    assert back, "the page left for the provider"
    answers = len(idp.token_answers)
    forged = urllib.parse.urlencode({"code": "stolen-code", "state": "not-the-state"})
    page.goto(f"{stack.console_url}/console/callback?{forged}")
    expect(page.get_by_role("heading", level=1)).to_have_text("Sign-in failed")
    expect(page.get_by_role("alert")).to_contain_text("state does not match")
    # The pending sign-in was there, and is used up by the refused callback.
    assert dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(back[0]).query))["state"] != "not-the-state"
    assert page.evaluate("sessionStorage.getItem('agentrl.oidc.pending')") is None
    assert len(idp.token_answers) == answers, "no code was traded"
    assert page.evaluate("sessionStorage.getItem('agentrl.oidc.token')") is None
    context.close()


def test_the_api_refuses_a_token_for_another_audience(oidc: OidcStack) -> None:
    stack, idp = oidc.stack, oidc.idp
    claims = {"iss": idp.issuer, "sub": "u", "tenant_id": "acme", "exp": int(time.time()) + 600}
    good = idp.key.sign_jwt({**claims, "aud": AUDIENCE})
    wrong = idp.key.sign_jwt({**claims, "aud": "someone-else"})
    assert stack.api("GET", "/v1/budgets", key=good)[0] == 200
    status, problem = stack.api("GET", "/v1/budgets", key=wrong)
    assert status == 401 and problem["status"] == 401
