// One trajectory, turn by turn: each message with its role and text, an assistant's tool
// calls (name and arguments as JSON), each tool result next to the call it answers, every
// reward component of the turn, its token counts and safety flag; above them what the index
// knows (version that served it, outcome, reward, source, times).
//
// Everything the API returns goes in as text nodes (never parsed as markup). A trajectory
// holds up to 512 turns: they are built into a detached fragment in one pass and attached
// once.

import { api, enc } from "../api.js";
import { append, facts, h, link, num, outcomeBadge, tokens, when } from "../dom.js";
import { pageUrlFor } from "./trajectories.js";

/**
 * @typedef {{ id: string | null, name: string, arguments: string }} ToolCall
 * @typedef {{ total: number | null, information_gain: number | null, information_gain_source: string | null,
 *   format: number | null, progress: number | null, progress_source: string | null,
 *   tool_call_valid: number | null, tool_choice: number | null, tool_error_handling: number | null,
 *   tool_efficiency: number | null }} TurnReward
 * @typedef {{ turn_index: number, role: string, content: string, content_parts: unknown,
 *   tool_calls: ToolCall[], tool_call_id: string | null, tool_result: string | null, error: string | null,
 *   reward: TurnReward, safety_violation: boolean, input_tokens: number | null, output_tokens: number | null,
 *   prompt_token_count: number | null, response_token_count: number | null, tokenizer: string | null }} Turn
 */

/** Above this many turns, the browser lays out only the turns in view (see style.css). */
const LONG = 40;

/** The reward components shown on a turn, in order: [field, label, source field]. */
const COMPONENTS = /** @type {const} */ ([
  ["total", "total", null],
  ["information_gain", "information gain", "information_gain_source"],
  ["format", "format", null],
  ["progress", "progress", "progress_source"],
  ["tool_call_valid", "tool call valid", null],
  ["tool_choice", "tool choice", null],
  ["tool_error_handling", "tool error handling", null],
  ["tool_efficiency", "tool efficiency", null],
]);

/**
 * A tool call's arguments as indented JSON when they parse, else as the model wrote them.
 * @param {string} args
 */
export function prettyArguments(args) {
  try {
    return JSON.stringify(JSON.parse(args), null, 2);
  } catch {
    return args;
  }
}

/**
 * @param {import("../app.js").Ctx} ctx
 * @param {HTMLElement} page
 */
