// Training runs, newest first: the tenant's or one agent's (`?agent_id=`), with checkboxes to
// compare two or more.

import { all, api, enc } from "../api.js";
import { h, link, money, statusBadge, when } from "../dom.js";

/**
 * @param {import("../app.js").Ctx} ctx
 * @param {HTMLElement} page
 */
export async function render(ctx, page) {
  const agentId = ctx.query.get("agent_id") ?? "";
  const [agents, first] = await Promise.all([
    all("/v1/agents", "agents"),
    api("/v1/training-runs", { query: { agent_id: agentId || null, limit: 50 } }),
  ]);

  const select = h("select", { id: "runs-agent", name: "agent_id" },
    h("option", { value: "" }, "All agents"),
    agents.map((a) => h("option", { value: a.agent_id, selected: a.agent_id === agentId }, a.agent_id)),
  );
  if (agentId && !agents.some((a) => a.agent_id === agentId)) select.append(h("option", { value: agentId, selected: true }, agentId));
  select.addEventListener("change", () => {
    ctx.navigate(select.value ? `/console/runs?agent_id=${enc(select.value)}` : "/console/runs");
  });

  const compareBtn = h("button", { type: "button", id: "compare", disabled: true }, "Compare selected");
  const chosen = h("span", { class: "muted", role: "status" }, "Select two or more runs to compare them.");
  /** @type {Set<string>} */
  const picked = new Set();
  const onPick = () => {
    compareBtn.disabled = picked.size < 2;
    chosen.textContent = picked.size ? `${picked.size} selected` : "Select two or more runs to compare them.";
  };
  compareBtn.addEventListener("click", () => {
    ctx.navigate(`/console/runs/compare?ids=${[...picked].map(enc).join(",")}`);
  });

  const tbody = h("tbody");
  /** @param {any[]} runs */
  const addRows = (runs) => {
    for (const r of runs) {
      const box = h("input", { type: "checkbox", value: r.run_id, "aria-label": `Select ${r.run_id} for comparison` });
      box.addEventListener("change", () => {
        if (box.checked) picked.add(r.run_id);
        else picked.delete(r.run_id);
        onPick();
      });
      const frac = Math.max(0, Math.min(1, r.progress?.fraction ?? 0));
      tbody.append(h("tr", null,
        h("td", null, box),
        h("td", null, link(`/console/runs/${enc(r.run_id)}`, r.run_id)),
        h("td", null, link(`/console/agents/${enc(r.agent_id)}`, r.agent_id)),
        h("td", null, statusBadge(r.status)),
        h("td", null, h("progress", { max: 1, value: frac, "aria-label": `Progress of ${r.run_id}` }), " ", `${Math.round(frac * 100)}%`),
        h("td", null, r.model_version ?? "—"),
        h("td", null, money(r.cost_estimate_usd)),
        h("td", null, r.trigger),
        h("td", null, when(r.created_at_ms)),
      ));
    }
  };
  addRows(first.runs);

  let cursor = first.next_cursor ?? null;
  const more = h("button", { type: "button", class: "secondary", hidden: !cursor }, "Load more runs");
  more.addEventListener("click", async () => {
    more.disabled = true;
    const next = await api("/v1/training-runs", { query: { agent_id: agentId || null, limit: 50, cursor } });
    addRows(next.runs);
    cursor = next.next_cursor ?? null;
    more.hidden = !cursor;
    more.disabled = false;
  });

  const heading = agentId ? `Training runs of ${agentId}` : "Training runs";
  page.append(
    h("h1", { tabindex: -1 }, heading),
    h("div", { class: "toolbar" },
      h("div", { class: "field" }, h("label", { for: "runs-agent" }, "Agent"), select),
      h("div", { class: "toolbar-actions" }, compareBtn, chosen),
    ),
    first.runs.length === 0
      ? h("p", { class: "empty" }, "No training run yet.")
      : h("div", { class: "table-wrap", tabindex: 0, role: "region", "aria-label": "Training runs" },
          h("table", null,
            h("caption", { class: "visually-hidden" }, `${heading}, newest first`),
            h("thead", null, h("tr", null,
              ["Compare", "Run", "Agent", "Status", "Progress", "Version", "Cost", "Trigger", "Created"].map((c) => h("th", { scope: "col" }, c)))),
            tbody,
          ),
        ),
    more,
  );
  return heading;
}
