// The 404 page: an unknown console route, or an id the API does not know for this tenant
// (another tenant's run looks exactly like a run that does not exist).

import { h } from "../dom.js";

/**
 * @param {import("../app.js").Ctx} _ctx
 * @param {HTMLElement} page
 */
export async function render(_ctx, page) {
  page.append(
    h("section", { class: "not-found" },
      h("h1", { tabindex: -1 }, "Page not found"),
      h("p", null, "Nothing here: the address is wrong, or what it names does not exist for your tenant."),
      h("p", null, h("a", { href: "/console/agents" }, "Go to the console's home page")),
    ),
  );
  return "Not found";
}
