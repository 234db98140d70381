"""agentrl's Python SDK: a typed client of the agentrl API (sync and async), an OpenAI client
pointed at its gateway, and integrations that turn traced agent runs into trajectories.

    import agentrl

    client = agentrl.Client("http://127.0.0.1:8080", api_key="...")
    budget = client.budgets.create({"task_id": "t-1", "agent_id": "coder", ...})
"""

from . import models
from ._client import AsyncClient, Client, __version__
from ._errors import (
    AgentrlError,
    APIConnectionError,
    APIError,
    AuthenticationError,
    BadRequestError,
    ConflictError,
    InternalServerError,
    NotFoundError,
    PayloadTooLargeError,
    PermissionDeniedError,
    RateLimitError,
    UnprocessableEntityError,
)
from ._openai import async_openai_client, openai_client

__all__ = [
    "APIConnectionError",
    "APIError",
    "AgentrlError",
    "AsyncClient",
    "AuthenticationError",
    "BadRequestError",
    "Client",
    "ConflictError",
    "InternalServerError",
    "NotFoundError",
    "PayloadTooLargeError",
    "PermissionDeniedError",
    "RateLimitError",
    "UnprocessableEntityError",
    "__version__",
    "async_openai_client",
    "models",
    "openai_client",
]
