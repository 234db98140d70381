// Line charts with uPlot (canvas; styles set through the CSSOM, which the CSP allows). Every
// chart drawn is also published in `window.__agentrlCharts[name]` so tests (and curious users
// in the devtools) can read back exactly what was plotted.

import uPlot from "./vendor/uPlot.esm.js";
import { h } from "./dom.js";

/** Colours with at least 3:1 contrast on white (WCAG's non-text contrast). */
export const PALETTE = ["#1f5fbf", "#c0392b", "#1e7f4f", "#8e44ad", "#b35900", "#00788a", "#6b6b00", "#a3195b"];

window.__agentrlCharts = {};

/** Forgets the previous page's charts. */
export function resetCharts() {
  for (const u of live) u.destroy();
  live.clear();
  window.__agentrlCharts = {};
}

/** @type {Set<uPlot>} */
const live = new Set();

/**
 * @typedef {{ label: string, values: (number | null)[], color?: string, dash?: number[], width?: number }} Line
 * @typedef {{
 *   name: string,
 *   title: string,
 *   x: number[],
 *   lines: Line[],
 *   xLabel?: string,
 *   xTime?: boolean,
 *   band?: { upper: (number | null)[], lower: (number | null)[], label: string, color?: string },
 *   boundary?: number | null,
 *   boundaryLabels?: [string, string],
 *   description?: string,
 * }} ChartSpec
 */

/**
 * A figure holding one chart; drawn once it is in the document (it takes its width from its
 * container and follows it when the window is resized).
 * @param {ChartSpec} spec
 * @returns {HTMLElement}
 */
export function chart(spec) {
  const id = `chart-${spec.name.replace(/[^A-Za-z0-9_-]/g, "-")}`;
  const plot = h("div", { class: "chart-plot", "data-chart": spec.name });
  const fig = h(
    "figure",
    { class: "chart", id, "aria-labelledby": `${id}-title` },
    h("figcaption", { id: `${id}-title` }, spec.title),
    plot,
    spec.description ? h("p", { class: "chart-note" }, spec.description) : null,
  );

  /** @type {Record<string, (number | null)[]>} */
  const published = {};
  for (const l of spec.lines) published[l.label] = l.values;
  if (spec.band) {
    published[`${spec.band.label} upper`] = spec.band.upper;
    published[`${spec.band.label} lower`] = spec.band.lower;
  }
  window.__agentrlCharts[spec.name] = { x: spec.x, series: published, boundary: spec.boundary ?? null };

  /** @type {uPlot.Series[]} */
  const series = [{ label: spec.xLabel ?? "line" }];
  /** @type {uPlot.AlignedData} */
  const data = [spec.x];
  spec.lines.forEach((l, i) => {
    series.push({
      label: l.label,
      stroke: l.color ?? PALETTE[i % PALETTE.length],
      width: l.width ?? 1.5,
      dash: l.dash,
      spanGaps: true,
      points: { show: spec.x.length < 60 },
    });
    data.push(l.values);
  });
  /** @type {uPlot.Band[]} */
  const bands = [];
  if (spec.band) {
    const color = spec.band.color ?? PALETTE[0];
    const upper = series.length;
    series.push({ label: `${spec.band.label} upper`, stroke: color, width: 0.5, dash: [2, 3], spanGaps: true, points: { show: false } });
    data.push(spec.band.upper);
    series.push({ label: `${spec.band.label} lower`, stroke: color, width: 0.5, dash: [2, 3], spanGaps: true, points: { show: false } });
    data.push(spec.band.lower);
    bands.push({ series: [upper, upper + 1], fill: "rgba(31, 95, 191, 0.14)" });
  }

  const draw = () => {
    const width = Math.max(260, Math.floor(plot.clientWidth || 600));
    /** @type {uPlot.Options} */
    const opts = {
      width,
      height: 220,
      scales: { x: { time: spec.xTime ?? false }, y: { range: yRange } },
      axes: [
        { label: spec.xLabel ?? "line of metrics.jsonl", stroke: "#333", grid: { stroke: "#e4e4e4" }, ticks: { stroke: "#ccc" } },
        { stroke: "#333", grid: { stroke: "#e4e4e4" }, ticks: { stroke: "#ccc" }, size: 60 },
      ],
      series,
      bands,
      cursor: { drag: { x: true, y: false } },
      plugins: spec.boundary !== null && spec.boundary !== undefined ? [boundaryPlugin(spec.boundary, spec.boundaryLabels ?? ["SFT", "GRPO"])] : [],
    };
    const u = new uPlot(opts, data, plot);
    live.add(u);
    const ro = new ResizeObserver(() => {
      const w = Math.max(260, Math.floor(plot.clientWidth));
      if (w && Math.abs(w - u.width) > 2) u.setSize({ width: w, height: 220 });
    });
    ro.observe(plot);
    const destroy = u.destroy.bind(u);
    u.destroy = () => {
      ro.disconnect();
      destroy();
    };
  };
  // Drawn once attached, so that it knows its width.
  queueMicrotask(() => requestAnimationFrame(() => (plot.isConnected ? draw() : waitAttached(plot, draw))));
  return fig;
}

/**
 * The y range: uPlot's, except around a constant series (uPlot would show 0 to 100 for
 * all zeros, e.g. the KL of a run without a reference).
 * @type {uPlot.Range.Function}
 */
function yRange(_u, min, max) {
  if (min === null || max === null) return [0, 1];
  if (min === max) {
    const pad = Math.abs(min) * 0.1 || 0.1;
    return [min - pad, max + pad];
  }
  return uPlot.rangeNum(min, max, 0.1, true);
}

/**
 * @param {HTMLElement} el
 * @param {() => void} f
 */
function waitAttached(el, f) {
  let tries = 0;
  const tick = () => {
    if (el.isConnected) f();
    else if (tries++ < 100) requestAnimationFrame(tick);
  };
  requestAnimationFrame(tick);
}

/**
 * A dashed vertical line where the second phase starts, with the phases' names either side.
 * @param {number} x
 * @param {[string, string]} labels
 * @returns {uPlot.Plugin}
 */
function boundaryPlugin(x, labels) {
  return {
    hooks: {
      draw: [
        (u) => {
          const ctx = u.ctx;
          const px = u.valToPos(x, "x", true);
          const { top, height } = u.bbox;
          const dpr = window.devicePixelRatio || 1;
          ctx.save();
          ctx.strokeStyle = "#444";
          ctx.lineWidth = 1.5 * dpr;
          ctx.setLineDash([5 * dpr, 4 * dpr]);
          ctx.beginPath();
          ctx.moveTo(px, top);
          ctx.lineTo(px, top + height);
          ctx.stroke();
          ctx.setLineDash([]);
          ctx.fillStyle = "#333";
          ctx.font = `${11 * dpr}px system-ui, sans-serif`;
          ctx.textBaseline = "top";
          ctx.textAlign = "right";
          ctx.fillText(`${labels[0]} ←`, px - 4 * dpr, top + 4 * dpr);
          ctx.textAlign = "left";
          ctx.fillText(`→ ${labels[1]}`, px + 4 * dpr, top + 4 * dpr);
          ctx.restore();
        },
      ],
    },
  };
}
