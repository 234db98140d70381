// Training datasets, newest first, a page at a time by the API's cursor (in the query string,
// so every page is a link): each one's size, its train and validation split counts, its
// content hash and files.

import { api, enc } from "../api.js";
import { bytes, h, link, pagedTable, when } from "../dom.js";
import { count } from "./budgets.js";

/** Datasets per page. */
const LIMIT = 50;

/**
 * `a / b` of two counts, or "—" when the manifest does not have them.
 * @param {Record<string, number>} c
 * @param {string} split  `train` or `validation`
 */
export function split(c, split) {
  const parts = [["rows", c[`${split}_rows`]], ["trajectories", c[`${split}_trajectories`]], ["conversations", c[`${split}_conversations`]]]
    .filter(([, n]) => typeof n === "number")
    .map(([what, n]) => `${count(/** @type {number} */ (n))} ${what}`);
  return parts.length ? parts.join(" · ") : "—";
}

/**
 * @param {import("../app.js").Ctx} ctx
 * @param {HTMLElement} page
 */
export async function render(ctx, page) {
  const cursor = ctx.query.get("cursor");
  const found = await api("/v1/datasets", { query: { cursor, limit: LIMIT }, signal: ctx.signal });
  /** @type {any[]} */
  const items = found.datasets;
  const next = found.next_cursor ?? null;
  /** @param {string | null} c */
  const pageUrl = (c) => (c ? `/console/datasets?cursor=${enc(c)}` : "/console/datasets");

  const rows = items.map((d) => h("tr", { "data-dataset-id": d.dataset_id },
    h("td", { class: "id" }, link(`/console/datasets/${enc(d.dataset_id)}`, d.dataset_id)),
    h("td", { class: "num" }, bytes(d.bytes)),
    h("td", { class: "wrap" }, split(d.counts ?? {}, "train")),
    h("td", { class: "wrap" }, split(d.counts ?? {}, "validation")),
    h("td", { class: "num" }, (d.files ?? []).length),
    h("td", null, h("code", { title: d.content_hash }, String(d.content_hash ?? "").slice(0, 12))),
    h("td", null, when(d.created_at_ms)),
  ));

  const heading = "Datasets";
  page.append(
    h("h1", { tabindex: -1 }, heading),
    h("p", { class: "help" }, "Training datasets newest first, as their manifests describe them: the trajectories selected, split into train and validation, and the files written."),
    ...pagedTable({
      id: "datasets", label: "Datasets", caption: "Datasets, newest first",
      columns: ["Dataset", "Size", "Train", "Validation", "Files", "Content hash", "Created"],
      rows, size: items.length, noun: ["dataset", "datasets"],
      empty: "No dataset yet: a dataset job builds one from the trajectories.", cursor, next, pageUrl,
    }),
  );
  return heading;
}
