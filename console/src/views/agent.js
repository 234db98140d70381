// An agent: what serves now (with roll back and cancel canary), its versions newest first with
// their validation scores, each arm's live figures, every gate decision, its deployments, and
// its training runs.

import { all, api, ApiError, enc } from "../api.js";
import { decisionTable, promotedNotice, promoteRefusal, reasonList } from "../decision.js";
import { confirmButton, facts, h, link, money, num, replace, statusBadge, table, when } from "../dom.js";

/** What the last action did, shown once on the page drawn after it (the page is redrawn). */
/** @type {{ agent: string, notice: HTMLElement } | null} */
let flash = null;

/**
 * @param {import("../app.js").Ctx} ctx
 * @param {HTMLElement} page
 */
export async function render(ctx, page) {
  const id = ctx.params.id;
  const a = await api(`/v1/agents/${enc(id)}`);
  const [versions, runsPage, decisions] = await Promise.all([
    all(`/v1/agents/${enc(id)}/versions`, "versions"),
    api("/v1/training-runs", { query: { agent_id: id, limit: 20 } }),
    all(`/v1/agents/${enc(id)}/gate-decisions`, "decisions", { max: 200 }),
  ]);
  const deployedBefore = new Set((a.history ?? []).map((/** @type {{version: string}} */ d) => d.version));

  page.append(
    h("nav", { class: "crumbs", "aria-label": "Breadcrumb" }, h("a", { href: "/console/agents" }, "Agents"), " / ", h("span", { "aria-current": "page" }, id)),
    h("h1", { tabindex: -1 }, a.name, " ", h("span", { class: "muted" }, `(${a.agent_id})`)),
    facts([
      ["Type", a.type],
      ["Model", a.model ? `${a.model.name} (${a.model.provider})` : null],
      ["Base model", a.base_model],
      ["Active", a.active ? "yes" : "no"],
      ["Created", when(a.created_at_ms)],
      ["Updated", when(a.updated_at_ms)],
    ]),
    serving(ctx, a),
    actions(ctx, a, versions),
    h("section", { "aria-labelledby": "versions-h" },
      h("h2", { id: "versions-h" }, "Versions"),
      h("p", { class: "help" }, "Newest first. Validation reward is the version's expected reward on its run's held-out set; “base” is the model it was trained from, scored on the same set."),
      table(
        "Model versions, newest first",
        ["Version", "Serving", "Validation reward", "Base reward", "Gain", "Safety violations", "Live reward (outcomes)", "Run", "Dataset", "Created"],
        versions.map((v) => {
          const ev = v.evaluation, base = v.base_evaluation;
          const diff = ev && base && ev.validation_set === base.validation_set ? ev.reward - base.reward : null;
          const gain = diff === null ? null : Math.abs(diff) < 1e-9 ? 0 : diff;
          const serving = v.version === a.deployed_version ? "deployed"
            : a.canary && a.canary.version === v.version ? `canary ${a.canary.percent}%`
            : deployedBefore.has(v.version) ? "deployed before" : "—";
          const live = v.live ? `${num(v.live.reward_mean)} (${v.live.stats.outcomes})` : "—";
          return [
            h("strong", null, v.version),
            serving,
            ev ? num(ev.reward) : "—",
            base ? num(base.reward) : "—",
            gain === null ? "—" : h("span", { class: gain > 0 ? "ok" : gain < 0 ? "bad" : null }, `${gain >= 0 ? "+" : ""}${num(gain)}`),
            ev ? num(ev.safety_violation_rate) : "—",
            live,
            link(`/console/runs/${enc(v.run_id)}`, v.run_id),
            v.dataset_id,
            when(v.created_at_ms),
          ];
        }),
        { empty: "No version yet: a succeeded training run registers one." },
      ),
    ),
    liveArms(a, versions),
    gateDecisions(decisions),
    h("section", { "aria-labelledby": "history-h" },
      h("h2", { id: "history-h" }, "Deployments"),
      h("p", { class: "help" }, "Every version deployed to all traffic, newest first."),
      table(
        "Deployments, newest first",
        ["Version", "Deployed at"],
        [...(a.history ?? [])].reverse().map((/** @type {{version: string, at_ms: number}} */ d) => [d.version, when(d.at_ms)]),
        { empty: "Nothing deployed yet." },
      ),
    ),
    h("section", { "aria-labelledby": "runs-h" },
      h("h2", { id: "runs-h" }, "Training runs"),
      table(
        "Training runs of this agent, newest first",
        ["Run", "Status", "Progress", "Version", "Cost", "Created"],
        runsPage.runs.map((/** @type {any} */ r) => [
          link(`/console/runs/${enc(r.run_id)}`, r.run_id),
          statusBadge(r.status),
          `${Math.round((r.progress?.fraction ?? 0) * 100)}%`,
          r.model_version ?? "—",
          money(r.cost_estimate_usd),
          when(r.created_at_ms),
        ]),
        { empty: "No training run yet." },
      ),
      h("p", null, link(`/console/runs?agent_id=${enc(id)}`, `All runs of ${id}`)),
    ),
    h("section", { "aria-labelledby": "trajectories-h" },
      h("h2", { id: "trajectories-h" }, "Trajectories"),
      h("p", null, "The conversations this agent had, turn by turn, with their rewards: ",
        link(`/console/trajectories?agent_id=${enc(id)}`, `Trajectories of ${id}`, { id: "agent-trajectories" }), "."),
    ),
  );
  return a.name;
}

