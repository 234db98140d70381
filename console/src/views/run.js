// One training run: status and live progress (polled while it is queued or running), its
// curves, its job log's end, config, inputs, cost and job; cancel, and promote the version
// it registered.

import { api, ApiError, enc } from "../api.js";
import { resetCharts } from "../charts.js";
import { promotedNotice, promoteRefusal } from "../decision.js";
import { confirmButton, facts, h, link, money, num, replace, statusBadge, when } from "../dom.js";
import { fetchSeries, runCharts } from "../metrics.js";

/** Seconds between refreshes while a run is queued or running. */
const POLL_MS = 3000;

/** Log lines shown. */
const LOG_LINES = 200;

/** @param {string} status */
const active = (status) => status === "queued" || status === "running";

/**
 * @param {import("../app.js").Ctx} ctx
 * @param {HTMLElement} page
 */
export async function render(ctx, page) {
  const id = ctx.params.id;
  let run = await api(`/v1/training-runs/${enc(id)}`);

  const statusEl = h("div", { class: "run-status", role: "status", "aria-live": "polite" });
  const actions = h("div", { class: "actions" });
  const result = h("div", { class: "action-result" });
  const details = h("div");
  const curves = h("div", { class: "curves" });
  const latest = h("div");
  const log = h("div");
  let drawnLines = -1;

  // The job log's last lines, or where the launcher keeps it (Batch: CloudWatch Logs).
  const drawLog = async () => {
    try {
      const tail = await api(`/v1/training-runs/${enc(id)}/logs`, { query: { lines: LOG_LINES } });
      if (tail.location) {
        replace(log, h("p", null, "Kept in ", h("code", null, tail.location), "."));
      } else if (tail.lines.length === 0) {
        replace(log, h("p", { class: "muted" }, "Nothing logged yet."));
      } else {
        replace(log,
          h("p", { class: "muted" }, `The last ${tail.lines.length} lines.`),
          h("pre", { class: "json log", tabindex: 0, "aria-label": "The end of the run's log" }, tail.lines.join("\n")));
      }
    } catch (e) {
      if (!(e instanceof ApiError) || e.status === 401) throw e;
      replace(log, h("p", { role: "alert" }, `The log cannot be shown: ${e.message}`));
    }
  };

  const drawStatus = () => {
    const p = run.progress ?? { fraction: 0 };
    const frac = Math.max(0, Math.min(1, p.fraction ?? 0));
    const step = p.phase ? `${p.phase.toUpperCase()} step ${p.step ?? "?"}${p.phase === "grpo" && p.steps_total ? ` of ${p.steps_total}` : ""}` : null;
    replace(statusEl,
      h("span", { class: "status-line" }, "Status ", statusBadge(run.status)),
      h("label", { for: "run-progress", class: "progress-label" }, "Progress"),
      h("progress", { id: "run-progress", max: 1, value: frac }),
      h("span", { class: "progress-text" }, `${Math.round(frac * 100)}%`, step ? ` · ${step}` : "", active(run.status) ? " · refreshing every 3 s" : ""),
    );
  };

  const drawActions = () => {
    actions.replaceChildren();
    if (active(run.status)) actions.append(cancelControl());
    if (run.status === "succeeded" && run.model_version) actions.append(promoteControl());
  };

  const drawDetails = () => {
    const job = run.job;
    const dur = run.started_at_ms && (run.finished_at_ms ?? (active(run.status) ? Date.now() : null));
    replace(details,
      facts([
        ["Agent", link(`/console/agents/${enc(run.agent_id)}`, run.agent_id)],
        ["Model version", run.model_version ? link(`/console/agents/${enc(run.agent_id)}`, run.model_version) : null],
        ["Dataset", h("code", null, run.dataset_id)],
        ["Base", run.base ? `${run.base.kind === "version" ? "version" : "model"} ${run.base.name}` : null],
        ["Trigger", run.trigger],
        ["Cost (estimate)", money(run.cost_estimate_usd)],
        ["Instance", job ? `${job.instance_type} (${job.launcher}${job.gpu_class ? `, ${job.gpu_class}` : ""})` : null],
        ["Planned peak GPU memory", job && job.planned_peak_gb !== null && job.planned_peak_gb !== undefined ? `${num(job.planned_peak_gb, 1)} GiB` : null],
        ["Job", job ? h("code", null, job.job_id) : null],
        ["Created", when(run.created_at_ms)],
        ["Started", when(run.started_at_ms)],
        ["Finished", when(run.finished_at_ms)],
        ["Duration", dur && run.started_at_ms ? `${num((dur - run.started_at_ms) / 1000, 1)} s` : null],
        [run.status === "failed" ? "Failure reason" : "Reason", run.reason ? h("span", { class: run.status === "failed" ? "bad" : null }, run.reason) : null],
      ]),
    );
    const m = run.metrics;
    replace(latest, m && typeof m === "object"
      ? facts(Object.entries(m).map(([k, v]) => [k, typeof v === "number" ? num(v) : String(v)]))
      : h("p", { class: "empty" }, "No metrics yet."));
  };

  const drawCurves = async () => {
    try {
      const s = await fetchSeries(id);
      if (ctx.signal.aborted || s.total === drawnLines) return;
      drawnLines = s.total;
      resetCharts();
      replace(curves, s.points.length ? runCharts(s) : h("p", { class: "empty" }, active(run.status) ? "No metrics line yet: the job has not logged its first step." : "This run logged no metrics."));
    } catch (e) {
      if (e instanceof ApiError && e.status === 401) throw e;
      replace(curves, h("p", { class: "alert" }, `The metric series could not be read: ${e instanceof Error ? e.message : String(e)}`));
    }
  };

  /** The cancel button and its confirmation dialog. */
  const cancelControl = () => confirmButton({
    id: "cancel-run", label: "Cancel run…", title: "Cancel this run?", danger: true,
    body: h("p", null, `The job of ${id} is stopped; a cancelled run cannot be resumed.`),
    confirm: "Cancel run", keep: "Keep it",
    onConfirm: async (open) => {
      open.disabled = true;
      result.replaceChildren();
      try {
        run = await api(`/v1/training-runs/${enc(id)}/cancel`, { method: "POST" });
        result.append(h("p", { role: "status", class: "notice" }, `Run cancelled${run.reason ? `: ${run.reason}` : ""}.`));
      } catch (e) {
        if (e instanceof ApiError && e.status === 401) return;
        result.append(h("div", { role: "alert", class: "alert" }, h("p", null, e instanceof Error ? e.message : String(e))));
        try {
          run = await api(`/v1/training-runs/${enc(id)}`);
        } catch {
          // keep what is shown
        }
      }
      drawAll();
    },
  });

  /** The promote form: all traffic, or a canary share. */
  const promoteControl = () => {
    const percent = h("input", { id: "promote-percent", type: "number", min: 0, max: 100, step: "any", value: 100, inputmode: "decimal" });
    const btn = h("button", { type: "submit", id: "promote" }, `Promote ${run.model_version}`);
    const form = h("form", { class: "inline-form" },
      h("div", { class: "field" }, h("label", { for: "promote-percent" }, "Share of traffic (%)"), percent),
      btn,
    );
    form.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      result.replaceChildren();
      const pct = Number(percent.value);
      if (!Number.isFinite(pct) || pct < 0 || pct > 100) {
        result.append(h("div", { role: "alert", class: "alert" }, h("p", null, "The share must be between 0 and 100.")));
        return;
      }
      btn.disabled = true;
      try {
        const r = await api(`/v1/training-runs/${enc(id)}/promote`, { method: "POST", body: { percent: pct } });
        result.append(promotedNotice(r));
      } catch (e) {
        if (e instanceof ApiError && e.status === 401) return;
        result.append(promoteRefusal(e, run.model_version));
      } finally {
        btn.disabled = false;
      }
    });
    return h("div", { class: "action" }, form);
  };

  const drawAll = () => {
    drawStatus();
    drawActions();
    drawDetails();
  };

  drawAll();
  await Promise.all([drawCurves(), drawLog()]);

  page.append(
    h("nav", { class: "crumbs", "aria-label": "Breadcrumb" },
      h("a", { href: "/console/runs" }, "Training runs"), " / ",
      h("a", { href: `/console/runs?agent_id=${enc(run.agent_id)}` }, run.agent_id), " / ",
      h("span", { "aria-current": "page" }, id)),
    h("h1", { tabindex: -1 }, "Run ", h("code", null, id)),
    statusEl,
    actions,
    result,
    details,
    h("section", { "aria-labelledby": "curves-h" }, h("h2", { id: "curves-h" }, "Curves"), curves),
    h("section", { "aria-labelledby": "latest-h" }, h("h2", { id: "latest-h" }, "Latest metrics"), latest),
    h("section", { "aria-labelledby": "log-h" }, h("h2", { id: "log-h" }, "Log"), log),
    h("section", { "aria-labelledby": "config-h" },
      h("h2", { id: "config-h" }, "Config"),
      h("pre", { class: "json", tabindex: 0, "aria-label": "Run config as JSON" }, JSON.stringify(run.config ?? {}, null, 2))),
    h("section", { "aria-labelledby": "artifacts-h" },
      h("h2", { id: "artifacts-h" }, "Artifacts"),
      facts([
        ["Output", run.artifacts?.output ? h("code", null, run.artifacts.output) : null],
        ["Dataset", run.artifacts?.dataset ? h("code", null, run.artifacts.dataset) : null],
        ["Base model", run.artifacts?.base_model ? h("code", null, run.artifacts.base_model) : null],
      ])),
  );

  // Live progress: refresh the run and its curves while it is queued or running.
  const poll = async () => {
    if (ctx.signal.aborted || !active(run.status)) return;
    try {
      run = await api(`/v1/training-runs/${enc(id)}`);
      if (ctx.signal.aborted) return;
      drawStatus();
      drawDetails();
      if (!active(run.status)) drawActions();
      await Promise.all([drawCurves(), drawLog()]);
    } catch (e) {
      if (e instanceof ApiError && e.status === 401) return;
      console.warn("refresh:", e);
    }
    if (!ctx.signal.aborted && active(run.status)) setTimeout(poll, POLL_MS);
  };
  if (active(run.status)) setTimeout(poll, POLL_MS);

  return `Run ${id}`;
}
