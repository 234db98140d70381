// One evaluation: the combined reward and its confidence, each part (rule checks, tests, the
// diff, each judge) as scored, each judge's score, confidence and reasoning, and for a code
// change the minimal-diff analysis beside a side-by-side diff of every touched file, with the
// scaffolding and reward-hacking findings on the lines they concern (and listed).
//
// Everything the API returns goes in as text nodes (never parsed as markup). While the
// evaluation is queued or running, the page refreshes it every 3 s.

import { ApiError, api, enc } from "../api.js";
import { facts, h, num, replace, statusBadge, table, when } from "../dom.js";
import { diffLines, sideBySide, splitLines, visibleRanges } from "../linediff.js";
import { safetyCell } from "./evaluations.js";

/** Milliseconds between refreshes while queued or running. */
const POLL_MS = 3000;
/** Rows of one file's diff drawn at most; the rest is summarised. */
const MAX_ROWS = 3000;
/** Unchanged lines kept around each change. */
const CONTEXT = 3;

/**
 * @typedef {{ kind: string, file: string, line: number, detail: string }} Flag
 * @typedef {Flag & { weight: number }} Finding
 * @typedef {{ path: string, status: string, language?: string | null, ast?: any, note?: string | null,
 *   lines_added: number, lines_removed: number, lines_changed: number, lines_before: number, lines_after: number }} FileReport
 * @typedef {{ before: { files: Record<string, string> }, after: { files: Record<string, string> }, language?: string | null }} Change
 * A finding placed on a line: which list it comes from, and the side of the diff it is on.
 * @typedef {{ what: "flag" | "scaffolding", kind: string, file: string, line: number, detail: string,
 *   side: "before" | "after", weight?: number, hard: boolean }} Mark
 */

/** @param {string} status */
const active = (status) => status === "queued" || status === "running";

/** The order parts are listed in: checks, tests, diff, then the judges as reported. */
const PART_ORDER = ["checks", "tests", "diff"];

/**
 * @param {import("../app.js").Ctx} ctx
 * @param {HTMLElement} page
 */
export async function render(ctx, page) {
  const id = ctx.params.id;
  let ev = await api(`/v1/evaluations/${enc(id)}`, { signal: ctx.signal });
  let change = await loadChange(ev, ctx.signal);

  const summary = h("div", { id: "evaluation-summary", role: "status", "aria-live": "polite" });
  const body = h("div", { id: "evaluation-body" });
  const draw = () => {
    replace(summary, drawSummary(ev));
    replace(body, drawBody(ev, change));
  };
  draw();

  page.append(
    h("nav", { class: "crumbs", "aria-label": "Breadcrumb" },
      h("a", { href: "/console/evaluations" }, "Evaluations"), " / ",
      h("span", { "aria-current": "page" }, ev.evaluation_id)),
    h("h1", { tabindex: -1 }, "Evaluation ", h("code", null, ev.evaluation_id)),
    summary,
    body,
  );

  const poll = async () => {
    if (ctx.signal.aborted || !active(ev.status)) return;
    try {
      ev = await api(`/v1/evaluations/${enc(id)}`, { signal: ctx.signal });
      if (!active(ev.status)) change = await loadChange(ev, ctx.signal);
      if (ctx.signal.aborted) return;
      draw();
    } catch (e) {
      if (ctx.signal.aborted || (e instanceof ApiError && e.status === 401)) return;
      console.warn("refresh:", e);
    }
    if (!ctx.signal.aborted && active(ev.status)) setTimeout(poll, POLL_MS);
  };
  if (active(ev.status)) setTimeout(poll, POLL_MS);

  return `Evaluation ${ev.evaluation_id}`;
}

/**
 * The change the evaluation judged, when it had one (a code change: its report has a diff).
 * @param {any} ev
 * @param {AbortSignal} signal
 * @returns {Promise<Change | null>}
 */
