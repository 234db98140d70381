// Trajectories, newest first (by when they were accepted), searched by agent, conversation,
// version, time window and outcome; one page at a time, the next one by the API's cursor.
// The filters and the cursor are the query string, named as the API names them, so every
// page of a search is a link.

import { all, api, enc } from "../api.js";
import { h, link, num, outcomeBadge, pagedTable, tokens, when } from "../dom.js";

/** Trajectories per page. */
const LIMIT = 50;
/**
 * With `version` or `outcome` the API filters the items it read, so a page may hold fewer
 * than asked (even none) while its cursor goes on: follow it up to this many requests to fill
 * the page before showing it.
 */
const MAX_REQUESTS = 20;

/** The API's filters, in the order of the form. */
const FILTERS = ["agent_id", "session_id", "version", "from", "to", "outcome"];

/**
 * `YYYY-MM-DDTHH:MM` (a datetime-local value, read as UTC) for epoch ms.
 * @param {string | null} ms
 */
function toInput(ms) {
  const n = ms === null || ms === "" ? NaN : Number(ms);
  return Number.isFinite(n) ? new Date(n).toISOString().slice(0, 16) : "";
}

/**
 * Epoch ms for a datetime-local value read as UTC; "" for none.
 * @param {string} value
 */
function fromInput(value) {
  if (!value) return "";
  const ms = Date.parse(`${value}${value.length === 16 ? ":00" : ""}Z`);
  return Number.isFinite(ms) ? String(ms) : "";
}

/**
 * @param {import("../app.js").Ctx} ctx
 * @param {HTMLElement} page
 */
