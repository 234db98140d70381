"""The official OpenAI SDK against the built-in model server: through the gateway (n > 1 with
logprobs, a stream with its usage, tools shown by the chat template) and directly at
/models/v1 (the model list, an unknown model, a refused field). Prints one JSON object of what
the SDK saw, token ids included (vLLM's extra fields, kept by the SDK's models)."""

import json
import sys

import openai

gateway, direct, key, model = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
client = openai.OpenAI(base_url=gateway, api_key=key, max_retries=0)
out = {}


def extra(obj, name):
    return (obj.model_extra or {}).get(name)


raw = client.chat.completions.with_raw_response.create(
    model="anything", messages=[{"role": "user", "content": "what is 1+2?"}],
    n=2, max_tokens=5, seed=3, temperature=1.0, logprobs=True,
    extra_headers={"x-agentrl-session": "ms-plain"})
plain = raw.parse()
out["plain"] = {
    "version": raw.headers.get("x-agentrl-version"),
    "model": plain.model,
    "prompt_token_ids": extra(plain, "prompt_token_ids"),
    "choices": [{
        "content": c.message.content,
        "finish_reason": c.finish_reason,
        "token_ids": extra(c, "token_ids"),
        "logprobs": [t.logprob for t in c.logprobs.content],
    } for c in plain.choices],
    "usage": plain.usage.completion_tokens,
}

stream = client.chat.completions.create(
    model="anything", messages=[{"role": "user", "content": "count"}], max_tokens=6, seed=4,
    stream=True, stream_options={"include_usage": True},
    extra_headers={"x-agentrl-session": "ms-stream"})
content, ids, logprobs, finish, usage = "", [], [], None, None
for chunk in stream:
    if chunk.usage:
        usage = chunk.usage.completion_tokens
    for c in chunk.choices:
        content += c.delta.content or ""
        ids += extra(c, "token_ids") or []
        logprobs += [t.logprob for t in (c.logprobs.content if c.logprobs else [])]
        finish = c.finish_reason or finish
out["stream"] = {"content": content, "token_ids": ids, "logprobs": logprobs,
                 "finish_reason": finish, "usage": usage}

tools = [{"type": "function", "function": {"name": "lookup", "parameters": {
    "type": "object", "properties": {"q": {"type": "string"}}}}}]
with_tools = client.chat.completions.create(
    model="anything", messages=[{"role": "user", "content": "look it up"}], tools=tools,
    max_tokens=4, extra_headers={"x-agentrl-session": "ms-tools"})
out["tools"] = with_tools.choices[0].finish_reason

own = openai.OpenAI(base_url=direct, api_key=key, max_retries=0)
out["models"] = [m.id for m in own.models.list()]
direct_answer = own.chat.completions.create(
    model=model, messages=[{"role": "user", "content": "what is 1+2?"}], max_tokens=3,
    temperature=0)
out["direct"] = direct_answer.choices[0].message.content
errors = {}
try:
    own.chat.completions.create(model="nope", messages=[{"role": "user", "content": "hi"}])
except openai.NotFoundError as e:
    errors["unknown_model"] = [e.status_code, e.body.get("code") if isinstance(e.body, dict) else None]
try:
    own.chat.completions.create(model=model, messages=[{"role": "user", "content": "hi"}],
                                logprobs=True, top_logprobs=2)
except openai.BadRequestError as e:
    errors["top_logprobs"] = [e.status_code, e.body.get("param") if isinstance(e.body, dict) else None]
out["errors"] = errors
print(json.dumps(out))
