// One thinking budget: tokens consumed against the allocation and the ceiling, each
// escalation (trigger, tokens added, when), the loops completed against the tenant's loop
// cap, the outcome, and the complexity assessment that chose the tier (its features).

import { api, enc } from "../api.js";
import { facts, h, statusBadge, table, when } from "../dom.js";
import { count, tokenBar } from "./budgets.js";

/**
 * @param {import("../app.js").Ctx} ctx
 * @param {HTMLElement} page
 */
export async function render(ctx, page) {
  const id = ctx.params.id;
  const [b, config] = await Promise.all([
    /** @type {Promise<import("./budgets.js").Budget>} */ (api(`/v1/budgets/${enc(id)}`, { signal: ctx.signal })),
    api("/v1/config/budgets", { signal: ctx.signal }),
  ]);
  /** @type {number | null} */
  const maxLoops = config?.max_loops ?? null;
  /** @type {number | null} */
  const maxEscalations = config?.max_escalations ?? null;
  const tier = config?.tiers?.[b.complexity] ?? null;
  const left = b.allocated_tokens - b.consumed_tokens;
  const pctUsed = b.allocated_tokens > 0 ? Math.round((100 * b.consumed_tokens) / b.allocated_tokens) : null;
  const added = b.escalations.reduce((s, e) => s + e.added_tokens, 0);

  page.append(
    h("nav", { class: "crumbs", "aria-label": "Breadcrumb" },
      h("a", { href: "/console/budgets" }, "Budgets"), " / ",
      h("span", { "aria-current": "page" }, b.budget_id)),
    h("h1", { tabindex: -1 }, "Budget ", h("code", null, b.budget_id)),
    h("div", { class: "serving", id: "budget-summary" },
      stat("Status", statusBadge(b.status), b.outcome ? `outcome: ${b.outcome}` : "no outcome yet", "status"),
      stat("Consumed", count(b.consumed_tokens), pctUsed === null ? null : `${pctUsed}% of the allocation`, "consumed"),
      stat("Allocated", count(b.allocated_tokens),
        b.escalations.length ? `${count(b.allocated_tokens - added)} at opening + ${count(added)} escalated` : "as opened", "allocated"),
      stat("Ceiling", count(b.max_total_tokens), `the ${b.complexity} tier's most`, "ceiling"),
      stat("Loops completed", maxLoops === null ? String(b.loops_completed) : `${b.loops_completed} of ${maxLoops}`,
        maxLoops === null ? null : b.loops_completed >= maxLoops ? "the cap: handed to a human" : `a human takes over at ${maxLoops}`, "loops"),
      stat("Escalations", maxEscalations === null ? String(b.escalations.length) : `${b.escalations.length} of ${maxEscalations}`,
        added ? `+${count(added)} tokens` : "none granted", "escalations"),
    ),
    h("div", { class: "tokenbar-row" },
      tokenBar(b, { large: true }),
      h("p", { class: "tokenbar-legend" },
        h("span", { class: "key key-consumed" }), ` consumed ${count(b.consumed_tokens)} · `,
        h("span", { class: "key key-allocated" }), ` allocated ${count(b.allocated_tokens)} · `,
        h("span", { class: "key key-ceiling" }), ` ceiling ${count(b.max_total_tokens)}`,
        left < 0 ? h("strong", { class: "flag-bad" }, ` · ${count(-left)} past the allocation`) : ` · ${count(left)} left`)),
    facts([
      ["Task", h("code", null, b.task_id)],
      ["Tier", `${b.complexity}${b.assessment.overridden ? " (set by the caller)" : ""}`],
      ["Outcome", b.outcome ?? "not completed"],
      ["Opened", when(b.created_at_ms)],
      ["Last change", when(b.updated_at_ms)],
      ["Triggers this tier allows", tier?.allowed_triggers?.length ? tier.allowed_triggers.join(", ") : null],
    ]),
    h("section", { "aria-labelledby": "escalations-h" },
      h("h2", { id: "escalations-h" }, `Escalations (${b.escalations.length})`),
      table("Escalations, oldest first", ["#", "Trigger", "Tokens added", "Allocation after", "At"],
        (() => {
          let alloc = b.allocated_tokens - added;
          return b.escalations.map((e, i) => {
            alloc += e.added_tokens;
            return [String(i + 1), e.trigger, `+${count(e.added_tokens)}`, count(alloc), when(e.at_ms)];
          });
        })(),
        { empty: "No escalation: the budget kept its opening allocation." }),
    ),
    h("section", { "aria-labelledby": "assessment-h" },
      h("h2", { id: "assessment-h" }, "Complexity assessment"),
      h("p", { class: "help" },
        b.assessment.overridden
          ? `The caller chose the ${b.complexity} tier; the features the assessment found are still listed.`
          : `Score ${b.assessment.score ?? "—"}: ≤ 0 is trivial, 1–3 standard, ≥ 4 complex. Each feature below added its weight.`),
      table("Features of the assessment", ["Feature", "Observed", "Weight"],
        b.assessment.features.map((f) => [f.name.replace(/_/g, " "), f.observed, f.weight > 0 ? `+${f.weight}` : String(f.weight)]),
        { empty: "No feature counted." }),
    ),
  );
  return `Budget ${b.budget_id}`;
}

/**
 * @param {string} label
 * @param {Node | string} value
 * @param {string | null} sub
 * @param {string} name  a `data-stat` for the tests
 */
function stat(label, value, sub, name) {
  return h("div", { class: "stat", "data-stat": name },
    h("span", { class: "stat-label" }, label),
    h("span", { class: "stat-value" }, value),
    sub ? h("span", { class: "stat-sub" }, sub) : null);
}
