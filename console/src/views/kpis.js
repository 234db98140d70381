// The KPIs over a chosen window of days (`GET /v1/kpis?from=&to=`): the window's rates and the
// counts they come from, the same KPIs day by day (one call per day, at most 31) as charts and
// a table, and the tenant's KPI alarms' state on each of those days (`GET /v1/kpis/alarms`).

import { api } from "../api.js";
import { chart } from "../charts.js";
import { h, num, table } from "../dom.js";
import { count } from "./budgets.js";

/** The most days drawn day by day. */
const MAX_DAYS = 31;
const DAY_MS = 86_400_000;

/** The rates, in the order shown: [field, label, what it divides]. */
export const RATES = /** @type {const} */ ([
  ["trajectory_success_rate", "Trajectory success rate", "trajectories ending in success / trajectories"],
  ["tool_adoption_rate", "Tool adoption rate", "trajectories with a tool call / trajectories"],
  ["task_completion_rate", "Task completion rate", "budgets closed with success / budgets closed"],
  ["escalation_rate", "Escalation rate", "closed budgets that escalated / closed budgets"],
  ["thinking_efficiency", "Thinking efficiency", "tokens used / tokens allocated, over closed budgets"],
  ["reward_hacking_rate", "Reward hacking rate", "changes flagged as reward hacking / changes scored"],
]);

/** The counts drawn day by day. */
const DAILY_COUNTS = ["trajectories", "trajectories_succeeded", "trajectories_with_tools", "budgets_completed", "diffs_scored", "reward_hacking_flagged"];

/** @param {number} ms */
const day = (ms) => new Date(ms).toISOString().slice(0, 10);
/** @param {string} d  YYYY-MM-DD */
const dayMs = (d) => Date.parse(`${d}T00:00:00Z`);
/** @param {string} name */
const words = (name) => name.replace(/_/g, " ");

/**
 * @param {import("../app.js").Ctx} ctx
 * @param {HTMLElement} page
 */
