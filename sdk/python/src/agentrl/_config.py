"""Where the API is and the key that opens it: arguments first, then the environment."""

from __future__ import annotations

import os

from ._errors import AgentrlError

DEFAULT_BASE_URL = "http://127.0.0.1:8080"


def base_url(given: str | None) -> str:
    """`given`, else `AGENTRL_BASE_URL`, else `agentrl serve`'s default address."""
    return (given or os.environ.get("AGENTRL_BASE_URL") or DEFAULT_BASE_URL).rstrip("/")


def api_key(given: str | None) -> str:
    """`given`, else `AGENTRL_API_KEY`; there is no anonymous access."""
    key = given or os.environ.get("AGENTRL_API_KEY")
    if not key:
        raise AgentrlError("no API key: pass api_key= or set AGENTRL_API_KEY")
    return key
