// A gate decision: each check's numbers and bound, and the reasons of a refusal.

import { ApiError } from "./api.js";
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

/**
 * What a promotion did (`POST /v1/training-runs/{id}/promote`'s answer), as a status notice.
 * @param {any} r  the PromoteView
 */
export function promotedNotice(r) {
  const what = r.rollback ? `${r.version} rolled back to` : r.canary ? `${r.version} is a canary at ${r.canary.percent}%` : `${r.version} is deployed`;
  return h("div", { role: "status", class: "notice" },
    h("p", null, h("strong", null, `Promoted: ${what}.`), ` Deployed version: ${r.deployed_version ?? "none"}.`),
    decisionTable(r.decision, "The gate's checks"),
  );
}

/**
 * A refused or failed promotion, as an alert: the gate's reasons and checks when it refused.
 * @param {unknown} e  what the call threw
 * @param {string} version
 * @param {string} [id]
 */
export function promoteRefusal(e, version, id = "promote-refused") {
  const decision = e instanceof ApiError ? e.problem.decision : undefined;
  return h("div", { role: "alert", class: "alert", id },
    decision
      ? [
          h("p", null, h("strong", null, `The evaluation gate refused the promotion of ${version}.`)),
          h("h3", null, "Reasons"),
          reasonList(decision),
          decisionTable(decision, "The gate's checks"),
        ]
      : h("p", null, h("strong", null, "Promotion failed: "), e instanceof Error ? e.message : String(e)),
  );
}
