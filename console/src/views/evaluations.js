// Evaluations of agents' work, newest first, a page at a time by the API's cursor (in the
// query string, so every page is a link): status and progress, the combined reward and its
// confidence, the safety flag, the task type.

import { api, enc } from "../api.js";
import { h, link, num, statusBadge, when } from "../dom.js";

/** Evaluations per page. */
const LIMIT = 50;

/**
 * The safety verdict of a report: a flag, "none", or "—" before there is a report.
 * @param {any} report
 */
export function safetyCell(report) {
  if (!report) return "—";
  return report.safety_violation ? h("span", { class: "flag-bad" }, "⚠ violation") : "none";
}

/**
 * @param {import("../app.js").Ctx} ctx
 * @param {HTMLElement} page
 */
export async function render(ctx, page) {
  const cursor = ctx.query.get("cursor");
  const found = await api("/v1/evaluations", { query: { cursor, limit: LIMIT }, signal: ctx.signal });
  /** @type {any[]} */
  const items = found.evaluations;
  const next = found.next_cursor ?? null;

  /** @param {string | null} c */
  const pageUrl = (c) => (c ? `/console/evaluations?cursor=${enc(c)}` : "/console/evaluations");

  const rows = document.createDocumentFragment();
  for (const e of items) {
    const r = e.report ?? null;
    const total = e.progress?.total ?? 0;
    const done = e.progress?.done ?? 0;
    rows.append(h("tr", { "data-evaluation-id": e.evaluation_id },
      h("td", { class: "id" }, link(`/console/evaluations/${enc(e.evaluation_id)}`, e.evaluation_id)),
      h("td", null, e.task_type),
      h("td", null, statusBadge(e.status)),
      h("td", null, h("progress", { max: Math.max(total, 1), value: done, "aria-label": `Parts done of ${e.evaluation_id}` }), ` ${done}/${total}`),
      h("td", { class: "num" }, r ? num(r.reward, 3) : "—"),
      h("td", { class: "num" }, r ? num(r.confidence, 3) : "—"),
      h("td", null, safetyCell(r)),
      h("td", { class: "id" }, h("code", null, e.execution_id)),
      h("td", null, when(e.created_at_ms)),
    ));
  }

  const heading = "Evaluations";
  page.append(
    h("h1", { tabindex: -1 }, heading),
    h("p", { class: "help" }, "Evaluations of agents' work, newest first: rule checks, tests, the diff of a code change and three judges, combined into one reward."),
    h("p", { class: "count", role: "status" },
      items.length === 0 ? "" : `${items.length} evaluation${items.length === 1 ? "" : "s"}${cursor ? " on this page" : ""}${next ? ", more on the next page" : ""}.`),
    items.length === 0
      ? h("p", { class: "empty" }, cursor ? "No more evaluations." : "No evaluation yet.")
      : h("div", { class: "table-wrap", tabindex: 0, role: "region", "aria-label": "Evaluations" },
          h("table", { id: "evaluations" },
            h("caption", { class: "visually-hidden" }, "Evaluations, newest first"),
            h("thead", null, h("tr", null,
              ["Evaluation", "Task type", "Status", "Parts done", "Reward", "Confidence", "Safety", "Execution", "Created"]
                .map((c) => h("th", { scope: "col" }, c)))),
            h("tbody", null, rows),
          ),
        ),
    h("nav", { class: "pager", "aria-label": "Pages" },
      cursor ? link(pageUrl(null), "First page") : null,
      next ? link(pageUrl(next), "Next page", { rel: "next", id: "next-page" }) : null,
    ),
  );
  return heading;
}