/**
 * What serves the agent's traffic now, and which version a given request key gets.
 * @param {import("../app.js").Ctx} ctx
 * @param {any} a
 */
function serving(ctx, a) {
  const key = h("input", { id: "route-key", type: "text", required: true, autocomplete: "off", value: ctx.query.get("key") ?? "" });
  const out = h("div", { class: "route-result", "aria-live": "polite" });
  const form = h("form", { class: "inline-form" },
    h("div", { class: "field" }, h("label", { for: "route-key" }, "Request key"), key),
    h("button", { type: "submit", class: "secondary" }, "Which version serves it?"),
  );
  const lookup = async () => {
    replace(out);
    if (!key.value.trim()) return;
    try {
      const r = await api(`/v1/agents/${enc(a.agent_id)}/route`, { query: { key: key.value.trim() } });
      replace(out, h("p", null, "Key ", h("code", null, r.key), ` is in bucket ${r.bucket} of 10 000: the `, h("strong", null, r.arm), " arm serves it, ", r.version ? h("strong", null, r.version) : "no version", "."));
    } catch (e) {
      replace(out, h("p", { role: "alert", class: "alert" }, e instanceof ApiError ? e.message : String(e)));
    }
  };
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const q = new URLSearchParams(ctx.query);
    q.set("key", key.value.trim());
    ctx.setQuery(q);
    void lookup();
  });
  if (key.value) void lookup();
  const canary = a.canary;
  return h("section", { "aria-labelledby": "serving-h" },
    h("h2", { id: "serving-h" }, "Serving now"),
    h("div", { class: "serving" },
      h("div", { class: "stat" }, h("span", { class: "stat-label" }, "Deployed"), h("span", { class: "stat-value" }, a.deployed_version ?? "none"),
        h("span", { class: "stat-sub" }, canary ? `${num(100 - canary.percent, 1)}% of traffic` : a.deployed_version ? "all traffic" : "the base model serves")),
      h("div", { class: "stat" }, h("span", { class: "stat-label" }, "Canary"), h("span", { class: "stat-value" }, canary ? canary.version : "none"),
        h("span", { class: "stat-sub" }, canary ? `${num(canary.percent, 1)}% of traffic` : "no rollout in progress")),
    ),
    form,
    out,
  );
}

/**
 * Roll back to a version deployed before, and cancel the canary: both promote the run that
 * registered a version deployed before, to all traffic, which the API does without the gate
 * (`POST /v1/training-runs/{run}/promote` with `percent: 100` answers `rollback: true`; the
 * API has no other way to end a canary: `PATCH /v1/agents/{id}` cannot change what serves).
 * @param {import("../app.js").Ctx} ctx
 * @param {any} a
 * @param {any[]} versions
 */