async function loadChange(ev, signal) {
  if (!ev.report?.diff) return null;
  try {
    return await api(`/v1/evaluations/${enc(ev.evaluation_id)}/change`, { signal });
  } catch (e) {
    if (e instanceof ApiError && e.status === 404) return null;
    throw e;
  }
}

/** @param {any} ev */
function drawSummary(ev) {
  const r = ev.report ?? null;
  const total = ev.progress?.total ?? 0;
  const done = ev.progress?.done ?? 0;
  return [
    h("div", { class: "serving" },
      stat("Status", statusBadge(ev.status),
        [h("progress", { max: Math.max(total, 1), value: done, "aria-label": "Parts done" }), ` ${done} of ${total} parts${active(ev.status) ? " · refreshing every 3 s" : ""}`],
        "status"),
      stat("Reward", r ? num(r.reward, 3) : "—",
        !r ? "once completed" : r.reward === null || r.reward === undefined ? "no part scored" : r.safety_violation ? "forced to 0 by a safety violation" : "confidence-weighted over the parts",
        "reward", r?.reward),
      stat("Confidence", r ? num(r.confidence, 3) : "—", r ? "1 − Π(1 − cᵢ)" : null, "confidence", r?.confidence),
      stat("Safety", safetyCell(r), r ? (r.safety_violation ? "a part found something unsafe" : "no part found anything unsafe") : null, "safety"),
      stat("Task type", ev.task_type, null, "task-type"),
    ),
    ev.error ? h("p", { class: "alert", role: "alert" }, h("strong", null, "Failed: "), ev.error) : null,
  ];
}

/**
 * @param {any} ev
 * @param {Change | null} change
 */
function drawBody(ev, change) {
  const r = ev.report ?? null;
  /** @type {Array<Node | null>} */
  const out = [
    facts([
      ["Execution", h("code", null, ev.execution_id)],
      ["Created", when(ev.created_at_ms)],
      ["Last change", when(ev.updated_at_ms)],
      ["Verification recorded", r?.verification_id ? h("code", null, r.verification_id) : null],
      ["Judges' tokens (prompt / completion)", r?.judge_usage ? `${r.judge_usage.prompt_tokens} / ${r.judge_usage.completion_tokens}` : null],
    ]),
  ];
  if (!r) {
    out.push(h("p", { class: "empty" }, active(ev.status) ? "The report comes when every part is done." : "No report."));
    return out;
  }
  out.push(partsSection(r), judgesSection(r));
  if (r.diff) out.push(...diffSection(r.diff, change, r.parts?.diff?.evidence?.hard_flags ?? []));
  return out;
}

/**
 * @param {string} label
 * @param {Node | string} value
 * @param {import("../dom.js").Child | import("../dom.js").Child[]} sub
 * @param {string} name  `data-stat`, for the tests
 * @param {number | null} [raw]  the number shown, unrounded
 */
function stat(label, value, sub, name, raw) {
  return h("div", { class: "stat", "data-stat": name, "data-value": raw ?? null },
    h("span", { class: "stat-label" }, label),
    h("span", { class: "stat-value" }, value),
    sub ? h("span", { class: "stat-sub" }, sub) : null);
}

/**
 * What a part's evidence says, in a few words.
 * @param {string} name
 * @param {any} p
 */
function partDetail(name, p) {
  const ev = p.evidence ?? {};
  /** @type {string[]} */
  const bits = [];
  if (name === "checks" && typeof ev.total === "number") {
    bits.push(`${ev.passed} of ${ev.total} passed`);
    if (Array.isArray(ev.failing) && ev.failing.length) bits.push(`failing: ${ev.failing.join(", ")}`);
    if (Array.isArray(ev.safety_failures) && ev.safety_failures.length) bits.push(`safety: ${ev.safety_failures.join(", ")}`);
  } else if (name === "tests" && typeof ev.total === "number") {
    bits.push(`${ev.passed} of ${ev.total} tests passed`);
    for (const k of ["failed", "errored", "skipped"]) if (ev[k]) bits.push(`${ev[k]} ${k}`);
  } else if (name === "diff") {
    if (typeof ev.minimality_score === "number") bits.push(`minimality ${num(ev.minimality_score, 3)}`);
    if (Array.isArray(ev.hard_flags) && ev.hard_flags.length) bits.push(`hard flags: ${ev.hard_flags.join(", ")}`);
  } else if (name.startsWith("judge:") && p.raw_value !== null && p.raw_value !== undefined) {
    bits.push(`score ${num(p.raw_value, 1)} / 10`);
  }
  if (p.reason) bits.push(p.reason);
  return bits.join(" · ");
}

