// Building the page: elements from plain calls (no HTML strings, so nothing the API returns is
// ever parsed as markup, and no inline style attribute is ever written: the CSP forbids them).

/** @typedef {Node | string | number | null | undefined | false} Child */
/** @typedef {Record<string, string | number | boolean | null | undefined | EventListener>} Attrs */

/**
 * An element: attributes (`class`, `for`, `aria-*`, `data-*`, booleans as presence; `on*`
 * functions as listeners) and children (strings become text).
 * @template {keyof HTMLElementTagNameMap} K
 * @param {K} tag
 * @param {Attrs | null} [attrs]
 * @param {...(Child | Child[])} children
 * @returns {HTMLElementTagNameMap[K]}
 */
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs ?? {})) {
    if (value === null || value === undefined || value === false) continue;
    if (typeof value === "function") {
      el.addEventListener(name.replace(/^on/, ""), value);
    } else if (name === "style") {
      throw new Error("inline styles are forbidden by the CSP: use a class");
    } else if (value === true) {
      el.setAttribute(name, "");
    } else {
      el.setAttribute(name, String(value));
    }
  }
  append(el, children);
  return el;
}

/**
 * @param {Node} parent
 * @param {Array<Child | Child[]>} children
 */
export function append(parent, children) {
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    parent.appendChild(typeof child === "object" ? child : document.createTextNode(String(child)));
  }
}

/**
 * Replaces an element's children.
 * @param {Element} el
 * @param {...(Child | Child[])} children
 */
export function replace(el, ...children) {
  el.replaceChildren();
  append(el, children);
}

/**
 * A link inside the console (the router takes its clicks).
 * @param {string} href
 * @param {Child | Child[]} text
 * @param {Attrs} [attrs]
 */
export function link(href, text, attrs = {}) {
  return h("a", { ...attrs, href }, text);
}

/**
 * A definition list of label → value rows, skipping absent values.
 * @param {Array<[string, Child | Child[]]>} rows
 */
export function facts(rows) {
  const dl = h("dl", { class: "facts" });
  for (const [label, value] of rows) {
    if (value === null || value === undefined || value === "") continue;
    dl.append(h("div", null, h("dt", null, label), h("dd", null, value)));
  }
  return dl;
}

/**
 * A table in a horizontally scrolling, focusable wrapper (narrow screens scroll the table,
 * not the page).
 * @param {string} caption
 * @param {string[]} head
 * @param {Array<Array<Child | Child[]>>} rows
 * @param {{ empty?: string, captionHidden?: boolean }} [opts]
 */
export function table(caption, head, rows, opts = {}) {
  if (rows.length === 0 && opts.empty) return h("p", { class: "empty" }, opts.empty);
  const t = h(
    "table",
    null,
    h("caption", { class: opts.captionHidden ? "visually-hidden" : null }, caption),
    h("thead", null, h("tr", null, head.map((c) => h("th", { scope: "col" }, c)))),
    h("tbody", null, rows.map((r) => h("tr", null, r.map((c) => h("td", null, c))))),
  );
  return h("div", { class: "table-wrap", tabindex: 0, role: "region", "aria-label": caption }, t);
}

/** @param {number | null | undefined} ms */
export function when(ms) {
  if (ms === null || ms === undefined) return null;
  const iso = new Date(ms).toISOString();
  return h("time", { datetime: iso, title: iso }, `${iso.slice(0, 10)} ${iso.slice(11, 16)} UTC`);
}

/**
 * @param {number | null | undefined} x
 * @param {number} [digits]
 */
export function num(x, digits = 4) {
  if (x === null || x === undefined || Number.isNaN(x)) return "—";
  if (Number.isInteger(x)) return String(x);
  const a = Math.abs(x);
  if (a !== 0 && (a < 1e-3 || a >= 1e6)) return x.toExponential(2);
  return x.toFixed(digits);
}

/** @param {number | null | undefined} usd */
export function money(usd) {
  if (usd === null || usd === undefined) return "—";
  if (usd === 0) return "$0";
  return `$${usd.toFixed(usd < 1 ? 4 : 2)}`;
}

