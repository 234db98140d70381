"""schemathesis hooks for infra/scripts/contract.sh: what a schema cannot say about a request.

Each hook stands for a rule the API documents in prose (docs/reliability.md) and that the
OpenAPI document cannot express, so that a generated request breaking it is not reported as
"valid by the schema but rejected":

- an Idempotency-Key names one request: the same key with a different body is a 422
  (docs/architecture.md). The generator draws keys from a small pool and reuses them across
  bodies, so every valid key is replaced by one of its own (an invalid key is left to be
  refused);
- a cursor is a token the server issued (`next_cursor`, `x-next-cursor`): one made up by the
  generator is a 400, so a generated cursor string is dropped (a repeated `cursor`, which no
  schema allows, is left to be refused).
"""

import re
import uuid

import schemathesis


# The Idempotency-Key pattern of the document.
KEY = re.compile(r"[!-~]{1,255}")


@schemathesis.hook
def before_call(ctx, case, **kwargs):
    if case.headers:
        for name in list(case.headers):
            value = case.headers[name]
            if name.lower() == "idempotency-key" and isinstance(value, str) and KEY.fullmatch(value):
                case.headers[name] = str(uuid.uuid4())
    if case.query and isinstance(case.query.get("cursor"), str):
        del case.query["cursor"]
