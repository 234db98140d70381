// Evaluations of agents' work, newest first, a page at a time by the API's cursor (in the
// query string, so every page is a link): status and progress, the combined reward and its
// confidence, the safety flag, the task type.

import { api, enc } from "../api.js";
import { h, link, num, pagedTable, statusBadge, when } from "../dom.js";

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
    ...pagedTable({
      id: "evaluations", label: "Evaluations", caption: "Evaluations, newest first",
      columns: ["Evaluation", "Task type", "Status", "Parts done", "Reward", "Confidence", "Safety", "Execution", "Created"],
      rows, size: items.length, noun: ["evaluation", "evaluations"], empty: "No evaluation yet.", cursor, next, pageUrl,
    }),
  );
  return heading;
}
