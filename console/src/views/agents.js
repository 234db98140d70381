// The agents list, with a filter on id, name, type and model.

import { all } from "../api.js";
import { h, link, replace, table, when } from "../dom.js";

/**
 * @param {import("../app.js").Ctx} ctx
 * @param {HTMLElement} page
 */
export async function render(ctx, page) {
  const agents = await all("/v1/agents", "agents");
  const filter = h("input", { id: "agent-filter", type: "search", value: ctx.query.get("q") ?? "", autocomplete: "off" });
  const count = h("p", { class: "count", role: "status" });
  const list = h("div");

  const draw = () => {
    const q = filter.value.trim().toLowerCase();
    const shown = agents.filter((a) =>
      !q || [a.agent_id, a.name, a.type, a.model?.name, a.base_model].some((f) => typeof f === "string" && f.toLowerCase().includes(q)),
    );
    count.textContent = q ? `${shown.length} of ${agents.length} agents match “${filter.value.trim()}”` : `${agents.length} agents`;
    replace(
      list,
      table(
        "Agents",
        ["Agent", "Name", "Type", "Model", "Deployed", "Canary", "Active", "Updated"],
        shown.map((a) => [
          link(`/console/agents/${encodeURIComponent(a.agent_id)}`, a.agent_id),
          a.name,
          a.type,
          a.model ? `${a.model.name} (${a.model.provider})` : "—",
          a.deployed_version ?? "—",
          a.canary ? `${a.canary.version} at ${a.canary.percent}%` : "—",
          a.active ? "yes" : "no",
          when(a.updated_at_ms),
        ]),
        { empty: agents.length ? "No agent matches the filter." : "No agent registered yet (POST /v1/agents).", captionHidden: true },
      ),
    );
  };
  filter.addEventListener("input", () => {
    const q = new URLSearchParams(ctx.query);
    if (filter.value.trim()) q.set("q", filter.value.trim());
    else q.delete("q");
    ctx.setQuery(q);
    draw();
  });
  draw();

  page.append(
    h("h1", { tabindex: -1 }, "Agents"),
    h("div", { class: "toolbar" },
      h("div", { class: "field" }, h("label", { for: "agent-filter" }, "Filter agents"), filter),
    ),
    count,
    list,
  );
  return "Agents";
}
