// One task's attribution (`GET /v1/attributions/{task_id}`): each agent's Shapley value with
// its error bar (± 1.96 standard errors, and the conservative Hoeffding 95 % half-width when
// the API gives one), drawn as a bar from 0 with a whisker on a shared scale, beside the
// numbers; the Banzhaf value and the shaped reward.

import { api, enc } from "../api.js";
import { facts, h, num } from "../dom.js";

/**
 * @param {import("../app.js").Ctx} ctx
 * @param {HTMLElement} page
 */
export async function render(ctx, page) {
  const id = ctx.params.id;
  const a = await api(`/v1/attributions/${enc(id)}`, { signal: ctx.signal });
  /** @type {string[]} */
  const agents = a.agents;
  /** @param {string} g */
  const half = (g) => Math.max(1.96 * (a.std_errors?.[g] ?? 0), a.hoeffding_95?.[g] ?? 0);
  const lows = agents.map((g) => Math.min(0, a.contributions[g] - half(g)));
  const highs = agents.map((g) => Math.max(0, a.contributions[g] + half(g)));
  const lo = Math.min(0, ...lows), hi = Math.max(0, ...highs);
  const span = hi - lo || 1;
  /** @param {number} x */
  const pos = (x) => (100 * (x - lo)) / span;

  /** @param {string} g */
  const bar = (g) => {
    const v = a.contributions[g], e = half(g);
    const fill = h("span", { class: `whisker-bar${v < 0 ? " neg" : ""}` });
    fill.style.left = `${pos(Math.min(0, v)).toFixed(3)}%`;
    fill.style.width = `${(pos(Math.max(0, v)) - pos(Math.min(0, v))).toFixed(3)}%`;
    const whisker = h("span", { class: "whisker" });
    whisker.style.left = `${pos(v - e).toFixed(3)}%`;
    whisker.style.width = `${(pos(v + e) - pos(v - e)).toFixed(3)}%`;
    const zero = h("span", { class: "whisker-zero" });
    zero.style.left = `${pos(0).toFixed(3)}%`;
    const label = `${g}: ${num(v)}${e ? ` ± ${num(e)}` : " (exact)"}`;
    return h("span", { class: "whiskers", role: "img", "aria-label": label, title: label }, zero, fill, e ? whisker : null);
  };

  const hasMc = a.method === "monte_carlo";
  page.append(
    h("nav", { class: "crumbs", "aria-label": "Breadcrumb" },
      h("a", { href: "/console/attribution" }, "Attribution"), " / ",
      h("span", { "aria-current": "page" }, a.task_id)),
    h("h1", { tabindex: -1 }, "Attribution of ", h("code", null, a.task_id)),
    facts([
      ["Method", a.method.replace(/_/g, " ")],
      ["Permutations", a.permutations === null || a.permutations === undefined ? null : String(a.permutations)],
      ["Stopping rule met", a.target_reached === null || a.target_reached === undefined ? null : a.target_reached ? "yes" : "no (the cap was reached)"],
      ["Pool shared", num(a.total_reward, 2)],
      ["Strategy", a.strategy?.kind],
      ["Efficiency gap", num(a.efficiency_gap)],
      ["Gini of the rewards", num(a.reward_stats?.gini)],
      ["Computed in", `${a.computation_time_ms} ms`],
      ["Note", a.note],
    ]),
    h("section", { "aria-labelledby": "shapley-h" },
      h("h2", { id: "shapley-h" }, "Shapley values"),
      h("p", { class: "help" }, hasMc
        ? "Estimated by sampling permutations: the bar is the estimate, the whisker its 95 % interval (the wider of ± 1.96 standard errors and the conservative Hoeffding half-width)."
        : "Computed exactly: no error bar."),
      h("div", { class: "table-wrap", tabindex: 0, role: "region", "aria-label": "Shapley values per agent" },
        h("table", { id: "shapley" },
          h("caption", { class: "visually-hidden" }, "Shapley values per agent"),
          h("thead", null, h("tr", null, ["Agent", "Shapley value", "Standard error", "95 % interval", "Error bar", "Banzhaf", "Reward"]
            .map((c, i) => h("th", { scope: "col", class: i === 4 ? "whisker-col" : null }, c)))),
          h("tbody", null, agents.map((g) => {
            const v = a.contributions[g], se = a.std_errors?.[g] ?? 0, e = half(g);
            return h("tr", { "data-agent": g, "data-value": v, "data-se": se, "data-low": v - e, "data-high": v + e },
              h("th", { scope: "row" }, g),
              h("td", { class: "num" }, num(v)),
              h("td", { class: "num" }, se ? num(se) : "0 (exact)"),
              h("td", { class: "num" }, e ? `${num(v - e)} to ${num(v + e)}` : "—"),
              h("td", { class: "whisker-col" }, bar(g)),
              h("td", { class: "num" }, a.banzhaf ? num(a.banzhaf[g]) : "—"),
              h("td", { class: "num" }, num(a.rewards?.[g], 2)));
          })),
        )),
      h("p", { class: "chart-note" }, `Scale from ${num(lo)} to ${num(hi)}; the thin line is 0.`),
    ),
  );
  return `Attribution of ${a.task_id}`;
}
