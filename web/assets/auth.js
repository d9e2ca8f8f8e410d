// The bearer token: taken from the sign-in link's fragment (`/#token=…`), kept in
// sessionStorage for this tab, and never put into a URL, a query string or a log.

const KEY = 'ferry.token';

/**
 * A token's claims as the page reads them: whom it signs in (`sub`) and until when (`exp`, in
 * seconds since the epoch), among others the page does not read.
 * @typedef {{ sub: string, exp?: unknown, [claim: string]: unknown }} Claims
 */

/**
 * What the token in hand is good for (`tokenState`).
 * @typedef {{ state: 'missing' | 'malformed' } | { state: 'expired' | 'ok', claims: Claims }} TokenState
 */

/**
 * Moves a token from the address bar's fragment into sessionStorage and removes it from
 * the address (and the history entry), keeping the path the link pointed at.
 * @returns {boolean} Whether the address held a token.
 */
export function adoptTokenFromLocation() {
  const hash = window.location.hash || '';
  if (!hash.startsWith('#')) return false;
  const params = new URLSearchParams(hash.slice(1));
  const token = params.get('token');
  if (token === null) return false;
  params.delete('token');
  const rest = params.toString();
  const clean = window.location.pathname + window.location.search + (rest ? `#${rest}` : '');
  window.history.replaceState(window.history.state, '', clean);
  if (token.trim()) setToken(token.trim());
  return true;
}

/** @param {string} token */
export function setToken(token) {
  try {
    sessionStorage.setItem(KEY, token);
  } catch {
    memoryToken = token;
  }
}

/** The token, when sessionStorage cannot keep it. @type {string | null} */
let memoryToken = null;

/** @returns {string | null} */
export function getToken() {
  try {
    return sessionStorage.getItem(KEY) || memoryToken;
  } catch {
    return memoryToken;
  }
}

export function clearToken() {
  memoryToken = null;
  try {
    sessionStorage.removeItem(KEY);
  } catch {
    // nothing stored
  }
}

/**
 * The token's claims, decoded without verification (the server verifies); null if unreadable.
 * @param {string | null | undefined} token
 * @returns {Record<string, unknown> | null}
 */
export function claimsOf(token) {
  if (!token) return null;
  const parts = token.split('.');
  if (parts.length !== 3) return null;
  try {
    const b64 = parts[1].replace(/-/g, '+').replace(/_/g, '/');
    const padded = b64 + '='.repeat((4 - (b64.length % 4)) % 4);
    const bytes = Uint8Array.from(atob(padded), (c) => c.charCodeAt(0));
    /** @type {unknown} */
    const claims = JSON.parse(new TextDecoder().decode(bytes));
    // An object parsed from JSON: its claims by name.
    return claims && typeof claims === 'object' ? /** @type {Record<string, unknown>} */ (claims) : null;
  } catch {
    return null;
  }
}

/**
 * What the token in hand is good for: 'missing', 'malformed', 'expired', or 'ok'
 * (with the claims). `exp` is in seconds since the epoch.
 * @param {string | null} [token]
 * @param {number} [now]
 * @returns {TokenState}
 */
export function tokenState(token = getToken(), now = Date.now()) {
  if (!token) return { state: 'missing' };
  const claims = claimsOf(token);
  if (!claims || typeof claims.sub !== 'string' || !claims.sub) return { state: 'malformed' };
  // `sub` was just found to be a string: these are the claims of a token.
  if (typeof claims.exp === 'number' && claims.exp * 1000 <= now) return { state: 'expired', claims: /** @type {Claims} */ (claims) };
  return { state: 'ok', claims: /** @type {Claims} */ (claims) };
}