export async function render(ctx, page) {
  const valid = (/** @type {string | null} */ d) => (d && /^\d{4}-\d{2}-\d{2}$/.test(d) && !Number.isNaN(dayMs(d)) ? d : null);
  const to = valid(ctx.query.get("to")) ?? day(Date.now());
  const from = valid(ctx.query.get("from")) ?? day(dayMs(to) - 6 * DAY_MS);
  const whole = await api("/v1/kpis", { query: { from, to }, signal: ctx.signal });

  // Day by day, the last MAX_DAYS days of the window.
  const days = [];
  for (let t = Math.max(dayMs(whole.from), dayMs(whole.to) - (MAX_DAYS - 1) * DAY_MS); t <= dayMs(whole.to); t += DAY_MS) days.push(day(t));
  const [daily, alarms] = await Promise.all([
    Promise.all(days.map((d) => api("/v1/kpis", { query: { from: d, to: d }, signal: ctx.signal }))),
    // The same days: the alarms' route answers at most 31 too.
    api("/v1/kpis/alarms", { query: { from: days[0] ?? whole.from, to: whole.to }, signal: ctx.signal }),
  ]);

  const fromIn = h("input", { id: "kpi-from", type: "date", value: whole.from, required: true });
  const toIn = h("input", { id: "kpi-to", type: "date", value: whole.to, required: true });
  const form = h("form", { class: "inline-form", id: "kpi-window" },
    h("div", { class: "field" }, h("label", { for: "kpi-from" }, "From (UTC day)"), fromIn),
    h("div", { class: "field" }, h("label", { for: "kpi-to" }, "To (included)"), toIn),
    h("button", { type: "submit" }, "Show"),
  );
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    ctx.navigate(`/console/kpis?from=${fromIn.value}&to=${toIn.value}`);
  });

  const k = whole.kpis;
  /** @param {number | null | undefined} x */
  const rate = (x) => (x === null || x === undefined ? "—" : num(x));
  const x = days.map((d) => dayMs(d) / 1000);
  const rateOf = (/** @type {string} */ f) => daily.map((d) => /** @type {number | null} */ (d.kpis[f] ?? null));

  page.append(
    h("h1", { tabindex: -1 }, "KPIs"),
    h("p", { class: "help" }, "What the agents did over a window of days (UTC): each rate with the counts it comes from. A rate is “—” when nothing it divides by happened."),
    form,
    h("h2", { id: "window-h" }, `${whole.from} to ${whole.to}`),
    h("div", { class: "serving", id: "kpi-summary" },
      RATES.map(([f, label, what]) => h("div", { class: "stat", "data-kpi": f, "data-value": k[f] ?? "" },
        h("span", { class: "stat-label" }, label),
        h("span", { class: "stat-value" }, rate(k[f])),
        h("span", { class: "stat-sub" }, what))),
      h("div", { class: "stat", "data-kpi": "reward_hacking_incidents", "data-value": k.reward_hacking_incidents },
        h("span", { class: "stat-label" }, "Reward hacking incidents"),
        h("span", { class: "stat-value" }, count(k.reward_hacking_incidents)),
        h("span", { class: "stat-sub" }, "scored changes flagged")),
    ),
    table("Counts of the window", ["Count", "Value"],
      Object.entries(k.counts ?? {}).map(([c, v]) => [words(c), count(/** @type {number} */ (v))])),
    h("section", { "aria-labelledby": "daily-h" },
      h("h2", { id: "daily-h" }, "Day by day"),
      days.length < dayMs(whole.to) / DAY_MS - dayMs(whole.from) / DAY_MS + 1
        ? h("p", { class: "help" }, `The last ${MAX_DAYS} days of the window.`) : null,
      h("div", { class: "charts" },
        chart({
          name: "kpi-rates", title: "Rates per day", x, xTime: true, xLabel: "day (UTC)",
          lines: RATES.map(([f, label]) => ({ label, values: rateOf(f) })),
          description: "A day without anything a rate divides by has no point.",
        }),
        chart({
          name: "kpi-counts", title: "Counts per day", x, xTime: true, xLabel: "day (UTC)",
          lines: DAILY_COUNTS.map((c) => ({ label: words(c), values: daily.map((d) => d.kpis.counts?.[c] ?? 0) })),
        }),
      ),
      table("KPIs day by day", ["Day", ...RATES.map(([, label]) => label), "Trajectories", "Budgets closed", "Changes scored"],
        daily.map((d) => [d.from, ...RATES.map(([f]) => rate(d.kpis[f])), count(d.kpis.counts.trajectories), count(d.kpis.counts.budgets_completed), count(d.kpis.counts.diffs_scored)])),
    ),
    alarmSection(alarms.alarms, days, rate),
  );
  return "KPIs";
}

/**
 * The alarms' state day by day: a row per day, a column per alarm, each cell the day's state
 * (as CloudWatch names them) and the value it was decided on.
 * @param {Array<{name: string, kpi: string, comparison: string, threshold: number, days: Array<{date: string, state: string, value?: number | null}>}>} alarms
 * @param {string[]} days
 * @param {(x: number | null | undefined) => string} rate
 */
function alarmSection(alarms, days, rate) {
  const cell = (/** @type {string} */ name, /** @type {{state: string, value?: number | null} | undefined} */ d) =>
    d ? h("span", { class: `badge alarm-${d.state.toLowerCase()}`, "data-alarm": name, "data-state": d.state },
      `${d.state.replace(/_/g, " ")} ${rate(d.value)}`) : "—";
  return h("section", { "aria-labelledby": "alarms-h" },
    h("h2", { id: "alarms-h" }, "Alarms"),
    h("p", { class: "help" }, "Each alarm is a threshold on a KPI, set with PUT /v1/config/kpi-alarms and judged per UTC day: ALARM when the day's value is past it, INSUFFICIENT DATA when a rate has nothing to divide by that day."),
    alarms.length === 0 ? h("p", { class: "empty" }, "No alarms set.") : h("div", null,
      h("ul", { id: "kpi-alarms" }, alarms.map((a) => h("li", null, `${a.name}: ${words(a.kpi)} ${a.comparison} ${num(a.threshold)}`))),
      table("Alarms day by day", ["Day", ...alarms.map((a) => a.name)],
        days.map((d) => [d, ...alarms.map((a) => cell(a.name, a.days.find((x) => x.date === d)))]))),
  );
}