function actions(ctx, a, versions) {
  const result = h("div", { class: "action-result", id: "agent-action-result" });
  if (flash && flash.agent === a.agent_id) result.append(flash.notice);
  flash = null;
  /** @type {Map<string, string>} version → the run that registered it */
  const runOf = new Map(versions.map((v) => [v.version, v.run_id]));
  const earlier = [...new Set([...(a.history ?? [])].reverse().map((/** @type {{version: string}} */ d) => d.version))]
    .filter((v) => v !== a.deployed_version && runOf.has(v));

  /**
   * @param {string} version
   * @param {HTMLButtonElement} open
   */
  const promote = async (version, open) => {
    const run = runOf.get(version);
    if (!run) return;
    open.disabled = true;
    result.replaceChildren();
    try {
      const r = await api(`/v1/training-runs/${enc(run)}/promote`, { method: "POST", body: { percent: 100 } });
      flash = { agent: a.agent_id, notice: promotedNotice(r) };
      ctx.navigate(location.pathname + location.search, { replace: true });
    } catch (e) {
      if (e instanceof ApiError && e.status === 401) return;
      result.append(promoteRefusal(e, version, "agent-action-refused"));
      open.disabled = false;
    }
  };

  const controls = h("div", { class: "actions" });
  if (a.canary && a.deployed_version && runOf.has(a.deployed_version)) {
    controls.append(confirmButton({
      id: "cancel-canary", label: `Cancel canary ${a.canary.version}…`, title: `Cancel the canary ${a.canary.version}?`,
      body: h("p", null, `All traffic goes back to the deployed version ${a.deployed_version} (its run is promoted again, without the gate); ${a.canary.version} stops serving.`),
      confirm: "Cancel canary", keep: "Keep the canary", danger: true,
      onConfirm: (open) => promote(a.deployed_version, open),
    }));
  }
  if (earlier.length) {
    const choice = h("select", { id: "rollback-version" }, earlier.map((v) => h("option", { value: v }, `${v} (run ${runOf.get(v)})`)));
    controls.append(h("div", { class: "inline-form" },
      h("div", { class: "field" }, h("label", { for: "rollback-version" }, "Version deployed before"), choice),
      confirmButton({
        id: "rollback", label: "Roll back…", title: "Roll back?",
        body: h("p", null, "The chosen version serves all traffic again (a version deployed before is promoted without the gate); any canary ends."),
        confirm: "Roll back", keep: "Keep what serves", danger: true,
        onConfirm: (open) => promote(choice.value, open),
      })));
  }
  return h("section", { "aria-labelledby": "actions-h" },
    h("h2", { id: "actions-h" }, "Roll back or cancel the canary"),
    controls.childElementCount ? controls
      : h("p", { class: "empty" }, a.deployed_version ? "No canary to cancel and no earlier deployed version to roll back to." : "Nothing deployed yet."),
    result,
  );
}

/**
 * What the agent platform reported per version arm (outcomes, reward mean, safety violation
 * and reward-hacking rates), from each version's `live`.
 * @param {any} a
 * @param {any[]} versions
 */
function liveArms(a, versions) {
  const live = versions.filter((v) => v.live);
  /** @param {string} v */
  const arm = (v) => v === a.deployed_version ? "deployed" : a.canary && a.canary.version === v ? `canary (${num(a.canary.percent, 1)}%)` : "not serving";
  return h("section", { "aria-labelledby": "live-h" },
    h("h2", { id: "live-h" }, "Live figures per arm"),
    h("p", { class: "help" }, "Outcomes the agent platform reported (POST /v1/agents/{id}/outcomes) for the requests each version served."),
    table("Live figures per version arm", ["Version", "Arm", "Outcomes", "Reward mean", "Safety violation rate", "Reward hacking rate"],
      live.map((v) => [
        h("strong", null, v.version), arm(v.version), String(v.live.stats.outcomes), num(v.live.reward_mean),
        num(v.live.safety_violation_rate), num(v.live.reward_hacking_rate),
      ]),
      { empty: "No outcome reported for any version yet." }),
  );
}

/**
 * Every promotion the gate decided, newest first: refusals with their reasons, each check's
 * numbers and bound.
 * @param {any[]} decisions
 */
function gateDecisions(decisions) {
  return h("section", { "aria-labelledby": "gate-h" },
    h("h2", { id: "gate-h" }, `Gate decisions (${decisions.length})`),
    h("p", { class: "help" }, "Every promotion the evaluation gate decided, newest first, refused ones included: each check's candidate and deployed numbers against its bound."),
    decisions.length === 0
      ? h("p", { class: "empty" }, "No promotion yet.")
      : h("ol", { class: "gate-decisions", id: "gate-decisions" }, decisions.map((d, i) => {
          const passed = d.decision.passed;
          return h("li", { class: `gate-decision ${passed ? "passed" : "refused"}`, "data-run-id": d.run_id, "data-version": d.version, "data-passed": String(passed) },
            h("div", { class: "gate-decision-head" },
              h("h3", null, h("span", { class: `badge ${passed ? "status-succeeded" : "status-failed"}` }, passed ? "passed" : "refused"), " ", d.version,
                d.percent < 100 ? ` as a canary at ${num(d.percent, 1)}%` : " to all traffic", d.rollback ? " (rollback, not gated)" : ""),
              h("span", null, "run ", link(`/console/runs/${enc(d.run_id)}`, d.run_id)), when(d.at_ms)),
            passed ? null : h("div", { class: "refusal" }, h("p", null, h("strong", null, "Refused: nothing changed. Reasons:")), reasonList(d.decision)),
            decisionTable(d.decision, `Checks of decision ${decisions.length - i} (${d.version}, ${passed ? "passed" : "refused"})`),
          );
        })),
  );
}
