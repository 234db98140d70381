"""`Client` and `AsyncClient`: the API over httpx, with the resources generated from the
OpenAPI document attached (`client.agents`, `client.budgets`, …).

Both share everything but the loop that sends: how a request is built (bearer key, JSON body,
one `Idempotency-Key` for every attempt of a write), how an answer is read (JSON, or an
`APIError` from its problem+json), and the retry policy.
"""

from __future__ import annotations

import asyncio
import json as jsonlib
import time
import uuid
from importlib.metadata import PackageNotFoundError, version
from typing import Any, AsyncIterator, Iterator, Mapping, cast

import httpx

from . import _config
from ._errors import APIConnectionError, error_for
from ._resources import AsyncResources, SyncResources
from ._retry import RetryPolicy

try:
    __version__ = version("agentrl-sdk")
except PackageNotFoundError:  # run from a source checkout
    __version__ = "0.0.0"

DEFAULT_TIMEOUT = httpx.Timeout(60.0, connect=5.0)
NEXT_CURSOR_HEADER = "x-next-cursor"


class _Base:
    def __init__(self, base_url: str | None, api_key: str | None, max_retries: int) -> None:
        self.base_url = _config.base_url(base_url)
        self._api_key = _config.api_key(api_key)
        self.retry = RetryPolicy(max_retries=max_retries)

    def _headers(self) -> dict[str, str]:
        return {
            "authorization": f"Bearer {self._api_key}",
            "user-agent": f"agentrl-python/{__version__}",
            "accept": "application/json",
        }

    def _request_args(
        self,
        method: str,
        path: str,
        params: Mapping[str, Any] | None,
        json: Any,
        idempotency_key: str | None,
    ) -> dict[str, Any]:
        headers = self._headers()
        if method != "GET":
            # One key for every attempt: a write retried after a lost answer has one effect.
            headers["idempotency-key"] = idempotency_key or str(uuid.uuid4())
        content = None
        if json is not None:
            headers["content-type"] = "application/json"
            content = jsonlib.dumps(json).encode()
        query = {k: _query_value(v) for k, v in (params or {}).items() if v is not None}
        return {"method": method, "url": self.base_url + path, "params": query,
                "headers": headers, "content": content}


def _query_value(value: Any) -> Any:
    return str(value).lower() if isinstance(value, bool) else value


def _answer(response: httpx.Response) -> Any:
    if response.status_code >= 400:
        raise error_for(response)
    if not response.content:
        return None
    return response.json()


def _lines(response: httpx.Response) -> list[dict[str, Any]]:
    if response.status_code >= 400:
        raise error_for(response)
    return [jsonlib.loads(line) for line in response.text.splitlines() if line.strip()]


