// Large files go up in parts through the resumable-upload endpoint (tus 1.0; see
// docs/reference/resumable-uploads.md), so a dropped connection or a pause costs at most the
// part in flight. The upload's address is remembered in localStorage under the file's
// fingerprint (thread, name, size, modification time): after a page reload, adding the same file
// again continues from the bytes the server already kept instead of starting over.
import { ApiError, authHeaders, errorFrom, onServerBack, serverAnswered } from './api.js';

/** Files larger than this go through the resumable endpoint; smaller ones in one request. */
export const RESUMABLE_THRESHOLD = 8 * 1024 * 1024;
/** The bytes of one PATCH: the most a dropped connection can cost. */
const PART_BYTES = 8 * 1024 * 1024;
const ENDPOINT = '/api/uploads/resumable';
const STORE_PREFIX = 'ferry.resumable:';
/**
 * Pauses before each retry after a network error; the last repeats. The wait also ends when the
 * browser says it is online again or the server answers any request of the page, so an upload
 * that lost the network goes on by itself once it is back.
 */
const RETRY_DELAYS_MS = [1000, 3000, 6000, 15000, 30000];

const aborted = () => new ApiError(0, 'ABORTED', 'Cancelled');

/** @typedef {import('./api.js').Failure} Failure */

/**
 * An upload a reload left unfinished, as this browser remembers it: the file's name, size and
 * modification time, and the upload's address on the server; `key` is where it is remembered.
 * @typedef {{ key: string, name: string, size: number, lastModified: number, url: string }} Unfinished
 */

/**
 * The handle of a resumable upload: the plain upload's (`promise`, `abort`), with `pause` and
 * `resume`.
 * @typedef {{ resumable: true, promise: Promise<Upload>, pause: () => void, resume: () => void, abort: () => void }} ResumableUpload
 */

/**
 * tus metadata: comma-separated `key base64(value)` pairs, values as UTF-8.
 * @param {Record<string, string>} pairs
 * @returns {string}
 */
function metadataHeader(pairs) {
  const base64 = (/** @type {string} */ text) => {
    let binary = '';
    for (const byte of new TextEncoder().encode(text)) binary += String.fromCharCode(byte);
    return btoa(binary);
  };
  return Object.entries(pairs).map(([key, value]) => `${key} ${base64(value)}`).join(',');
}

/**
 * A tus request (no body) with the token; rejects with a NETWORK ApiError when the server cannot
 * be reached.
 * @param {string} url
 * @param {string} method
 * @param {Record<string, string>} [headers]
 * @returns {Promise<Response>}
 */
async function tusFetch(url, method, headers = {}) {
  let response;
  try {
    response = await fetch(url, {
      method, cache: 'no-store', headers: authHeaders({ 'Tus-Resumable': '1.0.0', ...headers }),
    });
  } catch {
    throw new ApiError(0, 'NETWORK', 'The server could not be reached.');
  }
  serverAnswered();
  return response;
}

/**
 * Waits `ms`, or less: until the browser is back online or the server answers the page again.
 * Offline, only those end it (a retry could not reach anything). `cut` ends it at once (a
 * pause or a cancel meanwhile).
 * @param {number} ms
 * @returns {{ done: Promise<void>, cut: () => void }}
 */
function networkWait(ms) {
  let cut = () => {};
  /** @type {Promise<void>} */
  const done = new Promise((resolve) => {
    const timer = navigator.onLine === false ? null : setTimeout(end, ms);
    const offBack = onServerBack(end);
    window.addEventListener('online', end);
    function end() {
      clearTimeout(timer);
      offBack();
      window.removeEventListener('online', end);
      resolve();
    }
    cut = end;
  });
  return { done, cut };
}

/**
 * The uploads of a thread a reload (or a closed tab) left unfinished, as this browser remembers
 * them: `{ key, name, size, lastModified, url }` each. The bytes the server kept wait for the same
 * file to be picked again (or expire on the server).
 * @param {string} threadId
 * @returns {Unfinished[]}
 */
export function unfinishedUploads(threadId) {
  const prefix = `${STORE_PREFIX}${threadId}:`;
  /** @type {Unfinished[]} */
  const found = [];
  let keys = [];
  try {
    keys = Object.keys(localStorage);
  } catch {
    return found; // storage disabled: nothing outlives the page
  }
  for (const key of keys) {
    if (!key.startsWith(prefix)) continue;
    // `{size}:{lastModified}:{name}`: the name comes last, since it may hold a colon.
    const m = /^(\d+):(\d+):(.+)$/.exec(key.slice(prefix.length));
    const url = storage.get(key);
    if (m && url) found.push({ key, size: Number(m[1]), lastModified: Number(m[2]), name: m[3], url });
  }
  return found.sort((a, b) => a.name.localeCompare(b.name));
}

