// A gate decision: each check's numbers and bound, and the reasons of a refusal.

import { h, num, table } from "./dom.js";

/** @param {string} name  e.g. `validation_reward` → `validation reward` */
const words = (name) => name.replace(/_/g, " ");

/**
 * @param {import("./api.js").GateDecision} decision
 * @param {string} caption
 */
export function decisionTable(decision, caption) {
  return table(
    caption,
    ["Check", "Candidate", "Deployed", "Bound", "Result"],
    (decision.checks ?? []).map((c) => [
      words(c.name),
      num(c.candidate),
      num(c.deployed),
      num(c.bound),
      h("span", { class: c.passed ? "ok" : "bad" }, c.passed ? "passed" : "failed"),
    ]),
    { empty: "The gate made no comparison (a rollback is not gated)." },
  );
}

/**
 * The gate's reasons for a refusal as a list.
 * @param {import("./api.js").GateDecision} decision
 */
export function reasonList(decision) {
  return h("ul", { class: "reasons" }, (decision.reasons ?? []).map((r) => h("li", null, r)));
}