/** @param {string} status */
export function statusBadge(status) {
  return h("span", { class: `badge status-${status}` }, status);
}

/**
 * A trajectory's outcome: succeeded, failed, or none posted.
 * @param {boolean | null | undefined} success
 */
export function outcomeBadge(success) {
  if (success === true) return h("span", { class: "badge status-succeeded" }, "success");
  if (success === false) return h("span", { class: "badge status-failed" }, "failure");
  return h("span", { class: "badge status-queued" }, "no outcome");
}

/**
 * Token counts as `in / out`, or "—" when none was reported.
 * @param {number | null | undefined} input
 * @param {number | null | undefined} output
 */
export function tokens(input, output) {
  if ((input === null || input === undefined) && (output === null || output === undefined)) return "—";
  return `${input ?? "—"} / ${output ?? "—"}`;
}

/**
 * A button that opens a native confirmation `<dialog>`; `onConfirm` runs only once the
 * dialog's confirm button is pressed (the dialog is closed first).
 * @param {{ id: string, label: string, title: string, body: Child | Child[], confirm: string, keep: string,
 *   danger?: boolean, onConfirm: (open: HTMLButtonElement) => void | Promise<void> }} opts
 */
export function confirmButton(opts) {
  const titleId = `${opts.id}-h`;
  const yes = h("button", { type: "button", class: opts.danger ? "danger" : null, id: `confirm-${opts.id}` }, opts.confirm);
  const no = h("button", { type: "button", class: "secondary", id: `keep-${opts.id}` }, opts.keep);
  const dialog = h("dialog", { "aria-labelledby": titleId, class: "confirm" },
    h("h2", { id: titleId }, opts.title),
    h("div", null, opts.body),
    h("div", { class: "dialog-actions" }, yes, no),
  );
  const open = h("button", { type: "button", class: opts.danger ? "danger" : "secondary", id: opts.id }, opts.label);
  open.addEventListener("click", () => dialog.showModal());
  no.addEventListener("click", () => dialog.close());
  yes.addEventListener("click", () => {
    dialog.close();
    void opts.onConfirm(open);
  });
  return h("div", { class: "action" }, open, dialog);
}

/**
 * A size in bytes, in the binary units, with the exact count in its title.
 * @param {number | null | undefined} n
 */
export function bytes(n) {
  if (n === null || n === undefined) return "—";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let x = n, u = 0;
  while (x >= 1024 && u < units.length - 1) {
    x /= 1024;
    u += 1;
  }
  return h("span", { title: `${n.toLocaleString("en-US")} bytes`, "data-bytes": n }, u === 0 ? `${n} B` : `${x.toFixed(1)} ${units[u]}`);
}

/**
 * One page of a listing, as every paged list of the console shows it: the count line, the
 * table (or the empty message), and the pager whose links carry the API's cursor.
 * @param {{ id: string, label: string, caption: string, columns: string[], rows: Node | Node[], size: number,
 *   noun: [string, string], empty: string, cursor: string | null, next: string | null,
 *   pageUrl: (cursor: string | null) => string }} t
 *   `noun`: singular and plural; `empty`: the message of a first page with nothing.
 * @returns {Node[]}
 */
export function pagedTable(t) {
  const [one, many] = t.noun;
  return [
    h("p", { class: "count", role: "status" },
      t.size === 0 ? "" : `${t.size} ${t.size === 1 ? one : many}${t.cursor ? " on this page" : ""}${t.next ? ", more on the next page" : ""}.`),
    t.size === 0
      ? h("p", { class: "empty" }, t.cursor ? `No more ${many}.` : t.empty)
      : h("div", { class: "table-wrap", tabindex: 0, role: "region", "aria-label": t.label },
          h("table", { id: t.id },
            h("caption", { class: "visually-hidden" }, t.caption),
            h("thead", null, h("tr", null, t.columns.map((c) => h("th", { scope: "col" }, c)))),
            h("tbody", null, t.rows))),
    h("nav", { class: "pager", "aria-label": "Pages" },
      t.cursor ? link(t.pageUrl(null), "First page") : null,
      t.next ? link(t.pageUrl(t.next), "Next page", { rel: "next", id: "next-page" }) : null),
  ];
}
