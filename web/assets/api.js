// Talking to ferry's API: the bearer token goes in the Authorization header of every
// request, errors arrive as `{ error: { code, message } }` envelopes, and a 401 anywhere
// signs the person out with an explanation.
import { getToken } from './auth.js';

/** An answer that was not a success, or a request that got none (status 0). */
export class ApiError extends Error {
  /**
   * @param {number} status The HTTP status, or 0 when the server could not be reached.
   * @param {string | null | undefined} code The envelope's code (`NOT_FOUND`, …), or ours
   *   (`NETWORK`, `ABORTED`).
   * @param {string} [message]
   */
  constructor(status, code, message) {
    super(message || code || `HTTP ${status}`);
    this.name = 'ApiError';
    this.status = status;
    this.code = code || '';
  }
}

/**
 * What a request may throw: an ApiError, or another Error (an abort, a body that is not JSON),
 * which has no status or code. Handlers of failures take it as this.
 * @typedef {Error & { status?: number, code?: string }} Failure
 */

/** @type {Set<(error: ApiError) => void>} */
const listeners = new Set();

/**
 * Called with the ApiError whenever the server answers 401.
 * @param {(error: ApiError) => void} fn
 * @returns {() => boolean} Stops it.
 */
export function onUnauthenticated(fn) {
  listeners.add(fn);
  return () => listeners.delete(fn);
}

/** @param {ApiError} error */
function unauthenticated(error) {
  for (const fn of listeners) fn(error);
}

/** @type {Set<() => void>} */
const backListeners = new Set();
let unreachable = false;

/**
 * Calls `fn` when the server answers again after a request could not reach it (retry.js tries
 * a failed load again at once then). Answers a function that stops it.
 * @param {() => void} fn
 * @returns {() => boolean}
 */
export function onServerBack(fn) {
  backListeners.add(fn);
  return () => backListeners.delete(fn);
}

/** Notes that the server answered (with any status): it is reachable again, if it was not. */
export function serverAnswered() {
  if (!unreachable) return;
  unreachable = false;
  for (const fn of [...backListeners]) fn();
}

/**
 * `extra` with the token's Authorization header, when there is a token.
 * @param {Record<string, string>} [extra]
 * @returns {Record<string, string>}
 */
export function authHeaders(extra = {}) {
  const token = getToken();
  return token ? { ...extra, Authorization: `Bearer ${token}` } : { ...extra };
}

/**
 * Reads an error envelope from a failed answer (or makes one up from the status).
 * @param {Response} response
 * @returns {Promise<ApiError>}
 */
export async function errorFrom(response) {
  let code = '';
  let message = '';
  try {
    /** @type {Partial<ErrorEnvelope> | null} */
    const body = await response.json();
    code = body?.error?.code || '';
    message = body?.error?.message || '';
  } catch {
    // not an envelope
  }
  if (!message) message = `${response.status} ${response.statusText || 'error'}`.trim();
  const error = new ApiError(response.status, code, message);
  if (response.status === 401) unauthenticated(error);
  return error;
}

/**
 * The URL path of an API route from its segments, each percent-encoded.
 * @param {...(string | number)} segments
 * @returns {string}
 */
export function route(...segments) {
  return `/api/${segments.map((s) => encodeURIComponent(String(s))).join('/')}`;
}

/**
 * @typedef {object} RequestOptions
 * @property {string} [method] `GET` unless given.
 * @property {unknown} [json] A body sent as JSON.
 * @property {BodyInit} [body] A body sent as it is.
 * @property {Record<string, string>} [headers]
 * @property {Record<string, string | number | boolean | null | undefined>} [query] Query
 *   parameters; those that are null or undefined are left out.
 * @property {AbortSignal} [signal]
 */

/**
 * fetch() with the token. `json` sends a JSON body; `query` adds query parameters (never
 * the token). Answers the Response when ok, throws ApiError otherwise.
 * @param {string} path
 * @param {RequestOptions} [options]
 * @returns {Promise<Response>}
 */
