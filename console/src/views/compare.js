// Two or more runs' curves of one metric, overlaid (`/console/runs/compare?ids=a,b&metric=loss`).

import { api, enc } from "../api.js";
import { chart, PALETTE, resetCharts } from "../charts.js";
import { h, link, money, replace, statusBadge, table } from "../dom.js";
import { fetchSeries, METRICS, phaseBoundary } from "../metrics.js";

/**
 * @param {import("../app.js").Ctx} ctx
 * @param {HTMLElement} page
 */
export async function render(ctx, page) {
  const ids = [...new Set((ctx.query.get("ids") ?? "").split(",").map((s) => s.trim()).filter(Boolean))].slice(0, 8);
  if (ids.length < 2) {
    page.append(
      h("h1", { tabindex: -1 }, "Compare runs"),
      h("p", null, "Choose two or more runs in the ", link("/console/runs", "list of training runs"), " and press “Compare selected”."),
    );
    return "Compare runs";
  }
  const [runs, series] = await Promise.all([
    Promise.all(ids.map((id) => api(`/v1/training-runs/${enc(id)}`))),
    Promise.all(ids.map((id) => fetchSeries(id))),
  ]);

  const wanted = ctx.query.get("metric");
  const metric = METRICS.some(([k]) => k === wanted) ? /** @type {string} */ (wanted) : "loss";
  const select = h("select", { id: "compare-metric" },
    METRICS.map(([k, label]) => h("option", { value: k, selected: k === metric }, label)));
  const plot = h("div");

  /** @param {string} key */
  const draw = (key) => {
    resetCharts();
    // One x axis for all: the union of the runs' lines; a run without a line there has a gap.
    const xs = [...new Set(series.flatMap((s) => s.points.map((p) => p.line)))].sort((a, b) => a - b);
    const lines = series.map((s, i) => {
      /** @type {Map<number, number | null>} */
      const at = new Map(s.points.map((p) => [p.line, typeof p[key] === "number" ? /** @type {number} */ (p[key]) : null]));
      return { label: ids[i], values: xs.map((x) => at.get(x) ?? null), color: PALETTE[i % PALETTE.length], width: 2 };
    });
    const label = METRICS.find(([k]) => k === key)?.[1] ?? key;
    const boundaries = [...new Set(series.map((s) => phaseBoundary(s.points)))];
    replace(plot,
      chart({
        name: "compare",
        title: `${label} of ${ids.length} runs`,
        x: xs,
        lines,
        boundary: boundaries.length === 1 ? boundaries[0] : null,
        description: boundaries.length === 1 && boundaries[0] !== null
          ? `The dashed line is where GRPO starts after SFT (line ${boundaries[0]} in every run).`
          : boundaries.some((b) => b !== null) ? `GRPO starts at line ${boundaries.map((b, i) => `${b ?? "—"} (${ids[i]})`).join(", ")}.` : undefined,
      }),
    );
  };
  select.addEventListener("change", () => {
    const q = new URLSearchParams(ctx.query);
    q.set("metric", select.value);
    ctx.setQuery(q);
    draw(select.value);
  });

  page.append(
    h("nav", { class: "crumbs", "aria-label": "Breadcrumb" }, h("a", { href: "/console/runs" }, "Training runs"), " / ", h("span", { "aria-current": "page" }, "Compare")),
    h("h1", { tabindex: -1 }, `Compare ${ids.length} runs`),
    table("Runs compared", ["Colour", "Run", "Agent", "Status", "Version", "Lines", "Cost"],
      runs.map((r, i) => [
        h("span", { class: `swatch swatch-${i % PALETTE.length}`, "aria-hidden": "true" }),
        link(`/console/runs/${enc(r.run_id)}`, r.run_id),
        r.agent_id,
        statusBadge(r.status),
        r.model_version ?? "—",
        `${series[i].points.length}${series[i].downsampled ? ` of ${series[i].total}` : ""}`,
        money(r.cost_estimate_usd),
      ]), { captionHidden: true }),
    h("div", { class: "toolbar" }, h("div", { class: "field" }, h("label", { for: "compare-metric" }, "Metric"), select)),
    plot,
  );
  draw(metric);
  return `Compare ${ids.join(", ")}`;
}
