"""The official OpenAI SDK against the gateway: plain, tools with parallel calls, streaming
with the session in the path, n > 1, the models list and every upstream failure. Prints one
JSON object of what the SDK saw."""

import json
import sys

import openai

base, key = sys.argv[1], sys.argv[2]
client = openai.OpenAI(base_url=base, api_key=key, max_retries=0)
in_session = lambda s: {"x-agentrl-session": s}  # noqa: E731
out = {}

raw = client.chat.completions.with_raw_response.create(
    model="anything",
    messages=[{"role": "user", "content": "hi"}],
    extra_headers=in_session("s-plain"),
)
first = raw.parse()
out["plain"] = {
    "content": first.choices[0].message.content,
    "model": first.model,
    "session": raw.headers.get("x-agentrl-session"),
    "version": raw.headers.get("x-agentrl-version"),
}
tools = [{"type": "function", "function": {"name": "lookup", "parameters": {
    "type": "object", "properties": {"q": {"type": "string"}}}}}]
history = [
    {"role": "user", "content": "hi"},
    {"role": "assistant", "content": first.choices[0].message.content},
    {"role": "user", "content": "use tools"},
]
second = client.chat.completions.create(
    model="anything", messages=history, tools=tools, extra_headers=in_session("s-plain"))
calls = second.choices[0].message.tool_calls
out["tools"] = [c.function.name for c in calls]
history.append(second.choices[0].message.model_dump(exclude_none=True))
history += [{"role": "tool", "tool_call_id": c.id, "content": f"result {i}"}
            for i, c in enumerate(calls)]
third = client.chat.completions.create(
    model="anything", messages=history, tools=tools, extra_headers=in_session("s-plain"))
out["third"] = third.choices[0].message.content

in_path = openai.OpenAI(base_url=base.replace("/v1", "/sessions/s-stream/v1"), api_key=key,
                        max_retries=0)
stream = in_path.chat.completions.create(
    model="anything", messages=[{"role": "user", "content": "stream please"}], stream=True)
out["stream"] = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)

group = client.chat.completions.create(
    model="anything", messages=[{"role": "user", "content": "two"}], n=2,
    extra_headers=in_session("s-group"))
out["group"] = [c.message.content for c in group.choices]

fresh = client.chat.completions.with_raw_response.create(
    model="anything", messages=[{"role": "user", "content": "no session"}])
out["generated_session"] = fresh.headers.get("x-agentrl-session")

errors = {}
for what in ["fail-429", "fail-500", "hang", "malformed"]:
    try:
        client.chat.completions.create(model="x", messages=[{"role": "user", "content": what}])
        errors[what] = None
    except openai.APIStatusError as e:
        errors[what] = {"status": e.status_code, "message": e.message,
                        "retry_after": e.response.headers.get("retry-after")}
out["errors"] = errors
out["models"] = [m.id for m in client.models.list()]
print(json.dumps(out))