class Client(_Base, SyncResources):
    """The agentrl API.

    `base_url` defaults to `AGENTRL_BASE_URL` (else `http://127.0.0.1:8080`), `api_key` to
    `AGENTRL_API_KEY`. Calls that fail in transport, or answer 408/429/5xx, are retried up to
    `max_retries` times. Use as a context manager, or call `close()`.
    """

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        timeout: float | httpx.Timeout = DEFAULT_TIMEOUT,
        max_retries: int = 2,
        http_client: httpx.Client | None = None,
    ) -> None:
        super().__init__(base_url, api_key, max_retries)
        self._http = http_client or httpx.Client(timeout=timeout)
        self._attach()

    def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        json: Any = None,
        idempotency_key: str | None = None,
    ) -> Any:
        """Sends one call (retried as the policy says) and returns its decoded JSON answer."""
        return _answer(self._send(self._request_args(method, path, params, json, idempotency_key)))

    def paginate(
        self, method: str, path: str, *, params: Mapping[str, Any] | None = None, items: str
    ) -> Iterator[Any]:
        """The `items` of every page, following `next_cursor`."""
        cursor = None
        while True:
            page = self.request(method, path, params={**(params or {}), "cursor": cursor})
            yield from page[items]
            cursor = page.get("next_cursor")
            if not cursor:
                return

    def ndjson(self, method: str, path: str, *, params: Mapping[str, Any] | None = None) -> Iterator[dict[str, Any]]:
        """The records of a JSON Lines export, page after page (`x-next-cursor`)."""
        cursor = None
        while True:
            args = self._request_args(method, path, {**(params or {}), "cursor": cursor}, None, None)
            response = self._send(args)
            yield from _lines(response)
            cursor = response.headers.get(NEXT_CURSOR_HEADER)
            if not cursor:
                return

    def health(self) -> dict[str, Any]:
        """`GET /health`."""
        return cast("dict[str, Any]", self.request("GET", "/health"))

    def openapi(self) -> dict[str, Any]:
        """The OpenAPI document the server serves (`GET /openapi.json`)."""
        return cast("dict[str, Any]", self.request("GET", "/openapi.json"))

    def _send(self, args: dict[str, Any]) -> httpx.Response:
        attempt = 0
        while True:
            try:
                response = self._http.request(**args)
            except httpx.TransportError as e:
                wait = self.retry.after_error(attempt)
                if wait is None:
                    raise APIConnectionError(f"{args['method']} {args['url']}: {e}") from e
            else:
                wait = self.retry.after_response(attempt, response)
                if wait is None:
                    return response
            attempt += 1
            time.sleep(wait)

    def close(self) -> None:
        """Closes the connection pool."""
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncClient(_Base, AsyncResources):
    """The agentrl API for asyncio: `Client`'s methods, awaited (iterators are async)."""

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        timeout: float | httpx.Timeout = DEFAULT_TIMEOUT,
        max_retries: int = 2,
        http_client: httpx.AsyncClient | None = None,
    ) -> None:
        super().__init__(base_url, api_key, max_retries)
        self._http = http_client or httpx.AsyncClient(timeout=timeout)
        self._attach()

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        json: Any = None,
        idempotency_key: str | None = None,
    ) -> Any:
        """Sends one call (retried as the policy says) and returns its decoded JSON answer."""
        return _answer(await self._send(self._request_args(method, path, params, json, idempotency_key)))

    async def paginate(
        self, method: str, path: str, *, params: Mapping[str, Any] | None = None, items: str
    ) -> AsyncIterator[Any]:
        """The `items` of every page, following `next_cursor`."""
        cursor = None
        while True:
            page = await self.request(method, path, params={**(params or {}), "cursor": cursor})
            for item in page[items]:
                yield item
            cursor = page.get("next_cursor")
            if not cursor:
                return

    async def ndjson(
        self, method: str, path: str, *, params: Mapping[str, Any] | None = None
    ) -> AsyncIterator[dict[str, Any]]:
        """The records of a JSON Lines export, page after page (`x-next-cursor`)."""
        cursor = None
        while True:
            args = self._request_args(method, path, {**(params or {}), "cursor": cursor}, None, None)
            response = await self._send(args)
            for record in _lines(response):
                yield record
            cursor = response.headers.get(NEXT_CURSOR_HEADER)
            if not cursor:
                return

    async def health(self) -> dict[str, Any]:
        """`GET /health`."""
        return cast("dict[str, Any]", await self.request("GET", "/health"))

    async def openapi(self) -> dict[str, Any]:
        """The OpenAPI document the server serves (`GET /openapi.json`)."""
        return cast("dict[str, Any]", await self.request("GET", "/openapi.json"))

    async def _send(self, args: dict[str, Any]) -> httpx.Response:
        attempt = 0
        while True:
            try:
                response = await self._http.request(**args)
            except httpx.TransportError as e:
                wait = self.retry.after_error(attempt)
                if wait is None:
                    raise APIConnectionError(f"{args['method']} {args['url']}: {e}") from e
            else:
                wait = self.retry.after_response(attempt, response)
                if wait is None:
                    return response
            attempt += 1
            await asyncio.sleep(wait)

    async def aclose(self) -> None:
        """Closes the connection pool."""
        await self._http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
