// One dataset's manifest, as the dataset job wrote it: the train and validation splits, every
// file with its size and hash, the rules it was built by, the agents selected, the source
// objects, and the training runs that used it.

import { all, api, enc } from "../api.js";
import { bytes, facts, h, link, num, statusBadge, table, when } from "../dom.js";
import { count } from "./budgets.js";

/** @param {string} name  e.g. `train_rows` → `train rows` */
const words = (name) => name.replace(/_/g, " ");

/** @param {unknown} v */
const shown = (v) => (typeof v === "number" ? (Number.isInteger(v) ? count(v) : num(v)) : typeof v === "boolean" ? (v ? "yes" : "no") : v === null || v === undefined ? "—" : typeof v === "object" ? JSON.stringify(v) : String(v));

/**
 * @param {import("../app.js").Ctx} ctx
 * @param {HTMLElement} page
 */
export async function render(ctx, page) {
  const id = ctx.params.id;
  const [m, runs] = await Promise.all([
    api(`/v1/datasets/${enc(id)}`, { signal: ctx.signal }),
    all("/v1/training-runs", "runs", { signal: ctx.signal, max: 500 }),
  ]);
  /** @type {Record<string, number>} */
  const c = m.counts ?? {};
  /** @type {Array<[string, {path: string, bytes: number, sha256: string}]>} */
  const files = Object.entries(m.files ?? {});
  const total = files.reduce((s, [, f]) => s + (f.bytes ?? 0), 0);
  const used = runs.filter((r) => r.dataset_id === m.dataset_id);
  const splitKeys = ["rows", "trajectories", "conversations"];
  const other = Object.entries(c).filter(([k]) => !/^(train|validation)_/.test(k));

  page.append(
    h("nav", { class: "crumbs", "aria-label": "Breadcrumb" },
      h("a", { href: "/console/datasets" }, "Datasets"), " / ",
      h("span", { "aria-current": "page" }, m.dataset_id)),
    h("h1", { tabindex: -1 }, "Dataset ", h("code", null, m.dataset_id)),
    facts([
      ["Created", when(m.created_at_ms)],
      ["Size", bytes(total)],
      ["Files", String(files.length)],
      ["Schema version", m.schema_version === undefined ? null : String(m.schema_version)],
      ["Content hash", h("code", { class: "wrap" }, m.content_hash)],
    ]),
    h("section", { "aria-labelledby": "splits-h" },
      h("h2", { id: "splits-h" }, "Splits"),
      h("div", { class: "table-wrap", tabindex: 0, role: "region", "aria-label": "Train and validation splits" },
        h("table", { id: "splits" },
          h("caption", { class: "visually-hidden" }, "Train and validation splits"),
          h("thead", null, h("tr", null, h("th", { scope: "col" }, "Split"), splitKeys.map((k) => h("th", { scope: "col" }, k[0].toUpperCase() + k.slice(1))))),
          h("tbody", null, ["train", "validation"].map((s) => h("tr", { "data-split": s },
            h("th", { scope: "row" }, s),
            splitKeys.map((k) => h("td", { class: "num", "data-count": `${s}_${k}` }, shown(c[`${s}_${k}`])))))),
        )),
      table("Other counts", ["Count", "Value"], other.map(([k, v]) => [words(k), shown(v)]), { empty: "" }),
    ),
    h("section", { "aria-labelledby": "files-h" },
      h("h2", { id: "files-h" }, `Files (${files.length})`),
      h("div", { class: "table-wrap", tabindex: 0, role: "region", "aria-label": "Files of the dataset" },
        h("table", { id: "dataset-files" },
          h("caption", { class: "visually-hidden" }, "Files of the dataset"),
          h("thead", null, h("tr", null, ["File", "Size", "Bytes", "SHA-256", "Path"].map((t) => h("th", { scope: "col" }, t)))),
          h("tbody", null, files.map(([name, f]) => h("tr", { "data-file": name },
            h("th", { scope: "row" }, name),
            h("td", { class: "num" }, bytes(f.bytes)),
            h("td", { class: "num" }, String(f.bytes)),
            h("td", { class: "hash" }, h("code", null, f.sha256)),
            h("td", { class: "hash" }, h("code", null, f.path))))),
        )),
    ),
    h("section", { "aria-labelledby": "rules-h" },
      h("h2", { id: "rules-h" }, "Rules it was built by"),
      table("Selection rules", ["Rule", "Value"], Object.entries(m.rules ?? {}).map(([k, v]) => [words(k), shown(v)]), { empty: "The manifest lists no rule." }),
    ),
    h("section", { "aria-labelledby": "agents-h" },
      h("h2", { id: "agents-h" }, "Agents"),
      table("Agents considered",
        ["Agent", "Selected", "Episodes", "High-quality interactions", "Positive feedback", "Counted from"],
        (m.agents ?? []).map((/** @type {any} */ a) => [
          link(`/console/agents/${enc(a.agent_id)}`, a.agent_id), a.selected ? "yes" : "no", shown(a.episodes),
          shown(a.high_quality_interactions), shown(a.positive_feedback), a.counts_from ?? "—",
        ]),
        { empty: "The manifest lists no agent." }),
    ),
    h("section", { "aria-labelledby": "ds-runs-h" },
      h("h2", { id: "ds-runs-h" }, "Training runs on this dataset"),
      table("Training runs on this dataset, newest first", ["Run", "Agent", "Status", "Version", "Created"],
        used.map((r) => [link(`/console/runs/${enc(r.run_id)}`, r.run_id), r.agent_id, statusBadge(r.status), r.model_version ?? "—", when(r.created_at_ms)]),
        { empty: "No training run used this dataset." }),
    ),
    h("section", { "aria-labelledby": "sources-h" },
      h("h2", { id: "sources-h" }, `Source objects (${(m.source_objects ?? []).length})`),
      h("details", null, h("summary", null, "The trajectory files it was built from"),
        h("ul", { class: "sources" }, (m.source_objects ?? []).map((/** @type {string} */ s) => h("li", null, h("code", null, s)))))),
  );
  return `Dataset ${m.dataset_id}`;
}
