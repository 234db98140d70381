// The console's entry point: the session, the header, and client-side routing with the
// History API (every view has its own URL under /console/).

import { ApiError, loadSession, logout, session, setUnauthorizedHandler, signedIn as isSignedIn } from "./api.js";
import { h, replace } from "./dom.js";
import { resetCharts } from "./charts.js";
import * as agents from "./views/agents.js";
import * as agent from "./views/agent.js";
import * as attribution from "./views/attribution.js";
import * as attributions from "./views/attributions.js";
import * as budget from "./views/budget.js";
import * as budgets from "./views/budgets.js";
import * as callback from "./views/callback.js";
import * as compare from "./views/compare.js";
import * as dataset from "./views/dataset.js";
import * as datasets from "./views/datasets.js";
import * as evaluation from "./views/evaluation.js";
import * as evaluations from "./views/evaluations.js";
import * as kpis from "./views/kpis.js";
import * as login from "./views/login.js";
import * as notFound from "./views/notfound.js";
import * as run from "./views/run.js";
import * as runs from "./views/runs.js";
import * as trajectories from "./views/trajectories.js";
import * as trajectory from "./views/trajectory.js";

/**
 * What a view gets.
 * @typedef {{
 *   params: Record<string, string>,
 *   query: URLSearchParams,
 *   signal: AbortSignal,
 *   navigate: (url: string, opts?: { replace?: boolean }) => void,
 *   setQuery: (query: URLSearchParams) => void,
 * }} Ctx
 * A view draws into the element it is given and returns the page's title.
 * @typedef {{ render: (ctx: Ctx, main: HTMLElement) => Promise<string> }} View
 */

const BASE = "/console";
const HOME = `${BASE}/agents`;

/** @type {Array<[RegExp, View, string[], boolean]>} pattern, view, parameter names, needs a session */
const ROUTES = [
  [/^\/login$/, login, [], false],
  [/^\/callback$/, callback, [], false],
  [/^\/agents$/, agents, [], true],
  [/^\/agents\/(.+)$/, agent, ["id"], true],
  [/^\/runs$/, runs, [], true],
  [/^\/runs\/compare$/, compare, [], true],
  [/^\/runs\/([^/]+)$/, run, ["id"], true],
  [/^\/trajectories$/, trajectories, [], true],
  [/^\/trajectories\/(.+)$/, trajectory, ["id"], true],
  [/^\/evaluations$/, evaluations, [], true],
  [/^\/evaluations\/(.+)$/, evaluation, ["id"], true],
  [/^\/budgets$/, budgets, [], true],
  [/^\/budgets\/(.+)$/, budget, ["id"], true],
  [/^\/datasets$/, datasets, [], true],
  [/^\/datasets\/(.+)$/, dataset, ["id"], true],
  [/^\/kpis$/, kpis, [], true],
  [/^\/attribution$/, attributions, [], true],
  [/^\/attribution\/(.+)$/, attribution, ["id"], true],
];

const main = /** @type {HTMLElement} */ (document.getElementById("main"));
const nav = /** @type {HTMLElement} */ (document.getElementById("nav"));
const account = /** @type {HTMLElement} */ (document.getElementById("account"));

/** @type {AbortController | null} */
let current = null;
let firstRender = true;
/** The path and query of the view drawn last (or being drawn). */
let routed = "";

/**
 * @param {string} url
 * @param {{ replace?: boolean }} [opts]
 */
export function navigate(url, opts = {}) {
  if (opts.replace) history.replaceState(null, "", url);
  else history.pushState(null, "", url);
  void route();
}

/** The console URL to come back to after signing in (only console paths). */
function here() {
  return location.pathname + location.search;
}

function toLogin() {
  const next = here();
  const url = next.startsWith(`${BASE}/login`) ? `${BASE}/login` : `${BASE}/login?next=${encodeURIComponent(next)}`;
  navigate(url, { replace: true });
}

function drawHeader() {
  const path = location.pathname;
  const signedIn = isSignedIn();
  /** @param {string} href @param {string} text */
  const item = (href, text) =>
    h("li", null, h("a", { href, "aria-current": path === href || path.startsWith(`${href}/`) ? "page" : null }, text));
  replace(nav, signedIn ? h("ul", null, item(`${BASE}/agents`, "Agents"), item(`${BASE}/runs`, "Training runs"), item(`${BASE}/trajectories`, "Trajectories"),
    item(`${BASE}/evaluations`, "Evaluations"), item(`${BASE}/budgets`, "Budgets"), item(`${BASE}/datasets`, "Datasets"),
    item(`${BASE}/kpis`, "KPIs"), item(`${BASE}/attribution`, "Attribution")) : null);
  replace(
    account,
    signedIn
      ? [
          h("span", { class: "tenant" }, "Tenant ", h("strong", null, session.tenant ?? "")),
          h("button", { type: "button", class: "secondary", id: "logout", onclick: onLogout }, "Log out"),
        ]
      : null,
  );
}

