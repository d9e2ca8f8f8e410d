// The bearer token: taken from the sign-in link's fragment (`/#token=…`), kept in
// sessionStorage for this tab, and never put into a URL, a query string or a log.

const KEY = 'ferry.token';

/**
 * Moves a token from the address bar's fragment into sessionStorage and removes it from
 * the address (and the history entry), keeping the path the link pointed at.
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

export function setToken(token) {
  try {
    sessionStorage.setItem(KEY, token);
  } catch {
    memoryToken = token;
  }
}

let memoryToken = null;

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

/** The token's claims, decoded without verification (the server verifies); null if unreadable. */
export function claimsOf(token) {
  if (!token) return null;
  const parts = token.split('.');
  if (parts.length !== 3) return null;
  try {
    const b64 = parts[1].replace(/-/g, '+').replace(/_/g, '/');
    const padded = b64 + '='.repeat((4 - (b64.length % 4)) % 4);
    const bytes = Uint8Array.from(atob(padded), (c) => c.charCodeAt(0));
    const claims = JSON.parse(new TextDecoder().decode(bytes));
    return claims && typeof claims === 'object' ? claims : null;
  } catch {
    return null;
  }
}

/**
 * What the token in hand is good for: 'missing', 'malformed', 'expired', or 'ok'
 * (with the claims). `exp` is in seconds since the epoch.
 */
export function tokenState(token = getToken(), now = Date.now()) {
  if (!token) return { state: 'missing' };
  const claims = claimsOf(token);
  if (!claims || typeof claims.sub !== 'string' || !claims.sub) return { state: 'malformed' };
  if (typeof claims.exp === 'number' && claims.exp * 1000 <= now) return { state: 'expired', claims };
  return { state: 'ok', claims };
}
