// Signing in through the OIDC provider the API trusts (the deployed console): the
// authorization code flow with PKCE (RFC 7636, S256) for a public client. The verifier and
// `state` live in sessionStorage between leaving for the provider and coming back; the
// access token is kept in sessionStorage (this tab only, gone when it closes) and sent as
// `Authorization: Bearer` by api.js. Settings come from /console/config.json.

/**
 * @typedef {{ issuer: string, authorization_endpoint: string, token_endpoint: string,
 *   client_id: string, scopes: string, redirect_uri: string | null }} OidcClient
 * @typedef {{ oidc: OidcClient | null }} ConsoleConfig
 * @typedef {{ state: string, verifier: string, next: string, redirect_uri: string }} Pending
 */

const PENDING = "agentrl.oidc.pending";
const TOKEN = "agentrl.oidc.token";

/** @type {Promise<ConsoleConfig> | null} */
let config = null;

/** How this console signs in (fetched once). */
export function loadConfig() {
  config ??= fetch("/console/config.json", { headers: { Accept: "application/json" } }).then((res) => {
    if (!res.ok) throw new Error(`/console/config.json: HTTP ${res.status}`);
    return /** @type {Promise<ConsoleConfig>} */ (res.json());
  });
  return config;
}

/** @param {Uint8Array} bytes */
function base64url(bytes) {
  let s = "";
  for (const b of bytes) s += String.fromCharCode(b);
  return btoa(s).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/** @param {number} n  random bytes, base64url */
function random(n) {
  return base64url(crypto.getRandomValues(new Uint8Array(n)));
}

/**
 * The S256 code challenge of a verifier: base64url(SHA-256(verifier)).
 * @param {string} verifier
 */
export async function challengeOf(verifier) {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(verifier));
  return base64url(new Uint8Array(digest));
}

/** @param {OidcClient} oidc */
function redirectUri(oidc) {
  return oidc.redirect_uri ?? `${location.origin}/console/callback`;
}

/**
 * Leaves for the provider's sign-in page; it sends the browser back to the redirect URI.
 * @param {OidcClient} oidc
 * @param {string} next  the console page to show once signed in
 */
export async function beginSignIn(oidc, next) {
  // 32 random bytes: a 43-character verifier, the shortest RFC 7636 allows, with 256 bits.
  const verifier = random(32);
  const state = random(16);
  const redirect_uri = redirectUri(oidc);
  /** @type {Pending} */
  const pending = { state, verifier, next, redirect_uri };
  sessionStorage.setItem(PENDING, JSON.stringify(pending));
  const url = new URL(oidc.authorization_endpoint);
  url.searchParams.set("response_type", "code");
  url.searchParams.set("client_id", oidc.client_id);
  url.searchParams.set("redirect_uri", redirect_uri);
  url.searchParams.set("scope", oidc.scopes);
  url.searchParams.set("state", state);
  url.searchParams.set("code_challenge", await challengeOf(verifier));
  url.searchParams.set("code_challenge_method", "S256");
  location.assign(url.toString());
}

/**
 * Back from the provider: checks `state`, trades the code and the verifier for tokens, keeps
 * the access token. Resolves to the page to go to; throws with the reason otherwise.
 * @param {OidcClient} oidc
 * @param {URLSearchParams} query
 */
export async function completeSignIn(oidc, query) {
  const raw = sessionStorage.getItem(PENDING);
  // Used once: a reload of the callback, or a second callback, finds nothing to complete.
  sessionStorage.removeItem(PENDING);
  /** @type {Pending | null} */
  const pending = raw ? JSON.parse(raw) : null;
  if (!pending || query.get("state") !== pending.state) {
    throw new Error("This sign-in was not started here (its state does not match). Sign in again.");
  }
  const error = query.get("error");
  if (error) throw new Error(`The identity provider refused: ${query.get("error_description") || error}`);
  const code = query.get("code");
  if (!code) throw new Error("The identity provider sent no code.");
  const res = await fetch(oidc.token_endpoint, {
    method: "POST",
    headers: { "Content-Type": "application/x-www-form-urlencoded", Accept: "application/json" },
    body: new URLSearchParams({
      grant_type: "authorization_code",
      code,
      redirect_uri: pending.redirect_uri,
      client_id: oidc.client_id,
      code_verifier: pending.verifier,
    }),
    credentials: "omit",
  });
  /** @type {any} */
  const body = await res.json().catch(() => ({}));
  if (!res.ok || typeof body.access_token !== "string") {
    throw new Error(`The token endpoint refused: ${body.error_description || body.error || `HTTP ${res.status}`}`);
  }
  sessionStorage.setItem(TOKEN, body.access_token);
  return pending.next;
}

/** The access token this tab signed in with, or null. */
export function storedToken() {
  return sessionStorage.getItem(TOKEN);
}

export function forgetToken() {
  sessionStorage.removeItem(TOKEN);
}

/**
 * The `tenant_id` claim of a token, for the header only (the API decides from the verified
 * token; the page never trusts what it reads here).
 * @param {string} token
 */
export function tenantOf(token) {
  try {
    const payload = token.split(".")[1].replace(/-/g, "+").replace(/_/g, "/");
    const claims = JSON.parse(atob(payload.padEnd(Math.ceil(payload.length / 4) * 4, "=")));
    return typeof claims.tenant_id === "string" ? claims.tenant_id : null;
  } catch {
    return null;
  }
}
