"""Generates the SDK's typed models and its resource methods from agentrl's OpenAPI document.

    python tools/generate.py openapi.json        # or a URL: http://127.0.0.1:8080/openapi.json

writes `src/agentrl/models.py` (a TypedDict or alias per schema) and `src/agentrl/_resources.py`
(one class per resource, sync and async, one method per operation). The tests regenerate both
from the document `agentrl serve` serves and compare them with the committed files, so the SDK
cannot drift from the API: a new or renamed operation fails here until `OPERATIONS` names it.
"""

from __future__ import annotations

import json
import keyword
import re
import sys
import textwrap
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
PACKAGE = HERE.parent / "src" / "agentrl"

# operationId → (resource, method). Operations the SDK leaves to other clients are in SKIPPED.
OPERATIONS: dict[str, tuple[str, str]] = {
    "list_agents": ("agents", "list"),
    "create_agents": ("agents", "create"),
    "read_agents": ("agents", "get"),
    "patch": ("agents", "update"),
    "ranking": ("agents", "ranking"),
    "read_agents_learning": ("agents", "learning"),
    "put_settings": ("agents", "put_learning_settings"),
    "unfreeze": ("agents", "unfreeze"),
    "update": ("agents", "apply_learning_update"),
    "outcomes": ("agents", "record_outcomes"),
    "read_agents_replies": ("agents", "reply"),
    "route": ("agents", "route"),
    "versions": ("agents", "versions"),
    "gate_decisions": ("agents", "gate_decisions"),
    "export_attributions": ("attributions", "export"),
    "create_attributions": ("attributions", "create"),
    "create_session": ("attributions", "create_session"),
    "read_session": ("attributions", "get_session"),
    "post_values": ("attributions", "post_values"),
    "stats": ("attributions", "stats"),
    "read_attributions": ("attributions", "get"),
    "list_budgets": ("budgets", "list"),
    "create_budgets": ("budgets", "create"),
    "read_budgets": ("budgets", "get"),
    "complete": ("budgets", "complete"),
    "consume": ("budgets", "consume"),
    "get_budgets": ("config", "get_budgets"),
    "put_budgets": ("config", "put_budgets"),
    "get_diffs": ("config", "get_diffs"),
    "put_diffs": ("config", "put_diffs"),
    "get_gateway": ("config", "get_gateway"),
    "put_gateway": ("config", "put_gateway"),
    "get_judges": ("config", "get_judges"),
    "put_judges": ("config", "put_judges"),
    "get_learning": ("config", "get_learning"),
    "put_learning": ("config", "put_learning"),
    "get_federation": ("config", "get_federation"),
    "put_federation": ("config", "put_federation"),
    "list_federation_rounds": ("federation", "list_rounds"),
    "get_promotion-gate": ("config", "get_promotion_gate"),
    "put_promotion-gate": ("config", "put_promotion_gate"),
    "get_kpi-alarms": ("config", "get_kpi_alarms"),
    "put_kpi-alarms": ("config", "put_kpi_alarms"),
    "get_rewards": ("config", "get_rewards"),
    "put_rewards": ("config", "put_rewards"),
    "get_traces": ("config", "get_traces"),
    "put_traces": ("config", "put_traces"),
    "get_trajectories": ("config", "get_trajectories"),
    "put_trajectories": ("config", "put_trajectories"),
    "contribute": ("attributions", "contribute"),
    "score": ("diffs", "score"),
    "list_evaluations": ("evaluations", "list"),
    "create_evaluations": ("evaluations", "create"),
    "change": ("evaluations", "change"),
    "read_evaluations": ("evaluations", "get"),
    "post_events": ("events", "create"),
    "create_executions": ("executions", "create"),
    "read_executions": ("executions", "get"),
    "reward": ("executions", "reward"),
    "verify": ("executions", "verify"),
    "check": ("gates", "check"),
    "usage": ("judges", "usage"),
    "read_kpis": ("kpis", "get"),
    "list_kpi_alarm_states": ("kpis", "alarms"),
    "budget": ("privacy", "budget"),
    "end_traces_conversations_end": ("traces", "end_conversation"),
    "list_training_examples": ("training_examples", "list"),
    "export_training_examples_export": ("training_examples", "export"),
    "list_datasets": ("datasets", "list"),
    "read_datasets": ("datasets", "get"),
    "list_training_runs": ("training_runs", "list"),
    "list_trajectories": ("trajectories", "list"),
    "read_trajectories": ("trajectories", "get"),
    "create_training_runs": ("training_runs", "create"),
    "read_training_runs": ("training_runs", "get"),
    "metrics": ("training_runs", "metrics"),
    "logs": ("training_runs", "logs"),
    "cancel": ("training_runs", "cancel"),
    "promote": ("training_runs", "promote"),
    "post_trajectories": ("trajectories", "create"),
    "end_gateway_sessions_end": ("gateway", "end_session"),
}

