// A run's metric series (`GET /v1/training-runs/{id}/metrics`) turned into charts.

import { api, enc } from "./api.js";
import { chart } from "./charts.js";
import { h } from "./dom.js";

/**
 * @typedef {{ line: number, step?: number, phase?: string, [k: string]: unknown }} Point
 * @typedef {{ run_id: string, total: number, downsampled: boolean, points: Point[] }} Series
 */

/** The most points a chart draws; the API downsamples above. */
export const MAX_POINTS = 2000;

/** The metrics a run's page draws, and those a comparison may overlay. */
export const METRICS = /** @type {const} */ ([
  ["loss", "Loss"],
  ["reward_mean", "Reward (mean)"],
  ["kl", "KL divergence"],
  ["clip_fraction", "Clip fraction"],
  ["entropy", "Entropy"],
  ["success", "Success"],
  ["eval_success", "Evaluation success"],
  ["lr", "Learning rate"],
  ["grad_norm", "Gradient norm"],
  ["tokens_per_s", "Tokens per second"],
]);

/**
 * @param {string} runId
 * @returns {Promise<Series>}
 */
export async function fetchSeries(runId) {
  /** @type {Series} */
  const s = await api(`/v1/training-runs/${enc(runId)}/metrics`, { query: { max_points: MAX_POINTS } });
  s.points = [...s.points].sort((a, b) => a.line - b.line);
  return s;
}

/**
 * @param {Point[]} points
 * @param {string} key
 * @returns {(number | null)[]}
 */
export function values(points, key) {
  return points.map((p) => {
    const v = p[key];
    return typeof v === "number" && Number.isFinite(v) ? v : null;
  });
}

/**
 * The line where GRPO starts after SFT (null when the run has one phase only).
 * @param {Point[]} points
 */
export function phaseBoundary(points) {
  const firstGrpo = points.find((p) => p.phase === "grpo");
  const anySft = points.some((p) => p.phase === "sft");
  return firstGrpo && anySft ? firstGrpo.line : null;
}

/**
 * Every chart of one run.
 * @param {Series} s
 * @returns {HTMLElement}
 */
export function runCharts(s) {
  const pts = s.points;
  const x = pts.map((p) => p.line);
  const boundary = phaseBoundary(pts);
  const sft = pts.filter((p) => p.phase === "sft").length;
  const grpo = pts.filter((p) => p.phase === "grpo").length;
  const has = (/** @type {string} */ k) => pts.some((p) => typeof p[k] === "number");

  const mean = values(pts, "reward_mean");
  const std = values(pts, "reward_std");
  const upper = mean.map((m, i) => (m === null ? null : m + (std[i] ?? 0)));
  const lower = mean.map((m, i) => (m === null ? null : m - (std[i] ?? 0)));

  /** @type {HTMLElement[]} */
  const charts = [
    chart({ name: "loss", title: "Loss", x, lines: [{ label: "loss", values: values(pts, "loss") }], boundary }),
    chart({
      name: "reward",
      title: "Reward: mean ± standard deviation",
      x,
      lines: [{ label: "reward_mean", values: mean, width: 2 }],
      band: { label: "reward_mean ± reward_std", upper, lower },
      boundary,
    }),
    chart({ name: "kl", title: "KL divergence from the reference", x, lines: [{ label: "kl", values: values(pts, "kl") }], boundary }),
    chart({ name: "clip_fraction", title: "Clip fraction", x, lines: [{ label: "clip_fraction", values: values(pts, "clip_fraction") }], boundary }),
    chart({ name: "entropy", title: "Entropy", x, lines: [{ label: "entropy", values: values(pts, "entropy") }], boundary }),
  ];
  if (has("success") || has("eval_success")) {
    /** @type {import("./charts.js").Line[]} */
    const lines = [];
    if (has("success")) lines.push({ label: "success", values: values(pts, "success") });
    if (has("eval_success")) lines.push({ label: "eval_success", values: values(pts, "eval_success"), width: 2, dash: [6, 3] });
    charts.push(chart({ name: "success", title: "Success rate", x, lines, boundary }));
  }
  charts.push(chart({ name: "lr", title: "Learning rate", x, lines: [{ label: "lr", values: values(pts, "lr") }], boundary }));
  charts.push(chart({ name: "grad_norm", title: "Gradient norm", x, lines: [{ label: "grad_norm", values: values(pts, "grad_norm") }], boundary }));

  const note = s.downsampled
    ? `${pts.length} of ${s.total} lines drawn (downsampled).`
    : `All ${s.total} lines of metrics.jsonl drawn.`;
  const phases = boundary !== null
    ? ` SFT: ${sft} points, GRPO from line ${boundary}: ${grpo} points (dashed line).`
    : sft ? " SFT only." : grpo ? " GRPO only." : "";
  return h("div", null,
    h("p", { class: "help", id: "curves-note" }, note, phases, has("success") ? "" : " This run logs no success figures."),
    h("div", { class: "charts" }, charts),
  );
}
