"""moto's HTTP server with DynamoDB requests serialised.

moto evaluates a ConditionExpression and applies the write it guards as two separate
steps, and its server handles requests on many threads, so two concurrent conditional
writes can both pass their check: a lost update that real DynamoDB never allows (each
item write is atomic there). The storage conformance suite's concurrency test caught
it. Serialising DynamoDB requests restores DynamoDB's per-request atomicity; other
services (SQS long polls, S3 multipart) keep their threads.

Usage: python moto_server.py -H 127.0.0.1 -p PORT
"""

import argparse
import os
import signal
import sys
import threading

from werkzeug.serving import run_simple

from moto.moto_server.werkzeug_app import (
    DomainDispatcherApplication,
    MotoRequestHandler,
    create_backend_app,
)

_dynamodb = threading.Lock()


def serialise_dynamodb(app):
    def wrapped(environ, start_response):
        target = environ.get("HTTP_X_AMZ_TARGET", "")
        if not target.startswith("DynamoDB_"):
            return app(environ, start_response)
        with _dynamodb:
            # Materialise the body inside the lock: WSGI apps may be lazy.
            return list(app(environ, start_response))

    return wrapped


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("-H", "--host", default="127.0.0.1")
    parser.add_argument("-p", "--port", type=int, required=True)
    args = parser.parse_args()
    os.environ.setdefault("MOTO_PORT", str(args.port))
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    app = DomainDispatcherApplication(create_backend_app)
    run_simple(
        args.host,
        args.port,
        serialise_dynamodb(app),
        threaded=True,
        request_handler=MotoRequestHandler,
    )


if __name__ == "__main__":
    main()