# The OpenAI-compatible routes belong to the `openai` package (`agentrl.openai_client`), OTLP
# export to OpenTelemetry exporters and the integrations, health and the document to `Client`.
SKIPPED = {
    "chat_in_session", "models_in_session", "chat_gateway_chat_completions",
    "models_gateway_models", "chat_models_chat_completions", "models_models_models",
    "export_traces", "health", "openapi_json",
    "sign_in", "read_console_session", "sign_out",
}

HEADER = '"""{what}\n\nGenerated by `tools/generate.py` from agentrl\'s OpenAPI document (API {version}); do not edit.\n"""\n'


def load(source: str) -> dict[str, Any]:
    if re.match(r"https?://", source):
        with urllib.request.urlopen(source) as r:  # noqa: S310 (the caller's own server)
            return json.load(r)
    return json.loads(Path(source).read_text())


def ref_name(ref: str) -> str:
    return ref.rsplit("/", 1)[-1]


def doc_lines(text: str | None, indent: str) -> str:
    """`text` as a docstring body (first paragraph kept whole, the rest dropped)."""
    if not text:
        return ""
    para = text.strip().split("\n\n")[0].replace("\\", "\\\\").replace('"""', "'''")
    return textwrap.indent(textwrap.fill(" ".join(para.split()), 92), indent)


# --- types --------------------------------------------------------------------------------


def py_type(schema: dict[str, Any] | bool) -> str:
    """The Python annotation of `schema`."""
    if schema is True or schema == {}:
        return "Any"
    assert isinstance(schema, dict)
    if "$ref" in schema:
        return ref_name(schema["$ref"])
    for combiner in ("oneOf", "anyOf"):
        if combiner in schema:
            return union([py_type(s) for s in schema[combiner]])
    if "allOf" in schema:
        parts = [s for s in schema["allOf"] if s.get("properties") or "$ref" in s]
        return py_type(parts[0]) if len(parts) == 1 else "dict[str, Any]"
    if "enum" in schema:
        return "Literal[" + ", ".join(json.dumps(v) for v in schema["enum"]) + "]"
    kinds = schema.get("type", "object")
    if isinstance(kinds, list):
        return union([py_type({**schema, "type": k}) for k in kinds])
    if kinds == "null":
        return "None"
    if kinds == "array" and "prefixItems" in schema:
        return "tuple[" + ", ".join(py_type(s) for s in schema["prefixItems"]) + "]"
    if kinds == "array":
        return f"list[{py_type(schema.get('items', True))}]"
    if kinds == "object":
        extra = schema.get("additionalProperties")
        value = py_type(extra) if isinstance(extra, dict) else "Any"
        return f"dict[str, {value}]"
    return {"string": "str", "integer": "int", "number": "float", "boolean": "bool"}[kinds]


def union(members: list[str]) -> str:
    unique = list(dict.fromkeys(members))
    if "Any" in unique:
        return "Any"
    # `None` last reads as "optional" at a glance.
    unique.sort(key=lambda m: m == "None")
    return unique[0] if len(unique) == 1 else " | ".join(unique)