async function onLogout() {
  try {
    await logout();
  } catch (e) {
    // The cookie may already be gone; the login page is the right place either way.
    console.warn("logout:", e);
  }
  navigate(`${BASE}/login`);
}

export async function route() {
  current?.abort();
  const ctl = new AbortController();
  current = ctl;
  routed = here();
  resetCharts();

  let rel = location.pathname.startsWith(BASE) ? location.pathname.slice(BASE.length) : location.pathname;
  if (rel === "" || rel === "/") {
    navigate(HOME, { replace: true });
    return;
  }
  if (rel.length > 1 && rel.endsWith("/")) rel = rel.slice(0, -1);

  /** @type {View} */
  let view = notFound;
  /** @type {Record<string, string>} */
  const params = {};
  let needsSession = true;
  for (const [re, v, names, auth] of ROUTES) {
    const m = re.exec(rel);
    if (!m) continue;
    view = v;
    needsSession = auth;
    names.forEach((n, i) => {
      params[n] = decodeURIComponent(m[i + 1]);
    });
    break;
  }

  if (needsSession && !isSignedIn()) {
    const s = await loadSession();
    if (ctl.signal.aborted) return;
    if (!s) {
      toLogin();
      return;
    }
  }
  drawHeader();

  /** @type {Ctx} */
  const ctx = {
    params,
    query: new URLSearchParams(location.search),
    signal: ctl.signal,
    navigate,
    setQuery: (q) => {
      const s = q.toString();
      history.replaceState(null, "", location.pathname + (s ? `?${s}` : ""));
    },
  };
  const page = h("div", { class: "page" });
  replace(main, h("p", { class: "loading", role: "status" }, "Loading…"));
  main.setAttribute("aria-busy", "true");
  let title;
  try {
    title = await view.render(ctx, page);
  } catch (e) {
    if (ctl.signal.aborted) return;
    if (e instanceof ApiError && e.status === 401) return; // on its way to the login page
    page.replaceChildren();
    if (e instanceof ApiError && e.status === 404) {
      title = await notFound.render(ctx, page);
    } else {
      title = "Error";
      page.append(
        h("h1", { tabindex: -1 }, "Something went wrong"),
        h("p", { role: "alert", class: "alert" }, e instanceof Error ? e.message : String(e)),
      );
      console.warn(e);
    }
  }
  if (ctl.signal.aborted) return;
  main.removeAttribute("aria-busy");
  replace(main, page);
  document.title = `${title} · agentrl console`;
  const target = location.hash ? document.getElementById(location.hash.slice(1)) : null;
  if (target) {
    target.scrollIntoView();
  } else if (!firstRender) {
    const heading = main.querySelector("h1");
    (heading instanceof HTMLElement ? heading : main).focus();
  }
  firstRender = false;
}

// Links inside the console are handled here; everything else (other origins, new tabs,
// downloads, in-page anchors) is left to the browser.
document.addEventListener("click", (ev) => {
  if (ev.defaultPrevented || ev.button !== 0 || ev.metaKey || ev.ctrlKey || ev.shiftKey || ev.altKey) return;
  const a = ev.target instanceof Element ? ev.target.closest("a") : null;
  if (!a || a.target || a.hasAttribute("download")) return;
  const url = new URL(a.href, location.href);
  if (url.origin !== location.origin || !url.pathname.startsWith(`${BASE}/`)) return;
  if (a.classList.contains("skip-link")) {
    ev.preventDefault();
    main.focus();
    return;
  }
  // An anchor in this page (a turn, a tool call): the browser scrolls to it.
  if (url.hash && url.pathname + url.search === here()) return;
  ev.preventDefault();
  if (url.pathname + url.search !== here()) navigate(url.pathname + url.search);
});

// Moving between anchors of the same page (back and forth included) is the browser's.
window.addEventListener("popstate", () => {
  if (here() !== routed) void route();
});
setUnauthorizedHandler(toLogin);
void route();
