// Thinking budgets, newest first, a page at a time by the API's cursor (in the query string,
// so every page is a link): each one's tokens consumed against its allocation and ceiling,
// status, tier and escalations.

import { api, enc } from "../api.js";
import { h, link, pagedTable, statusBadge, when } from "../dom.js";

/** Budgets per page. */
const LIMIT = 50;

/** @param {number} n */
export const count = (n) => n.toLocaleString("en-US");

/**
 * @typedef {{ trigger: string, added_tokens: number, at_ms: number }} Escalation
 * @typedef {{ name: string, observed: string, weight: number }} Feature
 * @typedef {{ budget_id: string, task_id: string, complexity: string, allocated_tokens: number,
 *   consumed_tokens: number, max_total_tokens: number, escalations: Escalation[], loops_completed: number,
 *   status: string, outcome?: string | null, assessment: { score?: number | null, overridden: boolean, features: Feature[] },
 *   created_at_ms: number, updated_at_ms: number }} Budget
 */

/**
 * Tokens consumed against the allocation, on a scale up to the ceiling: the allocation is the
 * lighter band, what was consumed the darker fill (red past the allocation). The widths are
 * set through the CSSOM (the CSP forbids style attributes).
 * @param {Budget} b
 * @param {{ large?: boolean }} [opts]
 */
export function tokenBar(b, opts = {}) {
  const scale = Math.max(b.max_total_tokens, b.allocated_tokens, b.consumed_tokens, 1);
  const pct = (/** @type {number} */ x) => `${Math.min(100, (100 * x) / scale).toFixed(2)}%`;
  const allocated = h("span", { class: "tokenbar-allocated" });
  allocated.style.width = pct(b.allocated_tokens);
  const over = b.consumed_tokens > b.allocated_tokens;
  const consumed = h("span", { class: `tokenbar-consumed${over ? " over" : ""}` });
  consumed.style.width = pct(b.consumed_tokens);
  const label = `${count(b.consumed_tokens)} of ${count(b.allocated_tokens)} allocated tokens consumed; ceiling ${count(b.max_total_tokens)}`;
  return h("span", { class: `tokenbar${opts.large ? " large" : ""}`, role: "img", "aria-label": label, title: label }, allocated, consumed);
}

/**
 * @param {import("../app.js").Ctx} ctx
 * @param {HTMLElement} page
 */
export async function render(ctx, page) {
  const cursor = ctx.query.get("cursor");
  const found = await api("/v1/budgets", { query: { cursor, limit: LIMIT }, signal: ctx.signal });
  /** @type {Budget[]} */
  const items = found.budgets;
  const next = found.next_cursor ?? null;

  /** @param {string | null} c */
  const pageUrl = (c) => (c ? `/console/budgets?cursor=${enc(c)}` : "/console/budgets");

  const rows = document.createDocumentFragment();
  for (const b of items) {
    rows.append(h("tr", { "data-budget-id": b.budget_id },
      h("td", { class: "id" }, link(`/console/budgets/${enc(b.budget_id)}`, b.budget_id)),
      h("td", { class: "id" }, b.task_id),
      h("td", null, statusBadge(b.status)),
      h("td", null, b.complexity),
      h("td", null, tokenBar(b), " ", h("span", { class: "tokens-text" }, `${count(b.consumed_tokens)} / ${count(b.allocated_tokens)}`)),
      h("td", { class: "num" }, count(b.max_total_tokens)),
      h("td", { class: "num" }, b.escalations.length),
      h("td", { class: "num" }, b.loops_completed),
      h("td", null, b.outcome ?? "—"),
      h("td", null, when(b.created_at_ms)),
    ));
  }

  const heading = "Budgets";
  page.append(
    h("h1", { tabindex: -1 }, heading),
    h("p", { class: "help" }, "Thinking budgets, newest first: the tokens each task's agent consumed against its allocation, which escalations raised it, up to the tier's ceiling."),
    ...pagedTable({
      id: "budgets", label: "Budgets", caption: "Budgets, newest first",
      columns: ["Budget", "Task", "Status", "Tier", "Tokens consumed / allocated", "Ceiling", "Escalations", "Loops", "Outcome", "Created"],
      rows, size: items.length, noun: ["budget", "budgets"], empty: "No budget yet.", cursor, next, pageUrl,
    }),
  );
  return heading;
}