/**
 * How many bytes of an unfinished upload the server kept; null when it no longer has it (expired,
 * finished in another tab, cancelled), which forgets it here too. Throws when it cannot be asked.
 * @param {{ key: string, url: string }} unfinished
 * @returns {Promise<number | null>}
 */
export async function keptBytes({ key, url }) {
  const head = await tusFetch(url, 'HEAD');
  if (head.ok) return Number(head.headers.get('Upload-Offset')) || 0;
  if (head.status === 404 || head.status === 410 || head.status === 403) {
    storage.remove(key);
    return null;
  }
  throw await errorFrom(head);
}

/**
 * Forgets an unfinished upload the person does not mean to continue, and ends it on the server
 * (tus termination), which frees the kept bytes now rather than at expiry.
 * @param {{ key: string, url: string }} unfinished
 */
export function forgetUnfinished({ key, url }) {
  storage.remove(key);
  tusFetch(url, 'DELETE').catch(() => {});
}

/**
 * The localStorage key of a file's upload into a thread.
 * @param {string} threadId
 * @param {File} file
 * @returns {string}
 */
function keyOf(threadId, file) {
  return `${STORE_PREFIX}${threadId}:${file.size}:${file.lastModified}:${file.name}`;
}

/**
 * Whether `file` is the one an unfinished upload was made of.
 * @param {{ key: string }} unfinished
 * @param {string} threadId
 * @param {File} file
 * @returns {boolean}
 */
export function isFileOf(unfinished, threadId, file) {
  return unfinished.key === keyOf(threadId, file);
}

/** localStorage, or nothing where it is disabled. */
const storage = {
  /**
   * @param {string} key
   * @returns {string | null}
   */
  get(key) {
    try {
      return localStorage.getItem(key);
    } catch {
      return null; // storage disabled: the upload still works, it just cannot outlive the page
    }
  },
  /**
   * @param {string} key
   * @param {string} value
   */
  set(key, value) {
    try {
      localStorage.setItem(key, value);
    } catch {
      // as above
    }
  },
  /** @param {string} key */
  remove(key) {
    try {
      localStorage.removeItem(key);
    } catch {
      // as above
    }
  },
};

/**
 * Uploads `file` into the thread through the resumable endpoint. Answers the handle the composer
 * holds for every upload — `{ promise, abort }`, the promise resolving with the upload object —
 * plus `pause()`, `resume()` and `resumable: true`. `onProgress(sent, total)` follows the bytes;
 * `onPause()` says the upload stopped, as the person asked, and waits for `resume()`;
 * `onResumeFrom(offset)` says a reload's leftover was found and the upload continues from
 * `offset`; `onNetwork(waiting)` says the network is gone and the upload waits for it (it goes on
 * by itself when the browser is online again or the server answers), then that it is back.
 */
/**
 * @param {string} threadId
 * @param {File} file
 * @param {{ onProgress?: (sent: number, total: number) => void, onPause?: () => void, onResumeFrom?: (offset: number) => void, onNetwork?: (waiting: boolean) => void }} [hooks]
 * @returns {ResumableUpload}
 */