export async function request(path, { method = 'GET', json, body, headers = {}, query, signal } = {}) {
  let url = path;
  if (query) {
    const params = new URLSearchParams();
    for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== null) params.set(k, String(v));
    const qs = params.toString();
    if (qs) url += `?${qs}`;
  }
  /** @type {RequestInit & { headers: Record<string, string> }} */
  const init = { method, headers: authHeaders(headers), signal, cache: 'no-store' };
  if (json !== undefined) {
    init.body = JSON.stringify(json);
    init.headers['Content-Type'] = 'application/json';
  } else if (body !== undefined) {
    init.body = body;
  }
  let response;
  try {
    response = await fetch(url, init);
  } catch (e) {
    // fetch() rejects with an Error: a TypeError, or the AbortError of its signal.
    if (/** @type {Error} */ (e).name === 'AbortError') throw e;
    unreachable = true;
    throw new ApiError(0, 'NETWORK', 'The server could not be reached. Check your connection and try again.');
  }
  serverAnswered();
  if (!response.ok) throw await errorFrom(response);
  return response;
}

/**
 * GETs a route's JSON answer, of the type the caller names (the route's schema in api.d.ts).
 * @template T
 * @param {string} path
 * @param {RequestOptions} [options]
 * @returns {Promise<T>}
 */
export async function getJson(path, options) {
  const response = await request(path, options);
  return response.json();
}

/**
 * Sends `json` with `method`; answers the JSON answer, of the type the caller names (the
 * route's schema in api.d.ts), or null when the answer has no body (then T is null).
 * @template T
 * @param {string} method
 * @param {string} path
 * @param {unknown} [json]
 * @param {RequestOptions} [options]
 * @returns {Promise<T>}
 */
export async function sendJson(method, path, json, options = {}) {
  const response = await request(path, { ...options, method, json });
  const text = await response.text();
  // An answer without a body (a DELETE's) is null: a caller of such a route names T so.
  return text ? JSON.parse(text) : /** @type {T} */ (null);
}

/**
 * GETs a route's bytes.
 * @param {string} path
 * @param {RequestOptions} [options]
 * @returns {Promise<Blob>}
 */
export async function getBlob(path, options) {
  const response = await request(path, options);
  return response.blob();
}

/** @type {Promise<Limits> | null} */
let limitsAnswer = null;

/**
 * The server's size limits (`GET /api/limits`), asked once per page (again after a failure).
 * @returns {Promise<Limits>}
 */
export function serverLimits() {
  if (!limitsAnswer) {
    limitsAnswer = getJson(route('limits')).catch((/** @type {unknown} */ error) => {
      limitsAnswer = null;
      throw error;
    });
  }
  return limitsAnswer;
}

/**
 * Uploads one file as multipart/form-data (a `file` part) with XMLHttpRequest, whose upload
 * progress events drive the progress bar. Answers `{ promise, abort }`; the promise
 * resolves with the upload object and rejects with ApiError (status 0 for network errors,
 * code 'ABORTED' when cancelled).
 * @param {string} threadId
 * @param {File} file
 * @param {(loaded: number, total: number) => void} [onProgress]
 * @returns {{ promise: Promise<Upload>, abort: () => void }}
 */
export function uploadFile(threadId, file, onProgress) {
  const xhr = new XMLHttpRequest();
  /** @type {Promise<Upload>} */
  const promise = new Promise((resolve, reject) => {
    xhr.open('POST', route('threads', threadId, 'uploads'));
    const token = getToken();
    if (token) xhr.setRequestHeader('Authorization', `Bearer ${token}`);
    xhr.responseType = 'text';
    xhr.upload.addEventListener('progress', (e) => {
      if (e.lengthComputable) onProgress?.(e.loaded, e.total);
    });
    xhr.addEventListener('load', () => {
      serverAnswered();
      /** @type {Partial<UploadList & ErrorEnvelope> | null} */
      let body = null;
      try {
        body = xhr.responseText ? JSON.parse(xhr.responseText) : null;
      } catch {
        body = null;
      }
      if (xhr.status >= 200 && xhr.status < 300) {
        const upload = body?.uploads?.[0];
        if (upload) resolve(upload);
        else reject(new ApiError(xhr.status, 'INTERNAL', 'The server answered without the upload.'));
        return;
      }
      const error = new ApiError(xhr.status, body?.error?.code, body?.error?.message || `${xhr.status} ${xhr.statusText}`);
      if (xhr.status === 401) unauthenticated(error);
      reject(error);
    });
    xhr.addEventListener('error', () => reject(new ApiError(0, 'NETWORK', 'The upload was interrupted (network error).')));
    xhr.addEventListener('abort', () => reject(new ApiError(0, 'ABORTED', 'Cancelled')));
    const form = new FormData();
    form.append('file', file, file.name);
    xhr.send(form);
  });
  return { promise, abort: () => xhr.abort() };
}
