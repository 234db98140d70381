#!/usr/bin/env python3
"""Cold-start probe: how long a function binary takes from spawn to serving, against a local
Lambda Runtime API, next to a hello-world on the same runtime and build profile.

Usage: cold_start.py --endpoint MOTO_URL --runs N NAME=BINARY[,TABLE_PATH] ...
(infra/bench/cold-start.sh builds the binaries, starts moto and runs this.)

For each run of each binary this script serves the Runtime API on 127.0.0.1 (stdlib HTTP
server), spawns the binary with AWS_LAMBDA_RUNTIME_API pointing at it, and records, from just
before the spawn:
  next    the first GET /runtime/invocation/next (init done),
  health  the response to a first event, GET /health (no storage),
  table   the response to a second event, a GET of TABLE_PATH that reads the DynamoDB table
          on moto (the SDK client, its credentials and its first connection),
  warm    the response to a third event, the same GET again (what the table request costs
          once everything is built: moto's own latency, mostly).
Binaries given without a TABLE_PATH get /health every time. Prints one JSON line per binary with
the medians and P90s over the runs, and the ratios to the binary named `hello`.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TENANT = "cold-start-probe"
TABLE = "agentrl-cold-start"
EVENTS = ["health", "table", "warm"]


def event(path: str) -> bytes:
    """An API Gateway HTTP API (payload v2) event with the JWT claim the functions read."""
    return json.dumps(
        {
            "version": "2.0",
            "routeKey": "$default",
            "rawPath": path,
            "rawQueryString": "",
            "headers": {"host": "probe.local", "accept": "application/json"},
            "requestContext": {
                "accountId": "123456789012",
                "apiId": "probe",
                "authorizer": {"jwt": {"claims": {"tenant_id": TENANT}, "scopes": []}},
                "domainName": "probe.local",
                "domainPrefix": "probe",
                "http": {
                    "method": "GET",
                    "path": path,
                    "protocol": "HTTP/1.1",
                    "sourceIp": "127.0.0.1",
                    "userAgent": "cold-start-probe",
                },
                "requestId": "probe",
                "routeKey": "$default",
                "stage": "$default",
                "time": "24/Nov/2026:00:00:00 +0000",
                "timeEpoch": 0,
            },
            "isBase64Encoded": False,
        }
    ).encode()


class Runtime:
    """One Runtime API session: hands out the events in order, times every milestone."""

    def __init__(self, paths: list[str]):
        self.paths = paths
        self.start = 0.0
        self.marks: dict[str, float] = {}
        self.statuses: list[int] = []
        self.done = threading.Event()
        self.served = 0
        self.lock = threading.Lock()

    def mark(self, name: str) -> None:
        with self.lock:
            self.marks.setdefault(name, (time.perf_counter() - self.start) * 1e3)


def handler_for(runtime: Runtime):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *_):
            pass

        def do_GET(self):
            if not self.path.endswith("/runtime/invocation/next"):
                return self.reply(404, b"{}")
            runtime.mark("next")
            with runtime.lock:
                index = runtime.served
                runtime.served += 1
            if index >= len(runtime.paths):
                runtime.done.wait(30)  # the probe kills the process; never answer
                return
            body = event(runtime.paths[index])
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Lambda-Runtime-Aws-Request-Id", f"req-{index}")
            self.send_header("Lambda-Runtime-Deadline-Ms", str(int(time.time() * 1e3) + 30_000))
            self.send_header(
                "Lambda-Runtime-Invoked-Function-Arn",
                "arn:aws:lambda:us-east-1:123456789012:function:probe",
            )
            self.send_header("Lambda-Runtime-Trace-Id", "Root=1-00000000-000000000000000000000000")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self):
            length = int(self.headers.get("Content-Length", 0))
            payload = self.rfile.read(length)
            parts = self.path.strip("/").split("/")
            if len(parts) >= 5 and parts[-1] in ("response", "error"):
                index = int(parts[-2].removeprefix("req-"))
                runtime.mark(EVENTS[index])
                try:
                    runtime.statuses.append(json.loads(payload).get("statusCode", 0))
                except ValueError:
                    runtime.statuses.append(-1)
                if index == len(runtime.paths) - 1:
                    runtime.done.set()
            else:
                runtime.mark("init_error")
                runtime.done.set()
            self.reply(202, b"{}")

        def reply(self, status: int, body: bytes):
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    return Handler


class Quiet(ThreadingHTTPServer):
    def handle_error(self, request, client_address):
        pass  # the probe kills each binary mid-poll: its reset connections are expected


def run_once(binary: str, table_path: str | None, endpoint: str) -> dict[str, float]:
    runtime = Runtime(["/health"] + [table_path or "/health"] * 2)
    server = Quiet(("127.0.0.1", 0), handler_for(runtime))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "AWS_LAMBDA_RUNTIME_API": f"127.0.0.1:{server.server_address[1]}",
        "AWS_LAMBDA_FUNCTION_NAME": "probe",
        "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "1024",
        "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
        "AWS_LAMBDA_LOG_LEVEL": "WARN",
        "AWS_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "test",
        "AWS_SECRET_ACCESS_KEY": "test",
        "AWS_ENDPOINT_URL": endpoint,
        "AGENTRL_AWS_ENDPOINT": endpoint,
        "AGENTRL_TABLE": TABLE,
        "AGENTRL_BUCKET": TABLE,
    }
    # The functions that wire every store (rewards, training, …) read every queue's URL at
    # start-up; none is reached by the probe's requests.
    for queue in ("", "EVENTS_", "TRAINING_", "DATASET_", "EVALUATION_"):
        env[f"AGENTRL_{queue}QUEUE_URL"] = f"{endpoint}/123456789012/{TABLE}-{queue.lower()}queue"
        env[f"AGENTRL_{queue}DLQ_URL"] = f"{endpoint}/123456789012/{TABLE}-{queue.lower()}dlq"
    # Where rustls-native-certs looks for root certificates, when the caller says.
    env.update({k: v for k, v in os.environ.items() if k.startswith("SSL_CERT_")})
    runtime.start = time.perf_counter()
    process = subprocess.Popen([binary], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    finished = runtime.done.wait(30)
    process.kill()
    _, stderr = process.communicate()
    server.shutdown()
    server.server_close()
    if not finished or "init_error" in runtime.marks or "warm" not in runtime.marks:
        raise SystemExit(f"{binary} did not serve both events: {runtime.marks} {stderr.decode()[-2000:]}")
    if any(status >= 500 for status in runtime.statuses):
        raise SystemExit(f"{binary} answered {runtime.statuses}: {stderr.decode()[-2000:]}")
    return runtime.marks


def create_table(endpoint: str) -> None:
    import boto3

    client = boto3.client(
        "dynamodb",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id="test",
        aws_secret_access_key="test",
    )
    if TABLE in client.list_tables()["TableNames"]:
        return
    client.create_table(
        TableName=TABLE,
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "S"},
        ],
        KeySchema=[
            {"AttributeName": "pk", "KeyType": "HASH"},
            {"AttributeName": "sk", "KeyType": "RANGE"},
        ],
        BillingMode="PAY_PER_REQUEST",
    )


def p90(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--endpoint", required=True, help="moto server URL (127.0.0.1)")
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("binaries", nargs="+", help="NAME=BINARY[,TABLE_PATH]")
    args = parser.parse_args()
    create_table(args.endpoint)
    specs = []
    for spec in args.binaries:
        name, rest = spec.split("=", 1)
        binary, _, table_path = rest.partition(",")
        specs.append((name, binary, table_path or None))
    samples: dict[str, dict[str, list[float]]] = {name: {} for name, _, _ in specs}
    # Interleaved so machine noise falls on every binary alike.
    for _ in range(args.runs):
        for name, binary, table_path in specs:
            for mark, value in run_once(binary, table_path, args.endpoint).items():
                samples[name].setdefault(mark, []).append(value)
    medians = {name: {m: statistics.median(v) for m, v in marks.items()} for name, marks in samples.items()}
    for name, marks in samples.items():
        row = {"binary": name, "runs": args.runs}
        for mark in ["next"] + EVENTS:
            row[f"{mark}_p50_ms"] = round(medians[name][mark], 2)
            row[f"{mark}_p90_ms"] = round(p90(marks[mark]), 2)
            if "hello" in medians:
                row[f"{mark}_vs_hello"] = round(medians[name][mark] / medians["hello"][mark], 2)
        print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
