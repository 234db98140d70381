// Attribution: the agents' contribution ranking (`GET /v1/agents/ranking`), statistics per
// reward-shaping strategy (`GET /v1/attributions/stats`), and the attributions' history
// (`GET /v1/attributions`, NDJSON a page at a time by its `x-next-cursor`; in the query string,
// so every page is a link), each task linking to its Shapley values with their error bars.

import { api, enc, ndjson } from "../api.js";
import { h, link, num, pagedTable, table, when } from "../dom.js";

/** Attributions per page. */
const LIMIT = 50;

/** @param {string | null} d  YYYY-MM-DD */
const dayMs = (d) => (d && /^\d{4}-\d{2}-\d{2}$/.test(d) && !Number.isNaN(Date.parse(`${d}T00:00:00Z`)) ? Date.parse(`${d}T00:00:00Z`) : null);

/**
 * @param {import("../app.js").Ctx} ctx
 * @param {HTMLElement} page
 */
export async function render(ctx, page) {
  const from = ctx.query.get("from"), to = ctx.query.get("to");
  const cursor = ctx.query.get("cursor");
  const by = ctx.query.get("by") === "mean" ? "mean" : "sum";
  const fromMs = dayMs(from), toMs = dayMs(to);
  const window = { from: fromMs, to: toMs === null ? null : toMs + 86_400_000 };
  const [history, ranking, stats] = await Promise.all([
    ndjson("/v1/attributions", { query: { ...window, cursor, limit: LIMIT }, signal: ctx.signal }),
    api("/v1/agents/ranking", { query: { ...window, by }, signal: ctx.signal }),
    api("/v1/attributions/stats", { query: window, signal: ctx.signal }),
  ]);

  const fromIn = h("input", { id: "attr-from", type: "date", value: fromMs === null ? "" : from });
  const toIn = h("input", { id: "attr-to", type: "date", value: toMs === null ? "" : to });
  const bySel = h("select", { id: "attr-by" },
    h("option", { value: "sum", selected: by === "sum" }, "total score"),
    h("option", { value: "mean", selected: by === "mean" }, "mean score per contribution"));
  const form = h("form", { class: "inline-form", id: "attr-window" },
    h("div", { class: "field" }, h("label", { for: "attr-from" }, "From (UTC day)"), fromIn),
    h("div", { class: "field" }, h("label", { for: "attr-to" }, "To (included)"), toIn),
    h("div", { class: "field" }, h("label", { for: "attr-by" }, "Rank by"), bySel),
    h("button", { type: "submit" }, "Show"),
  );
  /** @param {string | null} c */
  const url = (c) => {
    const q = new URLSearchParams();
    if (fromIn.value) q.set("from", fromIn.value);
    if (toIn.value) q.set("to", toIn.value);
    if (bySel.value !== "sum") q.set("by", bySel.value);
    if (c) q.set("cursor", c);
    const s = q.toString();
    return `/console/attribution${s ? `?${s}` : ""}`;
  };
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    ctx.navigate(url(null));
  });

  const historyRows = history.items.map((a) => h("tr", { "data-task-id": a.task_id },
    h("td", { class: "id" }, link(`/console/attribution/${enc(a.task_id)}`, a.task_id)),
    h("td", null, a.method.replace(/_/g, " ")),
    h("td", { class: "wrap" }, a.agents.join(", ")),
    h("td", { class: "num" }, num(a.total_reward, 2)),
    h("td", null, a.strategy?.kind ?? "—"),
    h("td", { class: "num" }, num(a.reward_stats?.gini)),
    h("td", null, when(a.created_at_ms))));

  page.append(
    h("h1", { tabindex: -1 }, "Attribution"),
    h("p", { class: "help" }, "How the credit of multi-agent tasks was shared: each task's Shapley values (with their error bars when estimated) shaped into rewards, the agents ranked by their contributions, and statistics per shaping strategy. The window is of UTC days; without one, everything (the ranking: the last 30 days)."),
    form,
    h("section", { "aria-labelledby": "ranking-h" },
      h("h2", { id: "ranking-h" }, "Ranking"),
      table("Agents ranked by contribution", ["Rank", "Agent", "Total score", "Contributions", "Mean score"],
        ranking.map((/** @type {any} */ r) => [String(r.rank), r.agent_id, num(r.score), String(r.count), num(r.mean)]),
        { empty: "No contribution in the window." }),
    ),
    h("section", { "aria-labelledby": "stats-h" },
      h("h2", { id: "stats-h" }, "Per strategy"),
      table("Statistics per shaping strategy", ["Strategy", "Attributions", "Mean agents", "Mean Gini", "Largest Gini", "Best-paid share", "Worst-paid share", "Rewards paid"],
        stats.strategies.map((/** @type {any} */ s) => [s.strategy, String(s.count), num(s.mean_agents, 2), num(s.mean_gini), num(s.max_gini),
          num(s.mean_max_share), num(s.mean_min_share), num(s.total_reward, 2)])),
    ),
    h("section", { "aria-labelledby": "history-h" },
      h("h2", { id: "history-h" }, "Tasks"),
      ...pagedTable({
        id: "attributions", label: "Attributions", caption: "Attributions",
        columns: ["Task", "Method", "Agents", "Pool", "Strategy", "Gini", "Created"],
        rows: historyRows, size: history.items.length, noun: ["attribution", "attributions"],
        empty: "No attribution in the window (POST /v1/attributions).", cursor, next: history.next, pageUrl: url,
      }),
    ),
  );
  return "Attribution";
}
