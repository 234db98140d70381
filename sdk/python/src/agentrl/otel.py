"""OpenTelemetry set-up: a tracer provider whose spans go to agentrl's `POST /v1/traces`.

    import agentrl.otel

    provider = agentrl.otel.configure(service_name="support-bot")
    # GenAI instrumentations (OpenLLMetry, OpenInference, the OpenTelemetry contrib ones)
    # now export to agentrl; so do spans you start yourself:
    tracer = provider.get_tracer(__name__)

Spans following the GenAI semantic conventions (v1.37: `gen_ai.operation.name` `chat` /
`execute_tool` / `invoke_agent`, `gen_ai.input.messages` …) become trajectories, by
`gen_ai.conversation.id`, once the conversation is ended
(`client.traces.end_conversation(id)`) or after the tenant's quiet period. Needs the `otel`
extra: `pip install 'agentrl-sdk[otel]'`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from . import _config

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider

__all__ = ["configure", "traces_endpoint"]


def traces_endpoint(base_url: str | None = None) -> str:
    """Where OTLP/HTTP exporters send traces: `{base_url}/v1/traces` (the base URL defaults to
    `AGENTRL_BASE_URL`)."""
    return f"{_config.base_url(base_url)}/v1/traces"


def configure(
    base_url: str | None = None,
    api_key: str | None = None,
    *,
    service_name: str = "agentrl-agent",
    resource_attributes: Mapping[str, str] | None = None,
    set_global: bool = True,
) -> TracerProvider:
    """A `TracerProvider` exporting to agentrl: a `BatchSpanProcessor` over the OTLP/HTTP
    exporter (binary protobuf, gzip) with the tenant key as a bearer token.

    `base_url` and `api_key` default to `AGENTRL_BASE_URL` / `AGENTRL_API_KEY`.
    `service_name` is the agent of spans that name none (`gen_ai.agent.id`);
    `resource_attributes` are added to the resource (`gen_ai.conversation.id`, `gen_ai.agent.id`
    there apply to every span). With `set_global`, it becomes OpenTelemetry's global provider,
    which instrumentations use (OpenTelemetry lets that be set once per process). Call
    `force_flush()` before ending a conversation, and `shutdown()` at exit.
    """
    try:
        from opentelemetry import trace
        from opentelemetry.exporter.otlp.proto.http import Compression
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor
    except ImportError as e:
        raise ImportError(
            "agentrl.otel needs the OpenTelemetry SDK and its OTLP/HTTP exporter: "
            "pip install 'agentrl-sdk[otel]'"
        ) from e

    exporter = OTLPSpanExporter(
        endpoint=traces_endpoint(base_url),
        headers={"authorization": f"Bearer {_config.api_key(api_key)}"},
        compression=Compression.Gzip,
    )
    resource = Resource.create({**(resource_attributes or {}), "service.name": service_name})
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(BatchSpanProcessor(exporter))
    if set_global:
        trace.set_tracer_provider(provider)
    return provider
