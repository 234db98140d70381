// The public API, as the SDKs call it: same-origin fetches with the session cookie and the
// CSRF token on every state-changing call, or, signed in through the identity provider, with
// its access token as `Authorization: Bearer` (no cookie, no CSRF token then); problem+json
// errors as exceptions.

import { forgetToken, loadConfig, storedToken, tenantOf } from "./oidc.js";

/**
 * @typedef {{ type?: string, title?: string, status?: number, detail?: string, field?: string | null,
 *   errors?: unknown, decision?: GateDecision, [k: string]: unknown }} Problem
 * @typedef {{ name: string, candidate?: number | null, deployed?: number | null, bound?: number | null,
 *   passed: boolean, [k: string]: unknown }} Check
 * @typedef {{ passed: boolean, reasons: string[], checks: Check[] }} GateDecision
 * @typedef {{ tenant: string, csrf_token: string, expires_at_ms: number }} Session
 */

/** An answer of 400 or more, with its problem document. */
export class ApiError extends Error {
  /**
   * @param {number} status
   * @param {Problem} problem
   */
  constructor(status, problem) {
    super(problem.detail || problem.title || `HTTP ${status}`);
    this.status = status;
    this.problem = problem;
  }
}

/**
 * The session's credentials: the CSRF token in memory only (a reload asks the server again),
 * or the provider's access token (kept by oidc.js in this tab's sessionStorage).
 */
export const session = {
  /** @type {string | null} */
  csrf: null,
  /** @type {string | null} */
  token: null,
  /** @type {string | null} */
  tenant: null,
};

/** Whether a cookie session or a bearer token is held. */
export function signedIn() {
  return session.csrf !== null || session.token !== null;
}

function forgetSession() {
  session.csrf = null;
  session.token = null;
  session.tenant = null;
  forgetToken();
}

/**
 * The credentials of a call: the bearer token, or the CSRF token on a state-changing one.
 * @param {string} method
 * @param {Record<string, string>} headers
 */
function authorize(method, headers) {
  if (session.token) headers.Authorization = `Bearer ${session.token}`;
  else if (UNSAFE.has(method) && session.csrf) headers["X-CSRF-Token"] = session.csrf;
  return headers;
}

/** @type {() => void} what to do on a 401 (the app sends the user to the login page) */
let onUnauthorized = () => {};

/** @param {() => void} f */
export function setUnauthorizedHandler(f) {
  onUnauthorized = f;
}

const UNSAFE = new Set(["POST", "PUT", "PATCH", "DELETE"]);

/**
 * Calls the API; resolves to the parsed JSON body (null for 204).
 * @param {string} path  e.g. `/v1/agents`
 * @param {{ method?: string, body?: unknown, query?: Record<string, string | number | null | undefined>,
 *   signal?: AbortSignal, quiet401?: boolean }} [opts]
 * @returns {Promise<any>}
 */
export async function api(path, opts = {}) {
  const method = opts.method ?? "GET";
  const url = new URL(path, location.origin);
  for (const [k, v] of Object.entries(opts.query ?? {})) {
    if (v !== null && v !== undefined && v !== "") url.searchParams.set(k, String(v));
  }
  /** @type {Record<string, string>} */
  const headers = authorize(method, { Accept: "application/json, application/problem+json" });
  if (opts.body !== undefined) headers["Content-Type"] = "application/json";
  const res = await fetch(url, {
    method,
    headers,
    credentials: "same-origin",
    body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
    signal: opts.signal,
  });
  if (res.status === 204) return null;
  const text = await res.text();
  /** @type {any} */
  let body = null;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    body = { title: res.statusText, detail: text.slice(0, 300) };
  }
  if (!res.ok) {
    if (res.status === 401 && !opts.quiet401) {
      forgetSession();
      onUnauthorized();
    }
    throw new ApiError(res.status, body && typeof body === "object" ? body : {});
  }
  return body;
}

/** @param {string} s */
export const enc = (s) => encodeURIComponent(s);

/**
 * One page of an NDJSON list (`application/x-ndjson`, one JSON value a line), and the next
 * page's cursor from its `x-next-cursor` header (null on the last page).
 * @param {string} path
 * @param {{ query?: Record<string, string | number | null | undefined>, signal?: AbortSignal }} [opts]
 * @returns {Promise<{ items: any[], next: string | null }>}
 */
export async function ndjson(path, opts = {}) {
  const url = new URL(path, location.origin);
  for (const [k, v] of Object.entries(opts.query ?? {})) {
    if (v !== null && v !== undefined && v !== "") url.searchParams.set(k, String(v));
  }
  const res = await fetch(url, {
    headers: authorize("GET", { Accept: "application/x-ndjson, application/problem+json" }),
    credentials: "same-origin",
    signal: opts.signal,
  });
  const text = await res.text();
  if (!res.ok) {
    /** @type {any} */
    let problem = {};
    try {
      problem = JSON.parse(text);
    } catch {
      problem = { title: res.statusText, detail: text.slice(0, 300) };
    }
    if (res.status === 401) {
      forgetSession();
      onUnauthorized();
    }
    throw new ApiError(res.status, problem && typeof problem === "object" ? problem : {});
  }
  const items = text.split("\n").filter((line) => line.trim() !== "").map((line) => JSON.parse(line));
  return { items, next: res.headers.get("x-next-cursor") || null };
}

/**
 * Every item of a paged list, following `next_cursor` (at most `max` items).
 * @param {string} path
 * @param {string} key  the array's field, e.g. `runs`
 * @param {{ query?: Record<string, string | number | null | undefined>, signal?: AbortSignal, max?: number }} [opts]
 * @returns {Promise<any[]>}
 */
export async function all(path, key, opts = {}) {
  const max = opts.max ?? 1000;
  /** @type {any[]} */
  const items = [];
  /** @type {string | null} */
  let cursor = null;
  do {
    const page = await api(path, { query: { ...opts.query, cursor, limit: 100 }, signal: opts.signal });
    items.push(...page[key]);
    cursor = page.next_cursor ?? null;
  } while (cursor && items.length < max);
  return items;
}

/**
 * Recovers the session: the provider's token this tab holds where the console signs in
 * through one, the cookie's session otherwise. False when there is none.
 */
export async function loadSession() {
  const { oidc } = await loadConfig();
  if (oidc) {
    const token = storedToken();
    session.token = token;
    session.tenant = token && tenantOf(token);
    return token !== null;
  }
  try {
    /** @type {Session} */
    const s = await api("/v1/console/session", { quiet401: true });
    session.csrf = s.csrf_token;
    session.tenant = s.tenant;
    return true;
  } catch (e) {
    if (e instanceof ApiError && e.status === 401) return false;
    throw e;
  }
}

/** @param {string} apiKey */
export async function login(apiKey) {
  /** @type {Session} */
  const s = await api("/v1/console/session", { method: "POST", body: { api_key: apiKey }, quiet401: true });
  session.csrf = s.csrf_token;
  session.tenant = s.tenant;
  return s;
}

/** Ends the session: the cookie's on the server, or forgets the provider's token. */
export async function logout() {
  try {
    if (!session.token) await api("/v1/console/session", { method: "DELETE", quiet401: true });
  } finally {
    forgetSession();
  }
}
