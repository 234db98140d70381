// A line diff of two texts (Myers' O((N+M)·D) algorithm, after the common prefix and suffix
// are set aside), and its rows side by side: what the evaluation page draws for each file of a
// change. No dependency; pure functions, so the tests and the checker read them as they are.

/**
 * One line of the diff: `same` (in both texts), `del` (only in the old one), `add` (only in
 * the new one), with its 1-based line numbers.
 * @typedef {{ op: "same" | "del" | "add", old: number | null, new: number | null, text: string }} Edit
 * One row of the side-by-side view: the old line on the left, the new one on the right (either
 * may be absent); `kind` is `same`, `change` (a removal beside an addition), `del` or `add`.
 * @typedef {{ kind: "same" | "change" | "del" | "add", left: { line: number, text: string } | null,
 *   right: { line: number, text: string } | null }} Row
 */

/** Past this many differences in the middle, the middle is shown removed and added whole. */
export const MAX_EDITS = 4000;

/**
 * A text's lines: split at `\n` (a `\r` before it kept as text), a final newline ending the
 * last line rather than starting an empty one. `""` has no lines.
 * @param {string | null | undefined} text
 * @returns {string[]}
 */
export function splitLines(text) {
  if (!text) return [];
  const lines = text.split("\n");
  if (lines[lines.length - 1] === "") lines.pop();
  return lines;
}

/**
 * The shortest edit script turning `a` into `b`, line by line, in order: every line of `a`
 * is `same` or `del`, every line of `b` is `same` or `add`.
 * @param {string[]} a
 * @param {string[]} b
 * @returns {Edit[]}
 */
export function diffLines(a, b) {
  let start = 0;
  while (start < a.length && start < b.length && a[start] === b[start]) start++;
  let endA = a.length;
  let endB = b.length;
  while (endA > start && endB > start && a[endA - 1] === b[endB - 1]) {
    endA--;
    endB--;
  }
  /** @type {Edit[]} */
  const out = [];
  for (let i = 0; i < start; i++) out.push({ op: "same", old: i + 1, new: i + 1, text: a[i] });
  for (const [op, i, j] of middle(a, b, start, endA, start, endB)) {
    if (op === "same") out.push({ op, old: i + 1, new: j + 1, text: a[i] });
    else if (op === "del") out.push({ op, old: i + 1, new: null, text: a[i] });
    else out.push({ op, old: null, new: j + 1, text: b[j] });
  }
  for (let i = endA, j = endB; i < a.length; i++, j++) out.push({ op: "same", old: i + 1, new: j + 1, text: a[i] });
  return out;
}

/**
 * Myers' greedy forward search over `a[a0..a1)` and `b[b0..b1)`, keeping each step's
 * frontier to walk the path back. Returns `[op, index in a, index in b]` in order.
 * @param {string[]} a
 * @param {string[]} b
 * @param {number} a0
 * @param {number} a1
 * @param {number} b0
 * @param {number} b1
 * @returns {Array<["same" | "del" | "add", number, number]>}
 */
function middle(a, b, a0, a1, b0, b1) {
  const n = a1 - a0;
  const m = b1 - b0;
  /** @type {Array<["same" | "del" | "add", number, number]>} */
  const ops = [];
  if (n === 0 && m === 0) return ops;
  const max = Math.min(n + m, MAX_EDITS);
  const off = max + 1;
  // v[k + off]: the furthest x on diagonal k (x − y = k) reached so far.
  const v = new Int32Array(2 * max + 3);
  /** @type {Int32Array[]} each step's frontier, diagonals −d..d */
  const trace = [];
  let found = -1;
  for (let d = 0; d <= max && found < 0; d++) {
    for (let k = -d; k <= d; k += 2) {
      let x = k === -d || (k !== d && v[k - 1 + off] < v[k + 1 + off]) ? v[k + 1 + off] : v[k - 1 + off] + 1;
      let y = x - k;
      while (x < n && y < m && a[a0 + x] === b[b0 + y]) {
        x++;
        y++;
      }
      v[k + off] = x;
      if (x >= n && y >= m) {
        found = d;
        break;
      }
    }
    trace.push(v.slice(off - d, off + d + 1));
  }
  if (found < 0) {
    // Too different to be worth the search: everything in the middle removed, then added.
    for (let i = a0; i < a1; i++) ops.push(["del", i, -1]);
    for (let j = b0; j < b1; j++) ops.push(["add", -1, j]);
    return ops;
  }
  // Walk back from (n, m) through the frontiers.
  let x = n;
  let y = m;
  for (let d = found; d > 0; d--) {
    const prev = trace[d - 1];
    /** @param {number} k */
    const at = (k) => prev[k + d - 1];
    const k = x - y;
    const down = k === -d || (k !== d && at(k - 1) < at(k + 1));
    const pk = down ? k + 1 : k - 1;
    const px = at(pk);
    const py = px - pk;
    while (x > px + (down ? 0 : 1) && y > py + (down ? 1 : 0)) {
      x--;
      y--;
      ops.push(["same", a0 + x, b0 + y]);
    }
    if (down) {
      y--;
      ops.push(["add", -1, b0 + y]);
    } else {
      x--;
      ops.push(["del", a0 + x, -1]);
    }
  }
  while (x > 0 && y > 0) {
    x--;
    y--;
    ops.push(["same", a0 + x, b0 + y]);
  }
  ops.reverse();
  return ops;
}

/**
 * The edits as side-by-side rows: in each run of changes, the removed lines beside the added
 * ones in order, the longer side's rest beside nothing.
 * @param {Edit[]} edits
 * @returns {Row[]}
 */
export function sideBySide(edits) {
  /** @type {Row[]} */
  const rows = [];
  let i = 0;
  while (i < edits.length) {
    const e = edits[i];
    if (e.op === "same") {
      rows.push({ kind: "same", left: { line: /** @type {number} */ (e.old), text: e.text }, right: { line: /** @type {number} */ (e.new), text: e.text } });
      i++;
      continue;
    }
    /** @type {Edit[]} */
    const dels = [];
    /** @type {Edit[]} */
    const adds = [];
    while (i < edits.length && edits[i].op !== "same") {
      (edits[i].op === "del" ? dels : adds).push(edits[i]);
      i++;
    }
    for (let k = 0; k < Math.max(dels.length, adds.length); k++) {
      const d = dels[k];
      const a = adds[k];
      rows.push({
        kind: d && a ? "change" : d ? "del" : "add",
        left: d ? { line: /** @type {number} */ (d.old), text: d.text } : null,
        right: a ? { line: /** @type {number} */ (a.new), text: a.text } : null,
      });
    }
  }
  return rows;
}

/**
 * Which rows to show: every changed row and every row in `keep`, with `context` rows around
 * each; the rest folds into gaps. Returns runs of row indexes, in order.
 * @param {Row[]} rows
 * @param {Set<number>} keep  indexes of rows that must show (e.g. flagged lines)
 * @param {number} [context]
 * @returns {Array<[number, number]>} half-open [start, end) ranges of rows shown
 */
export function visibleRanges(rows, keep, context = 3) {
  /** @type {Array<[number, number]>} */
  const ranges = [];
  for (let i = 0; i < rows.length; i++) {
    if (rows[i].kind === "same" && !keep.has(i)) continue;
    const s = Math.max(0, i - context);
    const e = Math.min(rows.length, i + context + 1);
    const last = ranges[ranges.length - 1];
    if (last && s <= last[1]) last[1] = Math.max(last[1], e);
    else ranges.push([s, e]);
  }
  return ranges;
}
