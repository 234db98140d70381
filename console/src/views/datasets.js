// Training datasets, newest first, a page at a time by the API's cursor (in the query string,
// so every page is a link): each one's size, its train and validation split counts, its
// content hash and files.

import { api, enc } from "../api.js";
import { bytes, h, link, when } from "../dom.js";
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
    h("p", { class: "count", role: "status" },
      items.length === 0 ? "" : `${items.length} dataset${items.length === 1 ? "" : "s"}${cursor ? " on this page" : ""}${next ? ", more on the next page" : ""}.`),
    items.length === 0
      ? h("p", { class: "empty" }, cursor ? "No more datasets." : "No dataset yet: a dataset job builds one from the trajectories.")
      : h("div", { class: "table-wrap", tabindex: 0, role: "region", "aria-label": "Datasets" },
          h("table", { id: "datasets" },
            h("caption", { class: "visually-hidden" }, "Datasets, newest first"),
            h("thead", null, h("tr", null,
              ["Dataset", "Size", "Train", "Validation", "Files", "Content hash", "Created"].map((c) => h("th", { scope: "col" }, c)))),
            h("tbody", null, rows),
          ),
        ),
    h("nav", { class: "pager", "aria-label": "Pages" },
      cursor ? link(pageUrl(null), "First page") : null,
      next ? link(pageUrl(next), "Next page", { rel: "next", id: "next-page" }) : null,
    ),
  );
  return heading;
}