/** @param {any} r */
function partsSection(r) {
  const names = Object.keys(r.parts ?? {}).sort((a, b) => {
    const ia = PART_ORDER.indexOf(a);
    const ib = PART_ORDER.indexOf(b);
    return (ia < 0 ? 99 : ia) - (ib < 0 ? 99 : ib);
  });
  const labels = /** @type {Record<string, string>} */ ({ checks: "Rule checks", tests: "Tests", diff: "Minimal diff" });
  const rows = names.map((name) => {
    const p = r.parts[name];
    return h("tr", { "data-part": name },
      h("th", { scope: "row" }, labels[name] ?? (name.startsWith("judge:") ? `Judge: ${name.slice(6)}` : name)),
      h("td", null, h("span", { class: `badge part-${/^[a-z]+$/.test(p.status) ? p.status : "other"}` }, p.status)),
      h("td", { class: "num" }, num(p.value, 3)),
      h("td", { class: "num" }, num(p.confidence, 3)),
      h("td", null, p.safety_violation ? h("span", { class: "flag-bad" }, "⚠ violation") : "—"),
      h("td", { class: "wrap" }, partDetail(name, p)));
  });
  return h("section", { "aria-labelledby": "parts-h" },
    h("h2", { id: "parts-h" }, "Parts"),
    h("p", { class: "help" }, "The combined reward is Σ cᵢ·vᵢ / Σ cᵢ over the parts that scored (ok); abstentions and errors carry no weight, and any safety violation forces it to 0 with confidence 1."),
    h("div", { class: "table-wrap", tabindex: 0, role: "region", "aria-label": "Parts" },
      h("table", { id: "parts" },
        h("caption", { class: "visually-hidden" }, "Each part's outcome"),
        h("thead", null, h("tr", null, ["Part", "Status", "Value", "Confidence", "Safety", "Details"].map((c) => h("th", { scope: "col" }, c)))),
        h("tbody", null, rows))));
}

/** @param {any} r */
function judgesSection(r) {
  /** @type {any[]} */
  const judgments = r.judgments ?? [];
  const list = h("ul", { class: "judgments", id: "judgments" });
  for (const j of judgments) {
    const abstained = j.score === null || j.score === undefined;
    list.append(h("li", { class: `judgment${abstained ? " abstained" : ""}`, "data-kind": j.kind },
      h("div", { class: "judgment-head" },
        h("h3", null, j.kind),
        h("span", { class: "badge source" }, j.source),
        h("span", { class: "judgment-score", "data-value": j.score ?? null }, abstained ? "no score" : `${num(j.score, 1)} / 10`),
        h("span", { class: "muted" }, `confidence ${j.confidence === null || j.confidence === undefined ? "—" : num(j.confidence, 2)}`)),
      j.reasoning ? h("div", { class: "reasoning" }, j.reasoning) : null,
      j.reason ? h("p", { class: "judgment-reason" }, h("strong", null, abstained ? "Did not answer: " : "Note: "), j.reason) : null,
      h("p", { class: "judgment-meta muted" },
        [j.model ? `model ${j.model}` : "no model asked", j.rubric_version, `${j.calls} call${j.calls === 1 ? "" : "s"}`,
          `${j.usage?.prompt_tokens ?? 0} / ${j.usage?.completion_tokens ?? 0} tokens`, `${j.latency_ms} ms`, j.cached ? "from the cache" : null]
          .filter(Boolean).join(" · "))));
  }
  return h("section", { "aria-labelledby": "judges-h" },
    h("h2", { id: "judges-h" }, "Judges"),
    judgments.length ? list : h("p", { class: "empty" }, "No judge was asked."));
}