export async function render(ctx, page) {
  const id = ctx.params.id;
  const t = await api(`/v1/trajectories/${enc(id)}`, { signal: ctx.signal });
  /** @type {Turn[]} */
  const turns = t.turns ?? [];

  const unsafe = t.safety_violations > 0;

  append(page, [
    h("nav", { class: "crumbs", "aria-label": "Breadcrumb" },
      h("a", { href: "/console/trajectories" }, "Trajectories"), " / ",
      h("a", { href: pageUrlFor({ agent_id: t.agent_id }) }, t.agent_id), " / ",
      h("span", { "aria-current": "page" }, t.trajectory_id)),
    h("h1", { tabindex: -1 }, "Trajectory ", h("code", null, t.trajectory_id)),
    h("div", { class: "serving", id: "trajectory-summary" },
      stat("Served by version", t.policy_version ?? "unknown", t.policy_version
        ? link(pageUrlFor({ agent_id: t.agent_id, version: t.policy_version }), `Trajectories of ${t.policy_version}`)
        : "not recorded"),
      stat("Outcome", outcomeBadge(t.success), t.termination_reason ?? (t.truncated ? "truncated" : null)),
      stat("Episode reward", t.reward === null || t.reward === undefined ? "—" : num(t.reward),
        t.reward === null || t.reward === undefined ? "none posted" : t.dp_epsilon ? `noised, ε ${num(t.dp_epsilon)}` : null),
      stat("Turns", String(t.turn_count), `${t.tool_call_count} tool call${t.tool_call_count === 1 ? "" : "s"}`),
      stat("Safety", unsafe ? h("span", { class: "flag-bad" }, `${t.safety_violations} violation${t.safety_violations === 1 ? "" : "s"}`) : "none",
        unsafe ? "turns scored −1" : "no rule matched"),
    ),
    facts([
      ["Agent", link(`/console/agents/${enc(t.agent_id)}`, t.agent_id)],
      ["Conversation", link(pageUrlFor({ session_id: t.conversation_id }), t.conversation_id)],
      ["Source", t.source ?? "not recorded"],
      ["Received", when(t.received_at_ms)],
      ["Termination reason", t.termination_reason],
      ["Truncated", t.truncated ? "yes" : "no"],
      ["Tokens (in / out)", tokens(t.input_tokens, t.output_tokens)],
      ["Personal data replaced", t.pii_replacements ? `${t.pii_replacements} placeholder${t.pii_replacements === 1 ? "" : "s"}` : "none"],
      ["User (keyed hash)", t.user_id ? h("code", null, t.user_id) : null],
      ["Group", t.group_id ? h("code", null, t.group_id) : null],
      ["Message", h("code", null, t.message_id)],
    ]),
    Array.isArray(t.tools) && t.tools.length
      ? h("section", { "aria-labelledby": "tools-h" },
          h("h2", { id: "tools-h" }, "Tools offered"),
          h("details", { class: "tools" },
            h("summary", null, t.tools.map((/** @type {any} */ x) => x?.function?.name ?? x?.name ?? "?").join(", ")),
            h("pre", { class: "json", tabindex: 0, "aria-label": "Tools as JSON" }, JSON.stringify(t.tools, null, 2))))
      : null,
    h("section", { "aria-labelledby": "turns-h" },
      h("h2", { id: "turns-h" }, `Turns (${turns.length})`),
      h("p", { class: "help" }, "Each turn's reward components are in [0, 1] and its total is their weighted sum; a safety violation forces the total to −1. Tool results are shown with the call they answer."),
      turnList(turns),
    ),
  ]);
  return `Trajectory ${t.trajectory_id}`;
}

/**
 * @param {string} label
 * @param {Node | string} value
 * @param {Node | string | null} sub
 */
function stat(label, value, sub) {
  return h("div", { class: "stat" },
    h("span", { class: "stat-label" }, label),
    h("span", { class: "stat-value" }, value),
    sub ? h("span", { class: "stat-sub" }, sub) : null);
}

/**
 * The turns as an ordered list, built off the document.
 * @param {Turn[]} turns
 */
export function turnList(turns) {
  // Which call each tool result answers, and which turn answers each call.
  /** @type {Map<string, { turn: number, name: string, anchor: string }>} */
  const calls = new Map();
  /** @type {Map<string, number>} */
  const answeredBy = new Map();
  for (const turn of turns) {
    turn.tool_calls.forEach((c, k) => {
      if (c.id) calls.set(c.id, { turn: turn.turn_index, name: c.name, anchor: `call-${turn.turn_index}-${k}` });
    });
    if (turn.role === "tool" && turn.tool_call_id && !answeredBy.has(turn.tool_call_id)) answeredBy.set(turn.tool_call_id, turn.turn_index);
  }

  const frag = document.createDocumentFragment();
  for (const turn of turns) frag.append(turnItem(turn, calls, answeredBy));
  if (turns.length === 0) return h("p", { class: "empty" }, "This trajectory has no turns.");
  const ol = h("ol", { class: turns.length > LONG ? "turns long" : "turns", id: "turns" });
  ol.append(frag);
  return ol;
}

/**
 * @param {Turn} turn
 * @param {Map<string, { turn: number, name: string, anchor: string }>} calls
 * @param {Map<string, number>} answeredBy
 */