export async function render(ctx, page) {
  const q = ctx.query;
  /** @type {Record<string, string>} */
  const filter = {};
  for (const k of FILTERS) {
    const v = q.get(k);
    if (v) filter[k] = v;
  }
  const cursor = q.get("cursor");

  const [agents, found] = await Promise.all([
    all("/v1/agents", "agents"),
    (async () => {
      /** @type {any[]} */
      const items = [];
      /** @type {string | null} */
      let next = cursor;
      let requests = 0;
      do {
        const p = await api("/v1/trajectories", { query: { ...filter, cursor: next, limit: LIMIT }, signal: ctx.signal });
        items.push(...p.trajectories);
        next = p.next_cursor ?? null;
        requests += 1;
      } while (next && items.length === 0 && requests < MAX_REQUESTS);
      return { items, next };
    })(),
  ]);

  // The search form: a GET form whose submit the router turns into a navigation.
  const agentSel = h("select", { id: "tr-agent", name: "agent_id" },
    h("option", { value: "" }, "All agents"),
    agents.map((a) => h("option", { value: a.agent_id, selected: a.agent_id === filter.agent_id }, a.agent_id)),
  );
  if (filter.agent_id && !agents.some((a) => a.agent_id === filter.agent_id)) {
    agentSel.append(h("option", { value: filter.agent_id, selected: true }, filter.agent_id));
  }
  const session = h("input", { id: "tr-session", name: "session_id", type: "text", autocomplete: "off", value: filter.session_id ?? "" });
  const version = h("input", { id: "tr-version", name: "version", type: "text", autocomplete: "off", value: filter.version ?? "" });
  const from = h("input", { id: "tr-from", type: "datetime-local", value: toInput(filter.from ?? null) });
  const to = h("input", { id: "tr-to", type: "datetime-local", value: toInput(filter.to ?? null) });
  const outcome = h("select", { id: "tr-outcome", name: "outcome" },
    [["", "Any outcome"], ["success", "Succeeded"], ["failure", "Failed"], ["unknown", "No outcome posted"]].map(([v, t]) =>
      h("option", { value: v, selected: (filter.outcome ?? "") === v }, t)),
  );
  const form = h("form", { class: "search-form", role: "search", "aria-label": "Search trajectories" },
    h("div", { class: "field" }, h("label", { for: "tr-agent" }, "Agent"), agentSel),
    h("div", { class: "field" }, h("label", { for: "tr-session" }, "Conversation (session id)"), session),
    h("div", { class: "field" }, h("label", { for: "tr-version" }, "Version"), version),
    h("div", { class: "field" }, h("label", { for: "tr-from" }, "From (UTC)"), from),
    h("div", { class: "field" }, h("label", { for: "tr-to" }, "Before (UTC)"), to),
    h("div", { class: "field" }, h("label", { for: "tr-outcome" }, "Outcome"), outcome),
    h("div", { class: "search-actions" },
      h("button", { type: "submit" }, "Search"),
      h("a", { href: "/console/trajectories", class: "button-link" }, "Clear")),
  );
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const next = new URLSearchParams();
    /** @type {Array<[string, string]>} */
    const values = [
      ["agent_id", agentSel.value],
      ["session_id", session.value.trim()],
      ["version", version.value.trim()],
      ["from", fromInput(from.value)],
      ["to", fromInput(to.value)],
      ["outcome", outcome.value],
    ];
    for (const [k, v] of values) if (v) next.set(k, v);
    const s = next.toString();
    ctx.navigate(`/console/trajectories${s ? `?${s}` : ""}`);
  });

  const filtered = Object.keys(filter).length > 0;
  const heading = filter.agent_id && Object.keys(filter).length === 1 ? `Trajectories of ${filter.agent_id}` : "Trajectories";

  /** A URL of this search with another cursor (none: the first page). @param {string | null} c */
  const pageUrl = (c) => {
    const p = new URLSearchParams();
    for (const k of FILTERS) if (filter[k]) p.set(k, filter[k]);
    if (c) p.set("cursor", c);
    const s = p.toString();
    return `/console/trajectories${s ? `?${s}` : ""}`;
  };

  const rows = document.createDocumentFragment();
  for (const t of found.items) {
    rows.append(h("tr", null,
      h("td", { class: "id" }, link(`/console/trajectories/${enc(t.trajectory_id)}`, t.trajectory_id)),
      h("td", null, link(`/console/agents/${enc(t.agent_id)}`, t.agent_id)),
      h("td", { class: "id" }, link(pageUrlFor({ session_id: t.conversation_id }), t.conversation_id, { "aria-label": `Trajectories of conversation ${t.conversation_id}` })),
      h("td", null, t.policy_version ?? "—"),
      h("td", null, outcomeBadge(t.success)),
      h("td", { class: "num" }, num(t.reward)),
      h("td", { class: "num" }, t.turn_count),
      h("td", { class: "num" }, t.tool_call_count),
      h("td", null, tokens(t.input_tokens, t.output_tokens)),
      h("td", { class: "num" }, t.safety_violations > 0 ? h("span", { class: "flag-bad" }, `${t.safety_violations} ⚠`) : "0"),
      h("td", null, when(t.received_at_ms)),
    ));
  }

  page.append(
    h("h1", { tabindex: -1 }, heading),
    h("p", { class: "help" }, "Newest first, by when agentrl accepted them. A trajectory appears once the ingest worker has scored and stored it."),
    form,
    ...pagedTable({
      id: "trajectories", label: "Trajectories", caption: `${heading}, newest first`,
      columns: ["Trajectory", "Agent", "Conversation", "Version", "Outcome", "Reward", "Turns", "Calls", "Tokens in / out", "Safety", "Received"],
      rows, size: found.items.length, noun: ["trajectory", "trajectories"],
      empty: filtered ? "No trajectory matches." : "No trajectory yet.", cursor, next: found.next, pageUrl,
    }),
  );
  return heading;
}

/**
 * The list filtered by these parameters only.
 * @param {Record<string, string>} params
 */
export function pageUrlFor(params) {
  const s = new URLSearchParams(params).toString();
  return `/console/trajectories${s ? `?${s}` : ""}`;
}