/**
 * The side of the diff a finding's line is on: the before file for a deleted file and a
 * deleted test (as the API counts them), the after file otherwise.
 * @param {string} kind
 * @param {string | undefined} status  the file's status in the report
 * @returns {"before" | "after"}
 */
export function flagSide(kind, status) {
  return status === "deleted" || kind === "test_deleted" ? "before" : "after";
}

/**
 * @param {any} d  the diff-score report
 * @param {Change | null} change
 * @param {unknown[]} hardFlags  the flag kinds that fired as hard (the diff part's evidence)
 */
function diffSection(d, change, hardFlags) {
  /** @type {FileReport[]} */
  const files = d.files ?? [];
  const statusOf = new Map(files.map((f) => [f.path, f.status]));
  /** @type {Set<string>} */
  const hard = new Set(hardFlags.map(String));
  /** @type {Mark[]} */
  const marks = [
    ...(/** @type {Flag[]} */ (d.flags ?? [])).map((f) => ({ what: /** @type {const} */ ("flag"), ...f, side: flagSide(f.kind, statusOf.get(f.file)), hard: hard.has(f.kind) })),
    ...(/** @type {Finding[]} */ (d.scaffolding ?? [])).map((f) => ({ what: /** @type {const} */ ("scaffolding"), ...f, side: /** @type {const} */ ("after"), hard: false })),
  ];
  const touched = files.filter((f) => f.status !== "unchanged");
  const linesTouched = touched.reduce((s, f) => s + f.lines_changed, 0);
  const added = touched.reduce((s, f) => s + f.lines_added, 0);
  const removed = touched.reduce((s, f) => s + f.lines_removed, 0);

  /** Anchor of a file's diff, by its place in the report. */
  const fileAnchor = new Map(files.map((f, i) => [f.path, `file-${i}`]));
  /** @param {Mark} m */
  const lineAnchor = (m) => `${fileAnchor.get(m.file) ?? "file-x"}-${m.side === "before" ? "b" : "a"}${m.line}`;

  const markRows = (/** @type {Mark[]} */ list) => list.map((m) => [
    h("span", { class: m.what === "flag" ? "flag-bad" : "flag-warn" }, m.kind),
    h("code", null, m.file),
    fileAnchor.has(m.file) && change ? h("a", { href: `#${lineAnchor(m)}` }, `${m.side} line ${m.line}`) : `${m.side} line ${m.line}`,
    h("span", { class: "wrap" }, m.detail),
    m.what === "flag" ? (m.hard ? "hard: reward floored" : "soft") : `weight ${num(m.weight, 2)}`,
  ]);

  const section = h("section", { "aria-labelledby": "diff-h", id: "diff-analysis" },
    h("h2", { id: "diff-h" }, "Minimal-diff analysis"),
    facts([
      ["Tree edit distance", `${d.tree_edit_distance}${d.exact ? " (exact)" : " (an upper bound)"}`],
      ["Similarity", `${num(d.ast_similarity, 3)} (${d.similarity_basis === "lines" ? "by lines" : "syntax trees"})`],
      ["Files touched", String(d.files_touched)],
      ["Lines touched", `${linesTouched} (+${added} / −${removed})`],
      ["Line change ratio", num(d.line_change_ratio, 3)],
      ["Scaffolding penalty", num(d.scaffolding_penalty, 3)],
      ["Minimality score", num(d.minimality_score, 3)],
      ["Reward multiplier", h("span", { "data-value": d.reward_multiplier, id: "reward-multiplier" }, num(d.reward_multiplier, 3))],
      ["Tests passed", d.tests_passed ? "yes" : "no (or not sent)"],
    ]),
    h("h3", { id: "flags-h" }, `Reward-hacking flags (${(d.flags ?? []).length})`),
    table("Reward-hacking flags", ["Kind", "File", "Line", "Detail", "Effect"], markRows(marks.filter((m) => m.what === "flag")),
      { empty: "No reward-hacking flag." }),
    h("h3", { id: "scaffolding-h" }, `Scaffolding (${(d.scaffolding ?? []).length})`),
    table("Scaffolding findings", ["Kind", "File", "Line", "Detail", "Weight"], markRows(marks.filter((m) => m.what === "scaffolding")),
      { empty: "No scaffolding found." }),
    h("h3", null, "Files"),
    table("Files of the change", ["File", "Status", "Language", "Lines + / −", "Changed", "Tree distance", "Similarity", "Note"],
      files.map((f) => [
        h("code", null, f.path), f.status, f.language ?? "—", `+${f.lines_added} / −${f.lines_removed}`, String(f.lines_changed),
        f.ast ? `${f.ast.tree_edit_distance}${f.ast.exact ? "" : " (bound)"}` : "—",
        f.ast ? num(f.ast.ast_similarity, 3) : "—",
        f.note ?? (f.status === "unchanged" ? "unchanged: not scored" : ""),
      ])),
  );

  const diffs = h("section", { "aria-labelledby": "sbs-h", id: "side-by-side" },
    h("h2", { id: "sbs-h" }, "Changes, side by side"));
  if (!change) {
    diffs.append(h("p", { class: "empty" }, "The change is not available."));
  } else {
    const paths = touched.length
      ? touched.map((f) => f.path)
      : [...new Set([...Object.keys(change.before.files), ...Object.keys(change.after.files)])]
          .filter((p) => change.before.files[p] !== change.after.files[p]).sort();
    if (!paths.length) diffs.append(h("p", { class: "empty" }, "No file changed."));
    for (const path of paths) {
      const mine = marks.filter((m) => m.file === path);
      diffs.append(fileDiff(path, statusOf.get(path) ?? "modified", change.before.files[path], change.after.files[path], mine,
        fileAnchor.get(path) ?? `file-x${paths.indexOf(path)}`));
    }
  }
  return [section, diffs];
}

