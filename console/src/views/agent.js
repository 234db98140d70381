// An agent: what serves now, its versions newest first with their validation scores, its
// deployments, and its training runs.

import { all, api, ApiError, enc } from "../api.js";
import { facts, h, link, money, num, replace, statusBadge, table, when } from "../dom.js";

/**
 * @param {import("../app.js").Ctx} ctx
 * @param {HTMLElement} page
 */
export async function render(ctx, page) {
  const id = ctx.params.id;
  const a = await api(`/v1/agents/${enc(id)}`);
  const [versions, runsPage] = await Promise.all([
    all(`/v1/agents/${enc(id)}/versions`, "versions"),
    api("/v1/training-runs", { query: { agent_id: id, limit: 20 } }),
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
    h("section", { "aria-labelledby": "history-h" },
      h("h2", { id: "history-h" }, "Deployments"),
      h("p", { class: "help" }, "Every version deployed to all traffic, newest first. A promotion's gate decision (each check's numbers and bound) is shown on the run's page when you promote."),
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