export function uploadResumably(threadId, file, { onProgress, onPause, onResumeFrom, onNetwork } = {}) {
  const key = keyOf(threadId, file);
  /** @type {string | null} The upload's address, once it has one. */
  let url = null;
  let offset = 0;
  /** @type {XMLHttpRequest | null} */
  let xhr = null;
  let paused = false;
  let cancelled = false;
  /** @type {(() => void) | null} */
  let wake = null;
  /** @type {{ done: Promise<void>, cut: () => void } | null} */
  let napping = null; // the wait for the network, which a pause or a cancel cuts short
  let stale = true; // the offset must be asked for (HEAD) before the next part

  /** Termination frees the kept bytes now rather than at expiry. */
  function terminate() {
    storage.remove(key);
    if (url) tusFetch(url, 'DELETE').catch(() => {});
    url = null;
  }

  /** Finds the upload a reload left, or creates one. */
  async function locate() {
    const remembered = storage.get(key);
    if (remembered) {
      const head = await tusFetch(remembered, 'HEAD');
      if (head.ok && Number(head.headers.get('Upload-Length')) === file.size) {
        url = remembered;
        offset = Number(head.headers.get('Upload-Offset')) || 0;
        stale = false;
        if (offset > 0) onResumeFrom?.(offset);
        return;
      }
      storage.remove(key); // expired, finished elsewhere, or not this file after all
    }
    const created = await tusFetch(ENDPOINT, 'POST', {
      'Upload-Length': String(file.size),
      'Upload-Metadata': metadataHeader({ threadId, filename: file.name }),
    });
    if (created.status !== 201) throw await errorFrom(created);
    // A 201 of tus creation names the upload's address.
    url = new URL(/** @type {string} */ (created.headers.get('Location')), window.location.href).pathname;
    storage.set(key, url);
    offset = 0;
    stale = false;
  }

  /** Asked once the upload has its address, as are the parts and the answer. */
  async function askOffset() {
    const head = await tusFetch(/** @type {string} */ (url), 'HEAD');
    if (!head.ok) throw await errorFrom(head);
    offset = Number(head.headers.get('Upload-Offset')) || 0;
    stale = false;
  }

  /**
   * PATCHes the next part with XMLHttpRequest, whose progress events drive the bar.
   * @returns {Promise<void>}
   */
  function sendPart() {
    const end = Math.min(offset + PART_BYTES, file.size);
    return new Promise((resolve, reject) => {
      xhr = new XMLHttpRequest();
      xhr.open('PATCH', /** @type {string} */ (url));
      for (const [name, value] of Object.entries(authHeaders({
        'Tus-Resumable': '1.0.0',
        'Upload-Offset': String(offset),
        'Content-Type': 'application/offset+octet-stream',
      }))) xhr.setRequestHeader(name, value);
      xhr.responseType = 'text';
      xhr.upload.addEventListener('progress', (e) => onProgress?.(offset + e.loaded, file.size));
      xhr.addEventListener('load', () => {
        // `xhr` holds this part's request until it ends (hence the casts).
        if (/** @type {XMLHttpRequest} */ (xhr).status === 204) {
          offset = Number(/** @type {XMLHttpRequest} */ (xhr).getResponseHeader('Upload-Offset'));
          resolve();
          return;
        }
        /** @type {Partial<ErrorEnvelope['error']> | null} */
        let envelope = null;
        try {
          envelope = JSON.parse(/** @type {XMLHttpRequest} */ (xhr).responseText)?.error;
        } catch {
          envelope = null;
        }
        reject(new ApiError(/** @type {XMLHttpRequest} */ (xhr).status, envelope?.code,
          envelope?.message || `${/** @type {XMLHttpRequest} */ (xhr).status} ${/** @type {XMLHttpRequest} */ (xhr).statusText}`));
      });
      xhr.addEventListener('error', () => reject(new ApiError(0, 'NETWORK', 'The connection dropped.')));
      xhr.addEventListener('abort', () => reject(aborted()));
      xhr.send(file.slice(offset, end));
    });
  }

  /**
   * The finished upload's answer: what the plain upload route would have answered.
   * @returns {Promise<Upload>}
   */
  async function answer() {
    const response = await tusFetch(/** @type {string} */ (url), 'GET');
    if (!response.ok) throw await errorFrom(response);
    /** @type {Upload | undefined} */
    const upload = (await response.json())?.uploads?.[0];
    if (!upload) throw new ApiError(response.status, 'INTERNAL', 'The server answered without the upload.');
    return upload;
  }

  async function run() {
    let failures = 0;
    const back = () => {
      if (failures === 0) return;
      failures = 0;
      onNetwork?.(false);
    };
    for (;;) {
      if (cancelled) {
        terminate(); // a cancel that came while the upload was being created
        throw aborted();
      }
      if (paused) {
        await /** @type {Promise<void>} */ (new Promise((resolve) => { wake = resolve; }));
        continue;
      }
      try {
        if (!url) await locate();
        else if (stale) await askOffset();
        back();
        if (offset < file.size) {
          await sendPart();
          continue;
        }
        const upload = await answer();
        storage.remove(key);
        return upload;
      } catch (error) {
        if (cancelled) continue;
        if (paused) continue; // the pause aborted the part in flight
        // What the steps throw is an ApiError (or another Error, which has no status).
        if (/** @type {Failure} */ (error).status === 409 && /** @type {Failure} */ (error).code === 'OFFSET_MISMATCH') {
          stale = true;
          continue;
        }
        if (/** @type {Failure} */ (error).status === 0 && /** @type {Failure} */ (error).code === 'NETWORK') {
          stale = true;
          if (failures === 0) onNetwork?.(true);
          napping = networkWait(RETRY_DELAYS_MS[Math.min(failures, RETRY_DELAYS_MS.length - 1)]);
          failures += 1;
          await napping.done;
          napping = null;
          continue;
        }
        storage.remove(key); // refused for good: a new attempt starts afresh
        throw error;
      }
    }
  }

  return {
    resumable: true,
    promise: run(),
    pause() {
      if (paused || cancelled) return;
      paused = true;
      stale = true;
      xhr?.abort();
      napping?.cut();
      onPause?.();
    },
    resume() {
      if (!paused || cancelled) return;
      paused = false;
      wake?.();
    },
    abort() {
      cancelled = true;
      xhr?.abort();
      terminate();
      napping?.cut();
      wake?.();
    },
  };
}