/**
 * One file's diff: old and new side by side, unchanged runs folded (never a line with a
 * finding), each finding on its line and in a note row under it.
 * @param {string} path
 * @param {string} status
 * @param {string | undefined} before
 * @param {string | undefined} after
 * @param {Mark[]} marks
 * @param {string} anchor
 */
function fileDiff(path, status, before, after, marks, anchor) {
  const rows = sideBySide(diffLines(splitLines(before), splitLines(after)));
  /** Row index of each line, by side. */
  const rowOf = { before: new Map(), after: new Map() };
  rows.forEach((r, i) => {
    if (r.left) rowOf.before.set(r.left.line, i);
    if (r.right) rowOf.after.set(r.right.line, i);
  });
  /** @type {Map<number, Mark[]>} the findings on each row */
  const onRow = new Map();
  /** @type {Mark[]} */
  const elsewhere = [];
  for (const m of marks) {
    const i = rowOf[m.side].get(m.line);
    if (i === undefined) elsewhere.push(m);
    else onRow.set(i, [...(onRow.get(i) ?? []), m]);
  }

  const tbody = h("tbody");
  const ranges = visibleRanges(rows, new Set(onRow.keys()), CONTEXT);
  let drawn = 0;
  let prevEnd = 0;
  /** @param {number} n */
  const gap = (n) => h("tr", { class: "diff-gap" }, h("td", { colspan: 4 }, `⋯ ${n} unchanged line${n === 1 ? "" : "s"}`));
  for (const [s, e] of ranges) {
    if (s > prevEnd) tbody.append(gap(s - prevEnd));
    for (let i = s; i < e && drawn < MAX_ROWS; i++, drawn++) {
      const r = rows[i];
      const found = onRow.get(i) ?? [];
      const flagged = (/** @type {"before" | "after"} */ side) => found.filter((m) => m.side === side);
      tbody.append(h("tr", {
        class: `diff-row ${r.kind}${found.length ? " flagged" : ""}`,
        "data-before-line": r.left?.line ?? null,
        "data-after-line": r.right?.line ?? null,
      },
        lineCell(r.left, "before", anchor, flagged("before")),
        codeCell(r.left, "before", r.kind, flagged("before")),
        lineCell(r.right, "after", anchor, flagged("after")),
        codeCell(r.right, "after", r.kind, flagged("after"))));
      if (found.length) {
        tbody.append(h("tr", { class: "diff-note" },
          h("td", { colspan: 4 },
            h("ul", { class: "line-findings", "aria-label": `Findings on this line of ${path}` },
              found.map((m) => h("li", { class: m.what === "flag" ? "finding-flag" : "finding-scaffolding", "data-kind": m.kind, "data-side": m.side, "data-line": m.line },
                h("strong", null, `${m.what === "flag" ? "⚑ Reward-hacking flag" : "▲ Scaffolding"}: ${m.kind}`),
                ` (${m.side} line ${m.line}${m.what === "flag" && m.hard ? ", hard" : ""}) — `, m.detail))))));
      }
    }
    prevEnd = e;
  }
  if (prevEnd < rows.length) tbody.append(gap(rows.length - prevEnd));
  if (drawn >= MAX_ROWS) tbody.append(h("tr", { class: "diff-gap" }, h("td", { colspan: 4 }, `Only the first ${MAX_ROWS} rows are shown.`)));

  const added = rows.filter((r) => r.right && r.kind !== "same").length;
  const removed = rows.filter((r) => r.left && r.kind !== "same").length;
  return h("section", { class: "file-diff", id: anchor, "data-file": path, "aria-label": `Diff of ${path}` },
    h("h3", null, h("code", null, path), " ", h("span", { class: "muted" }, `${status} · +${added} / −${removed}`)),
    elsewhere.length
      ? h("ul", { class: "line-findings" }, elsewhere.map((m) => h("li", { class: m.what === "flag" ? "finding-flag" : "finding-scaffolding", "data-kind": m.kind },
          h("strong", null, `${m.kind}`), ` (${m.side} line ${m.line}, not in the diff) — `, m.detail)))
      : null,
    rows.length === 0
      ? h("p", { class: "empty" }, "Empty on both sides.")
      : h("div", { class: "table-wrap diff-wrap", tabindex: 0, role: "region", "aria-label": `Before and after of ${path}` },
          h("table", { class: "diff" },
            h("caption", { class: "visually-hidden" }, `${path}: before on the left, after on the right`),
            h("thead", null, h("tr", null,
              h("th", { scope: "col", class: "ln", "aria-label": "Line before" }, "Line"),
              h("th", { scope: "col" }, "Before"),
              h("th", { scope: "col", class: "ln", "aria-label": "Line after" }, "Line"),
              h("th", { scope: "col" }, "After"))),
            tbody)));
}

/**
 * @param {{ line: number, text: string } | null} side
 * @param {"before" | "after"} which
 * @param {string} anchor
 * @param {Mark[]} marks
 */
function lineCell(side, which, anchor, marks) {
  if (!side) return h("td", { class: "ln" });
  return h("td", { class: `ln${marks.length ? " flagged" : ""}`, id: `${anchor}-${which === "before" ? "b" : "a"}${side.line}` },
    marks.length ? h("span", { class: "flag-mark", title: marks.map((m) => m.kind).join(", ") }, "⚑ ") : null,
    String(side.line));
}

/**
 * @param {{ line: number, text: string } | null} side
 * @param {"before" | "after"} which
 * @param {string} kind
 * @param {Mark[]} marks
 */
function codeCell(side, which, kind, marks) {
  if (!side) return h("td", { class: "code none" });
  const changed = kind !== "same";
  return h("td", {
    class: `code${changed ? (which === "before" ? " del" : " add") : ""}${marks.length ? " flagged" : ""}`,
    "data-side": which,
    "data-line": side.line,
    "data-flags": marks.length ? marks.map((m) => m.kind).join(" ") : null,
  }, side.text);
}
