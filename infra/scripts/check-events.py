#!/usr/bin/env python3
"""Check that API Gateway HTTP API (payload v2) fixtures in events/ match template.yaml.

- every HttpApi route declared in the template (SAM function events of Type HttpApi)
  has at least one fixture whose routeKey is that route;
- every v2 fixture's routeKey is a route of the template;
- each fixture is self-consistent: requestContext.routeKey/http.method/http.path agree
  with routeKey/rawPath, pathParameters fill the route's {params}, a JSON body parses,
  and an authorizer block is present exactly when the route is authenticated.

Run with the venv python (needs cfn-lint for its YAML loader that understands !Ref/!Sub):
    "$(infra/scripts/python-env.sh | tail -n1)/bin/python" infra/scripts/check-events.py
Exit status 1 on any problem.
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from cfnlint.decode import decode

ROOT = Path(__file__).resolve().parents[2]

# Properties SAM accepts on a function event of Type HttpApi. cfn-lint does not expand
# SAM events and `sam validate` ignores unknown keys, so a typo (Methd:) would silently
# turn a route into `ANY /...`: reject unknown keys here.
HTTPAPI_EVENT_KEYS = {"ApiId", "Auth", "Method", "Path", "PayloadFormatVersion",
                      "RouteSettings", "TimeoutInMillis"}


def template_routes(path: Path) -> dict[str, bool]:
    """routeKey -> requires auth."""
    tpl, matches = decode(str(path))
    if tpl is None:
        sys.exit(f"cannot parse {path}: {[str(m) for m in matches]}")
    apis = {n: r.get("Properties", {}) for n, r in tpl.get("Resources", {}).items()
            if r.get("Type") == "AWS::Serverless::HttpApi"}
    routes: dict[str, bool] = {}
    for name, res in tpl.get("Resources", {}).items():
        if res.get("Type") != "AWS::Serverless::Function":
            continue
        for ev_name, ev in (res.get("Properties", {}).get("Events") or {}).items():
            if ev.get("Type") != "HttpApi":
                continue
            p = ev.get("Properties") or {}
            unknown = set(p) - HTTPAPI_EVENT_KEYS
            if unknown:
                sys.exit(f"template.yaml: {name}.Events.{ev_name}: unknown HttpApi event "
                         f"properties {sorted(unknown)} (allowed: {sorted(HTTPAPI_EVENT_KEYS)})")
            method = str(p.get("Method", "ANY")).upper()
            key = f"{method} {p.get('Path', '/{proxy+}')}" if p else "$default"
            api_id = p.get("ApiId", {})
            api_name = api_id.get("Ref") if isinstance(api_id, dict) else None
            default_auth = (apis.get(api_name, {}).get("Auth") or {}).get("DefaultAuthorizer")
            authorizer = (p.get("Auth") or {}).get("Authorizer", default_auth)
            needs_auth = authorizer not in (None, "NONE")
            if key in routes:
                sys.exit(f"{name}.{ev_name}: duplicate route {key}")
            routes[key] = needs_auth
    return routes


def route_regex(route_path: str) -> re.Pattern[str]:
    out = ""
    for part in re.split(r"(\{[^}]+\})", route_path):
        if part.startswith("{"):
            name = part[1:-1]
            out += f"(?P<{name.rstrip('+')}>.+)" if name.endswith("+") else f"(?P<{name}>[^/]+)"
        else:
            out += re.escape(part)
    return re.compile(f"^{out}$")


def check_fixture(path: Path, ev: dict, routes: dict[str, bool]) -> list[str]:
    errs: list[str] = []
    key = ev.get("routeKey")
    rc = ev.get("requestContext") or {}
    http = rc.get("http") or {}
    if key not in routes:
        return [f"routeKey {key!r} is not a route of template.yaml"]
    method, route_path = key.split(" ", 1)
    if rc.get("routeKey") != key:
        errs.append(f"requestContext.routeKey {rc.get('routeKey')!r} != routeKey {key!r}")
    if http.get("method") != method:
        errs.append(f"requestContext.http.method {http.get('method')!r} != {method!r}")
    raw = ev.get("rawPath")
    if http.get("path") != raw:
        errs.append(f"requestContext.http.path {http.get('path')!r} != rawPath {raw!r}")
    for field in ("rawQueryString", "headers", "isBase64Encoded"):
        if field not in ev:
            errs.append(f"missing {field}")
    m = route_regex(route_path).match(raw or "")
    if not m:
        errs.append(f"rawPath {raw!r} does not match route path {route_path!r}")
    elif (ev.get("pathParameters") or {}) != m.groupdict():
        errs.append(f"pathParameters {ev.get('pathParameters')!r} != {m.groupdict()!r} (from rawPath)")
    body = ev.get("body")
    ctype = {k.lower(): v for k, v in (ev.get("headers") or {}).items()}.get("content-type", "")
    if body is not None and not ev.get("isBase64Encoded") and "json" in ctype:
        try:
            json.loads(body)
        except (TypeError, ValueError) as e:
            errs.append(f"body is not JSON: {e}")
    has_auth = bool(((rc.get("authorizer") or {}).get("jwt") or {}).get("claims"))
    if routes[key] and not has_auth:
        errs.append("route is authenticated but fixture has no requestContext.authorizer.jwt.claims")
    if not routes[key] and "authorizer" in rc:
        errs.append("route is unauthenticated (Authorizer NONE) but fixture has requestContext.authorizer")
    return errs


def main() -> int:
    routes = template_routes(ROOT / "template.yaml")
    if not routes:
        print("check-events: no HttpApi routes found in template.yaml", file=sys.stderr)
        return 1
    covered: set[str] = set()
    problems: list[str] = []
    n = 0
    for path in sorted((ROOT / "events").rglob("*.json")):
        rel = path.relative_to(ROOT)
        try:
            ev = json.loads(path.read_text())
        except ValueError as e:
            problems.append(f"{rel}: invalid JSON: {e}")
            continue
        if not (isinstance(ev, dict) and ev.get("version") == "2.0" and "routeKey" in ev):
            continue  # not an HTTP API v2 event (e.g. SQS, EventBridge fixtures)
        n += 1
        errs = check_fixture(path, ev, routes)
        problems += [f"{rel}: {e}" for e in errs]
        if ev["routeKey"] in routes:
            covered.add(ev["routeKey"])
    for key in sorted(set(routes) - covered):
        problems.append(f"template.yaml: route {key!r} has no fixture in events/")
    for p in problems:
        print(f"check-events: {p}", file=sys.stderr)
    print(f"check-events: {len(routes)} routes, {n} fixtures, {len(problems)} problems", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
