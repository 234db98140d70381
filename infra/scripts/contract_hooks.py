"""schemathesis hooks for infra/scripts/contract.sh: what a schema cannot say about a request.

Each hook stands for a rule the API documents in prose (docs/reliability.md) and that the
OpenAPI document cannot express, so that a generated request breaking it is not reported as
"valid by the schema but rejected". Rules across fields are repaired in the bodies generated
as valid (never in those generated as invalid, which must stay refused), keeping every value
within its schema:

- an Idempotency-Key names one request: the same key with a different body is a 422
  (docs/architecture.md). The generator draws keys from a small pool and reuses them across
  bodies, so every valid key is replaced by one of its own (an invalid key is left to be
  refused);
- a cursor is a token the server issued (`next_cursor`, `x-next-cursor`): one made up by the
  generator is a 400, so a generated cursor string is dropped (a repeated `cursor`, which no
  schema allows, is left to be refused);
- the rules across fields of the bodies listed in `REPAIRS` (each repair names its rule).
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
    meta = getattr(case, "meta", None)
    positive = meta is not None and meta.generation.mode.is_positive
    repair = REPAIRS.get((case.operation.method.upper(), case.operation.path))
    if positive and repair and isinstance(case.body, (dict, list)):
        repair(case.body)


MAX_TOKENS = 1 << 40


def present(body, *names):
    """Whether every name is in `body` with a value other than null (null means absent)."""
    return isinstance(body, dict) and all(body.get(n) is not None for n in names)


def ordered(body, low, high):
    """`low` <= `high` when both are given, by swapping them."""
    if present(body, low, high) and body[low] > body[high]:
        body[low], body[high] = body[high], body[low]


def bracket(body, low, high, low_fill, high_fill):
    """`low` <= `high`: a missing side gets its widest value, then the two are ordered."""
    if present(body, low) and not present(body, high):
        body[high] = high_fill
    if present(body, high) and not present(body, low):
        body[low] = low_fill
    ordered(body, low, high)


def training_run(body):
    # base_model and base_version are alternatives.
    if present(body, "base_model", "base_version"):
        del body["base_version"]


def events(body):
    # A feedback event carries at least one of value, rating or reaction.
    for event in body if isinstance(body, list) else [body]:
        if (
            isinstance(event, dict)
            and event.get("type") == "feedback.created"
            and not any(event.get(k) is not None for k in ("value", "rating", "reaction"))
        ):
            event["value"] = 0.0


def budget_config(body):
    # Each tier: 1 <= base_tokens <= max_total_tokens <= hard_ceiling_tokens, with the
    # defaults standing in for what is left out; and adaptive.min_samples <= window.
    body["hard_ceiling_tokens"] = MAX_TOKENS
    for tier in (body.get("tiers") or {}).values():
        if not isinstance(tier, dict):
            continue
        bracket(tier, "base_tokens", "max_total_tokens", 1, MAX_TOKENS)
    adaptive = body.get("adaptive")
    if isinstance(adaptive, dict):
        bracket(adaptive, "min_samples", "window", 1, 10_000)


def trajectory_config(body):
    # The turn reward weights sum to 1; the privacy budget is at least one ε.
    rewards = body.get("rewards")
    if isinstance(rewards, dict):
        rewards.update(information_gain=0.4, format=0.3, progress=0.3)
    dp = body.get("differential_privacy")
    if isinstance(dp, dict):
        if present(dp, "epsilon") and not present(dp, "budget"):
            dp["budget"] = dp["epsilon"]
        if present(dp, "budget") and not present(dp, "epsilon"):
            dp["epsilon"] = dp["budget"]
        ordered(dp, "epsilon", "budget")


def learning_config(body):
    # epsilon.min <= epsilon.initial, and each trait's bounds min <= max.
    policy = body.get("policy")
    if not isinstance(policy, dict):
        return
    epsilon = policy.get("epsilon")
    if isinstance(epsilon, dict):
        bracket(epsilon, "min", "initial", 0.0, 1.0)
    bounds = [policy.get("default_bounds")] + list((policy.get("trait_bounds") or {}).values())
    for b in bounds:
        if isinstance(b, dict):
            bracket(b, "min", "max", 0.0, 1.0)


def reward_config(body):
    # A business metric's max is above its min; examples.negative < examples.positive.
    for metric in (body.get("business_metrics") or {}).values():
        if isinstance(metric, dict) and present(metric, "min", "max"):
            low, high = sorted((metric["min"], metric["max"]))
            metric["min"], metric["max"] = low, (high if high > low else low + 1.0)
    examples = body.get("examples")
    if isinstance(examples, dict):
        examples["positive"], examples["negative"] = 0.7, 0.3


def trajectory(body):
    # Tool names are unique; tool calls are on assistant turns (`tool_call` or `tool_calls`),
    # a `tool_call_id` on a tool turn; per-token lists have as many entries as the turn's
    # response tokens.
    tools = body.get("tools")
    if isinstance(tools, list):
        unique, seen = [], set()
        for tool in tools:
            name = tool.get("name") if isinstance(tool, dict) else None
            if name not in seen:
                unique.append(tool)
                seen.add(name)
        body["tools"] = unique
    for turn in body.get("turns") or []:
        if not isinstance(turn, dict):
            continue
        if turn.get("role") != "assistant":
            turn.pop("tool_call", None)
            turn.pop("tool_calls", None)
        elif turn.get("tool_calls"):
            # One call in `tool_call` or several in `tool_calls`, not both.
            turn.pop("tool_call", None)
        if turn.get("role") != "tool":
            turn.pop("tool_call_id", None)
        ids = turn.get("response_token_ids")
        for name in ("loss_mask", "behavior_logprobs"):
            if turn.get(name) is None:
                continue
            if ids is None:
                del turn[name]
            else:
                fill = 1 if name == "loss_mask" else 0.0
                turn[name] = (turn[name] + [fill] * len(ids))[: len(ids)]


def gateway_config(body):
    # A tenant's upstream must answer for the chat calls after it: the run has one, its stub
    # (the deployment's upstream, `base_url: null`); a generated host would make every later
    # call the documented 502 for the tenant's state.
    if "base_url" in body:
        body["base_url"] = None


REPAIRS = {
    ("POST", "/v1/training-runs"): training_run,
    ("PUT", "/v1/config/gateway"): gateway_config,
    ("POST", "/v1/events"): events,
    ("PUT", "/v1/config/budgets"): budget_config,
    ("PUT", "/v1/config/trajectories"): trajectory_config,
    ("PUT", "/v1/config/learning"): learning_config,
    ("PUT", "/v1/config/rewards"): reward_config,
    ("POST", "/v1/trajectories"): trajectory,
}