def evaluated(annotation: str) -> str:
    """`annotation` where Python evaluates it when the module loads (aliases, the functional
    TypedDict syntax): as a string when it names a model, which may be defined further down."""
    return json.dumps(annotation) if model_names(annotation) else annotation


def model_names(annotation: str) -> set[str]:
    return set(re.findall(r"\b[A-Z][A-Za-z0-9]*\b", annotation)) - {"Any", "None", "Literal"}


def merged_object(schema: dict[str, Any], schemas: dict[str, Any]) -> dict[str, Any] | None:
    """The object schema a TypedDict is written for (allOf parts merged, a part that refers to
    another object schema, as a flattened struct does, taken with its fields), or None."""
    if "allOf" in schema:
        props: dict[str, Any] = {}
        required: list[str] = []
        for part in schema["allOf"]:
            if "$ref" in part:
                part = merged_object(schemas.get(ref_name(part["$ref"]), {}), schemas) or {}
            props |= part.get("properties", {})
            required += part.get("required", [])
        return {"properties": props, "required": required} if props else None
    if schema.get("type") == "object" and schema.get("properties"):
        return schema
    return None


def model(name: str, schema: dict[str, Any], schemas: dict[str, Any]) -> str:
    description = doc_lines(schema.get("description"), "    ")
    obj = merged_object(schema, schemas)
    if obj is None:
        text = f"{name}: TypeAlias = {evaluated(py_type(schema))}\n"
        return text + (f'"""\n{description}\n"""\n' if description else "")
    required = set(obj.get("required", []))
    fields = []
    for prop, sub in obj["properties"].items():
        annotation = py_type(sub)
        fields.append((prop, annotation, prop in required, sub.get("description") if isinstance(sub, dict) else None))
    if any(not p.isidentifier() or keyword.iskeyword(p) for p, *_ in fields):
        # Keys such as `from` are keywords: only the functional syntax can name them, and its
        # values are evaluated when the module loads, so annotations are written as strings.
        body = "".join(
            f"        {json.dumps(p)}: {evaluated(a) if req else f'NotRequired[{evaluated(a)}]'},\n"
            for p, a, req, _ in fields
        )
        text = f'{name} = TypedDict(\n    "{name}",\n    {{\n{body}    }},\n)\n'
        return text + (f'"""\n{description}\n"""\n' if description else "")
    lines = [f"class {name}(TypedDict):"]
    lines.append(f'    """\n{description}\n    """\n' if description else '    """(undocumented)"""\n')
    for prop, annotation, req, about in fields:
        if about:
            lines.append(doc_lines(about, "    #: "))
        lines.append(f"    {prop}: {annotation if req else f'NotRequired[{annotation}]'}")
    return "\n".join(lines) + "\n"


def models_file(doc: dict[str, Any]) -> str:
    schemas = doc["components"]["schemas"]
    parts = [
        HEADER.format(what="The API's request and response bodies, as typed dictionaries.", version=doc["info"]["version"])
        + "\nfrom __future__ import annotations\n\n"
        + "from typing import Any, Literal, TypedDict\n\n"
        + "from typing_extensions import NotRequired, TypeAlias\n",
    ]
    parts += [model(name, schemas[name], schemas) for name in sorted(schemas)]
    return "\n\n".join(parts)


# --- operations ---------------------------------------------------------------------------


@dataclass
class Param:
    name: str  # on the wire
    py: str  # in Python
    annotation: str
    required: bool


@dataclass
class Operation:
    resource: str
    method: str
    http: str
    path: str
    summary: str
    path_params: list[Param] = field(default_factory=list)
    query: list[Param] = field(default_factory=list)
    body: str | None = None  # annotation
    body_required: bool = False
    returns: str = "None"
    page_items: str | None = None  # the array property of a cursor page
    item: str = "Any"  # the annotation of its entries
    ndjson: bool = False


def py_name(name: str) -> str:
    name = name.replace("-", "_")
    return name + "_" if keyword.iskeyword(name) else name


