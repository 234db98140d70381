// Where the identity provider sends the browser back (`/console/callback?code=…&state=…`):
// the code is traded for the access token (oidc.js), then the page asked for is shown.

import { h } from "../dom.js";
import { completeSignIn, loadConfig } from "../oidc.js";
import { safeNext } from "./login.js";

/**
 * @param {import("../app.js").Ctx} ctx
 * @param {HTMLElement} page
 */
export async function render(ctx, page) {
  const { oidc } = await loadConfig();
  if (!oidc) {
    ctx.navigate("/console/login", { replace: true });
    return "Sign in";
  }
  try {
    const next = await completeSignIn(oidc, ctx.query);
    ctx.navigate(safeNext(next), { replace: true });
    return "Signing in";
  } catch (e) {
    page.append(
      h(
        "section",
        { class: "login card" },
        h("h1", { tabindex: -1 }, "Sign-in failed"),
        h("p", { role: "alert", class: "alert" }, e instanceof Error ? e.message : String(e)),
        h("p", null, h("a", { href: "/console/login" }, "Sign in again")),
      ),
    );
    return "Sign-in failed";
  }
}
