"""The official OpenAI SDK under a thinking budget: two calls in one session (the budget named
on the first only), a stream, then a call past the ceiling. The SDK keeps its default retries,
so a refused call it retried would reach the upstream again. Prints one JSON object."""

import json
import sys
import time
import urllib.request

import openai

base, key, budget = sys.argv[1], sys.argv[2], sys.argv[3]
client = openai.OpenAI(base_url=base, api_key=key)
out = {}


def decision(raw):
    return {"action": raw.headers.get("x-agentrl-budget-action"),
            "remaining": raw.headers.get("x-agentrl-budget-remaining")}


raw = client.chat.completions.with_raw_response.create(
    model="anything", messages=[{"role": "user", "content": "spend 400"}], max_tokens=5000,
    extra_headers={"x-agentrl-session": "s-budget", "x-agentrl-budget": budget})
out["first"] = decision(raw)
raw = client.chat.completions.with_raw_response.create(
    model="anything", messages=[{"role": "user", "content": "spend 400"}],
    extra_headers={"x-agentrl-session": "s-budget"})
out["second"] = decision(raw)

chunks = list(client.chat.completions.create(
    model="anything", messages=[{"role": "user", "content": "spend 200"}], stream=True,
    extra_headers={"x-agentrl-budget": budget}))
out["stream"] = {
    "text": "".join(c.choices[0].delta.content or "" for c in chunks if c.choices),
    "usage_chunks": sum(1 for c in chunks if not c.choices),
}

# A stream's usage is charged as it ends, behind the answer.
api = base.split("/gateway/")[0]
for _ in range(100):
    read = urllib.request.Request(f"{api}/v1/budgets/{budget}",
                                  headers={"authorization": f"Bearer {key}"})
    with urllib.request.urlopen(read) as r:
        consumed = json.load(r)["consumed_tokens"]
    if consumed == 1000:
        break
    time.sleep(0.05)
out["consumed"] = consumed

try:
    client.chat.completions.create(
        model="anything", messages=[{"role": "user", "content": "more"}],
        extra_headers={"x-agentrl-budget": budget})
    out["refused"] = None
except openai.RateLimitError as e:
    error = e.body if isinstance(e.body, dict) else {}
    out["refused"] = {"status": e.status_code, "message": error.get("message"),
                      "code": e.code, "param": e.param,
                      "retry": e.response.headers.get("x-should-retry")}
print(json.dumps(out))