def operations(doc: dict[str, Any]) -> list[Operation]:
    schemas = doc["components"]["schemas"]
    found: list[Operation] = []
    seen = set()
    for path, item in doc["paths"].items():
        for http, op in item.items():
            if http not in {"get", "post", "put", "patch", "delete"}:
                continue
            oid = op["operationId"]
            seen.add(oid)
            if oid in SKIPPED:
                continue
            if oid not in OPERATIONS:
                sys.exit(f"operation {oid} ({http.upper()} {path}) is not named in OPERATIONS")
            resource, method = OPERATIONS[oid]
            summary = op.get("summary") or op.get("description") or ""
            o = Operation(resource, method, http.upper(), path, summary)
            for p in op.get("parameters", []):
                if p["in"] == "header":
                    continue  # Idempotency-Key is the client's
                param = Param(p["name"], py_name(p["name"]), py_type(p.get("schema", {})), p.get("required", False))
                (o.path_params if p["in"] == "path" else o.query).append(param)
            body = op.get("requestBody")
            if body:
                schema = next(iter(body["content"].values())).get("schema", {})
                o.body = py_type(schema)
                o.body_required = body.get("required", False) and "None" not in o.body.split(" | ")
            ok = next((r for code, r in sorted(op["responses"].items()) if code.startswith("2")), {})
            content = ok.get("content", {})
            if "application/x-ndjson" in content:
                o.ndjson, o.returns = True, "dict[str, Any]"
            elif "application/json" in content:
                schema = content["application/json"].get("schema", {})
                o.returns = py_type(schema)
                target = schemas.get(ref_name(schema["$ref"]), {}) if "$ref" in schema else {}
                arrays = [k for k, v in target.get("properties", {}).items() if v.get("type") == "array"]
                if "next_cursor" in target.get("properties", {}) and len(arrays) == 1:
                    o.page_items = arrays[0]
                    o.item = py_type(target["properties"][arrays[0]].get("items", True))
            found.append(o)
    missing = set(OPERATIONS) - seen
    if missing:
        sys.exit(f"OPERATIONS names operations the document lacks: {sorted(missing)}")
    return found


def qualified(annotation: str) -> str:
    """Model names prefixed with `m.` (the resources module imports the models as `m`), and
    `list` as `builtins.list`: in a class with a method named `list`, the name is the method."""
    out = re.sub(r"\blist\[", "builtins.list[", annotation)
    for n in model_names(annotation):
        out = re.sub(rf"\b{n}\b", f"m.{n}", out)
    return out


def signature(o: Operation, drop_cursor: bool = False) -> str:
    args = ["self"] + [f"{p.py}: {qualified(p.annotation)}" for p in o.path_params]
    if o.body is not None and o.body_required:
        args.append(f"body: {qualified(o.body)}")
    kw = []
    if o.body is not None and not o.body_required:
        kw.append(f"body: {qualified(o.body)}{'' if 'None' in o.body else ' | None'} = None")
    for p in o.query:
        if drop_cursor and p.name == "cursor":
            continue
        annotation = qualified(p.annotation if p.required else union([p.annotation, "None"]))
        kw.append(f"{p.py}: {annotation}" + ("" if p.required else " = None"))
    if o.http != "GET":
        kw.append("idempotency_key: str | None = None")
    return ", ".join(args + (["*"] + kw if kw else []))


def call_args(o: Operation, drop_cursor: bool = False) -> str:
    path = o.path
    for p in o.path_params:
        path = path.replace("{" + p.name + "}", "{_seg(" + p.py + ")}")
    args = [json.dumps(o.http), ("f" if o.path_params else "") + json.dumps(path)]
    query = [p for p in o.query if not (drop_cursor and p.name == "cursor")]
    if query:
        args.append("params={" + ", ".join(f"{json.dumps(p.name)}: {p.py}" for p in query) + "}")
    if o.body is not None:
        args.append("json=body")
    if o.http != "GET":
        args.append("idempotency_key=idempotency_key")
    return ", ".join(args)