function turnItem(turn, calls, answeredBy) {
  const i = turn.turn_index;
  const li = h("li", {
    class: `turn role-${/^[a-z]+$/.test(turn.role) ? turn.role : "other"}${turn.safety_violation ? " unsafe" : ""}`,
    id: `turn-${i}`,
    "data-turn-index": i,
    "aria-labelledby": `turn-${i}-h`,
  });

  const head = h("div", { class: "turn-head" },
    h("h3", { id: `turn-${i}-h` }, h("span", { class: "turn-index" }, `#${i}`), " ", h("span", { class: "role" }, turn.role)));
  if (turn.safety_violation) head.append(h("strong", { class: "flag-bad safety-flag" }, "⚠ Safety violation"));
  if (turn.input_tokens !== null || turn.output_tokens !== null) {
    head.append(h("span", { class: "turn-tokens" }, `${turn.input_tokens ?? "—"} tokens in / ${turn.output_tokens ?? "—"} out`));
  }
  li.append(head);

  // The answer to a call: which call, and from which turn.
  if (turn.role === "tool" || turn.tool_call_id) {
    const call = turn.tool_call_id ? calls.get(turn.tool_call_id) : undefined;
    li.append(h("p", { class: "answers" },
      call
        ? ["Result of ", h("code", { class: "tool-name" }, call.name), " (", h("a", { href: `#${call.anchor}` }, `call ${turn.tool_call_id} in turn #${call.turn}`), ")"]
        : turn.tool_call_id ? ["Result of call ", h("code", null, turn.tool_call_id), " (no matching call in this trajectory)"] : "Tool result"));
  }

  if (turn.content) li.append(h("div", { class: "turn-text" }, turn.content));
  else if (!turn.tool_calls.length && !turn.tool_result) li.append(h("p", { class: "empty turn-empty" }, "(no text)"));

  if (turn.tool_result !== null && turn.tool_result !== undefined) {
    li.append(h("div", { class: "tool-result" }, h("span", { class: "part-label" }, "Tool result"), h("pre", { class: "turn-pre" }, turn.tool_result)));
  }

  if (turn.tool_calls.length) {
    const ul = h("ul", { class: "tool-calls", "aria-label": `Tool calls of turn #${i}` });
    turn.tool_calls.forEach((c, k) => {
      const answer = c.id ? answeredBy.get(c.id) : undefined;
      ul.append(h("li", { class: "tool-call", id: `call-${i}-${k}` },
        h("div", { class: "tool-call-head" },
          h("span", { class: "part-label" }, "Tool call"), " ",
          h("code", { class: "tool-name" }, c.name),
          c.id ? h("span", { class: "muted" }, ` id ${c.id}`) : null,
          answer !== undefined ? [" · ", h("a", { href: `#turn-${answer}` }, `result in turn #${answer}`)] : null),
        h("pre", { class: "turn-pre tool-args", "aria-label": `Arguments of ${c.name}` }, prettyArguments(c.arguments))));
    });
    li.append(ul);
  }

  if (turn.error) li.append(h("p", { class: "turn-error" }, h("strong", null, "Error: "), turn.error));

  li.append(rewardChips(turn));
  return li;
}

/**
 * The turn's reward components as a compact list (with the source of a model-judged one).
 * @param {Turn} turn
 */
function rewardChips(turn) {
  /** @type {Record<string, any>} */
  const r = turn.reward ?? {};
  const dl = h("dl", { class: "rewards", "aria-label": `Reward of turn #${turn.turn_index}` });
  for (const [field, label, source] of COMPONENTS) {
    const v = r[field];
    if (v === null || v === undefined) continue;
    if (field !== "total" && turn.role !== "assistant" && v === 0) continue;
    const src = source ? r[source] : null;
    const neg = field === "total" && v < 0;
    dl.append(h("div", { class: `chip${field === "total" ? " chip-total" : ""}${neg ? " chip-bad" : ""}`, "data-component": field, "data-value": v },
      h("dt", null, label),
      h("dd", null, num(v, 3), src ? h("span", { class: "chip-source" }, ` (${src})`) : null)));
  }
  if (turn.prompt_token_count !== null || turn.response_token_count !== null) {
    dl.append(h("div", { class: "chip chip-muted" },
      h("dt", null, "token ids"),
      h("dd", null, `${turn.prompt_token_count ?? 0} prompt / ${turn.response_token_count ?? 0} response`)));
  }
  return dl;
}
