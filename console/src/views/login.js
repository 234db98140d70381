// The login page: the tenant's API key is exchanged for a session cookie (HttpOnly,
// SameSite=Strict) and a CSRF token kept in memory; or, where the console signs in through
// an identity provider (/console/config.json), a button that leaves for its sign-in page.

import { ApiError, login } from "../api.js";
import { h } from "../dom.js";
import { beginSignIn, loadConfig } from "../oidc.js";

/** @param {string | null} next  where to go after signing in: a console path only */
export function safeNext(next) {
  return next && /^\/console\/[^/]/.test(next) && !next.startsWith("/console/login") ? next : "/console/agents";
}

/**
 * @param {import("../app.js").Ctx} ctx
 * @param {HTMLElement} page
 */
export async function render(ctx, page) {
  const { oidc } = await loadConfig();
  if (oidc) {
    const go = h("button", { type: "button", id: "oidc-sign-in" }, "Sign in with your identity provider");
    go.addEventListener("click", () => {
      go.disabled = true;
      void beginSignIn(oidc, safeNext(ctx.query.get("next")));
    });
    page.append(
      h(
        "section",
        { class: "login card" },
        h("h1", { tabindex: -1 }, "Sign in to agentrl"),
        h("p", { class: "help" }, "You sign in at ", h("strong", null, new URL(oidc.authorization_endpoint).host), ", which sends you back here."),
        go,
      ),
    );
    return "Sign in";
  }
  const error = h("div", { class: "alert-slot", "aria-live": "assertive" });
  const key = h("input", {
    id: "api-key",
    name: "api_key",
    type: "password",
    autocomplete: "current-password",
    required: true,
    spellcheck: "false",
    "aria-describedby": "api-key-help",
  });
  const submit = h("button", { type: "submit" }, "Sign in");
  const form = h(
    "form",
    { class: "login-form", novalidate: true },
    h("label", { for: "api-key" }, "API key"),
    key,
    h("p", { id: "api-key-help", class: "help" }, "A key of your tenant, as given to agentrl serve with --api-key or made by agentrl keys create. It is sent once; the console then uses a session cookie."),
    submit,
    error,
  );
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    error.replaceChildren();
    if (!key.value.trim()) {
      error.append(h("p", { role: "alert", class: "alert" }, "Enter an API key."));
      key.focus();
      return;
    }
    submit.disabled = true;
    try {
      await login(key.value.trim());
      ctx.navigate(safeNext(ctx.query.get("next")), { replace: true });
    } catch (e) {
      const msg = e instanceof ApiError && e.status === 401 ? e.message || "That key is not valid." : e instanceof Error ? e.message : String(e);
      error.append(h("p", { role: "alert", class: "alert" }, msg));
      key.select();
    } finally {
      submit.disabled = false;
    }
  });
  page.append(h("section", { class: "login card" }, h("h1", { tabindex: -1 }, "Sign in to agentrl"), form));
  queueMicrotask(() => key.focus());
  return "Sign in";
}