def methods(o: Operation, asynchronous: bool) -> list[str]:
    doc = doc_lines(o.summary, "        ")
    where = f"`{o.http} {o.path}`"
    aw = "await " if asynchronous else ""
    df = "async def" if asynchronous else "def"
    out = []
    if o.ndjson:
        iterator = "AsyncIterator" if asynchronous else "Iterator"
        out.append(
            f"    def {o.method}({signature(o, drop_cursor=True)}) -> {iterator}[dict[str, Any]]:\n"
            f'        """\n{doc}\n\n        {where}, every page (the records of one line each).\n        """\n'
            f"        return self._client.ndjson({call_args(o, drop_cursor=True)})\n"
        )
        return out
    out.append(
        f"    {df} {o.method}({signature(o)}) -> {qualified(o.returns)}:\n"
        f'        """\n{doc}\n\n        {where}.\n        """\n'
        f"        return cast({json.dumps(qualified(o.returns))}, {aw}self._client.request({call_args(o)}))\n"
    )
    if o.page_items:
        iterator = "AsyncIterator" if asynchronous else "Iterator"
        name = "iter" if o.method == "list" else f"iter_{o.method}"
        out.append(
            f"    def {name}({signature(o, drop_cursor=True)}) -> {iterator}[{qualified(o.item)}]:\n"
            f'        """\n        Every `{o.page_items}` of {where}, page after page.\n        """\n'
            f"        return self._client.paginate({call_args(o, drop_cursor=True)}, items={json.dumps(o.page_items)})\n"
        )
    return out


def class_name(resource: str, asynchronous: bool) -> str:
    name = "".join(part.title() for part in resource.split("_"))
    return ("Async" if asynchronous else "") + name


def resources_file(doc: dict[str, Any]) -> str:
    ops = operations(doc)
    by_resource: dict[str, list[Operation]] = {}
    for o in ops:
        by_resource.setdefault(o.resource, []).append(o)
    parts = [
        HEADER.format(what="The API's operations, one class per resource (sync, then async).", version=doc["info"]["version"])
        + "\nfrom __future__ import annotations\n\n"
        + "import builtins\nfrom typing import TYPE_CHECKING, Any, AsyncIterator, Iterator, cast\n\n"
        + "from . import models as m\nfrom ._paths import segment as _seg\n\n"
        + "if TYPE_CHECKING:\n    from ._client import AsyncClient, Client\n",
    ]
    for asynchronous in (False, True):
        for resource in sorted(by_resource):
            owner = "AsyncClient" if asynchronous else "Client"
            body = [f"class {class_name(resource, asynchronous)}:",
                    f'    """`{owner}.{resource}`."""\n',
                    f"    def __init__(self, client: {owner}) -> None:\n        self._client = client\n"]
            for o in sorted(by_resource[resource], key=lambda o: o.method):
                body += methods(o, asynchronous)
            parts.append("\n".join(body))
    for asynchronous in (False, True):
        parts.append(mixin(sorted(by_resource), asynchronous))
    return "\n\n".join(parts)


def mixin(resources: list[str], asynchronous: bool) -> str:
    """The base class that gives a client its resource attributes, typed."""
    owner = "AsyncClient" if asynchronous else "Client"
    lines = [f"class {'Async' if asynchronous else 'Sync'}Resources:",
             f'    """The resources of `{owner}`."""\n']
    lines += [f"    {r}: {class_name(r, asynchronous)}" for r in resources]
    lines += ["", "    def _attach(self) -> None:", f'        client = cast("{owner}", self)']
    lines += [f"        self.{r} = {class_name(r, asynchronous)}(client)" for r in resources]
    return "\n".join(lines) + "\n"


def main() -> None:
    doc = load(sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:8080/openapi.json")
    (PACKAGE / "models.py").write_text(models_file(doc))
    (PACKAGE / "_resources.py").write_text(resources_file(doc))


if __name__ == "__main__":
    main()
