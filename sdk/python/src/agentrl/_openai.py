"""OpenAI clients pointed at an agent's gateway: every call an agent makes through them is
served (the built-in model server, or the tenant's upstream), budgeted and recorded as the
agent's trajectory."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import _config
from ._paths import segment

if TYPE_CHECKING:
    import openai


def gateway_url(agent_id: str, session_id: str | None, base_url: str | None) -> str:
    """The OpenAI base URL of `agent_id`'s gateway; with `session_id`, calls join that session
    (one trajectory); without it, each call is a session of its own, named in the answer's
    `x-agentrl-session` header."""
    url = f"{_config.base_url(base_url)}/gateway/{segment(agent_id)}"
    if session_id is not None:
        url += f"/sessions/{segment(session_id)}"
    return url + "/v1"


def _openai() -> Any:
    try:
        import openai
    except ImportError as e:  # pragma: no cover (the tests install it)
        raise ImportError("agentrl.openai_client needs the `openai` package: pip install 'agentrl-sdk[openai]'") from e
    return openai


def openai_client(
    agent_id: str,
    session_id: str | None = None,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    **kwargs: Any,
) -> openai.OpenAI:
    """An `openai.OpenAI` for `agent_id` through the gateway (extra keyword arguments go to
    `openai.OpenAI`)."""
    return _openai().OpenAI(  # type: ignore[no-any-return]
        base_url=gateway_url(agent_id, session_id, base_url), api_key=_config.api_key(api_key), **kwargs
    )


def async_openai_client(
    agent_id: str,
    session_id: str | None = None,
    *,
    base_url: str | None = None,
    api_key: str | None = None,
    **kwargs: Any,
) -> openai.AsyncOpenAI:
    """`openai_client`, as an `openai.AsyncOpenAI` (what the OpenAI Agents SDK takes)."""
    return _openai().AsyncOpenAI(  # type: ignore[no-any-return]
        base_url=gateway_url(agent_id, session_id, base_url), api_key=_config.api_key(api_key), **kwargs
    )
