// Large files go up in parts through the resumable-upload endpoint (tus 1.0; see
// docs/reference/resumable-uploads.md), so a dropped connection or a pause costs at most the
// part in flight. The upload's address is remembered in localStorage under the file's
// fingerprint (thread, name, size, modification time): after a page reload, adding the same file
// again continues from the bytes the server already kept instead of starting over.
import { ApiError, authHeaders, errorFrom } from './api.js';

/** Files larger than this go through the resumable endpoint; smaller ones in one request. */
export const RESUMABLE_THRESHOLD = 8 * 1024 * 1024;
/** The bytes of one PATCH: the most a dropped connection can cost. */
const PART_BYTES = 8 * 1024 * 1024;
const ENDPOINT = '/api/uploads/resumable';
const STORE_PREFIX = 'ferry.resumable:';
/** Pauses before each retry after a network error; after the last, the upload waits for the person. */
const RETRY_DELAYS_MS = [1000, 3000, 6000];

const aborted = () => new ApiError(0, 'ABORTED', 'Cancelled');
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** tus metadata: comma-separated `key base64(value)` pairs, values as UTF-8. */
function metadataHeader(pairs) {
  const base64 = (text) => {
    let binary = '';
    for (const byte of new TextEncoder().encode(text)) binary += String.fromCharCode(byte);
    return btoa(binary);
  };
  return Object.entries(pairs).map(([key, value]) => `${key} ${base64(value)}`).join(',');
}

async function tusFetch(url, method, headers = {}) {
  try {
    return await fetch(url, {
      method, cache: 'no-store', headers: authHeaders({ 'Tus-Resumable': '1.0.0', ...headers }),
    });
  } catch {
    throw new ApiError(0, 'NETWORK', 'The server could not be reached.');
  }
}

const storage = {
  get(key) {
    try {
      return localStorage.getItem(key);
    } catch {
      return null; // storage disabled: the upload still works, it just cannot outlive the page
    }
  },
  set(key, value) {
    try {
      localStorage.setItem(key, value);
    } catch {
      // as above
    }
  },
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
 * `onPause(reason)` says the upload stopped and waits for `resume()` (`'person'` for a pause the
 * person asked for, `'network'` when retries ran out); `onResumeFrom(offset)` says a reload's
 * leftover was found and the upload continues from `offset`.
 */
/**
 * @param {string} threadId
 * @param {File} file
 * @param {{ onProgress?: (sent: number, total: number) => void, onPause?: (reason: 'person' | 'network') => void, onResumeFrom?: (offset: number) => void }} [hooks]
 */
export function uploadResumably(threadId, file, { onProgress, onPause, onResumeFrom } = {}) {
  const key = `${STORE_PREFIX}${threadId}:${file.size}:${file.lastModified}:${file.name}`;
  let url = null;
  let offset = 0;
  let xhr = null;
  let paused = false;
  let cancelled = false;
  let wake = null;
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
    url = new URL(created.headers.get('Location'), window.location.href).pathname;
    storage.set(key, url);
    offset = 0;
    stale = false;
  }

  async function askOffset() {
    const head = await tusFetch(url, 'HEAD');
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
      xhr.open('PATCH', url);
      for (const [name, value] of Object.entries(authHeaders({
        'Tus-Resumable': '1.0.0',
        'Upload-Offset': String(offset),
        'Content-Type': 'application/offset+octet-stream',
      }))) xhr.setRequestHeader(name, value);
      xhr.responseType = 'text';
      xhr.upload.addEventListener('progress', (e) => onProgress?.(offset + e.loaded, file.size));
      xhr.addEventListener('load', () => {
        if (xhr.status === 204) {
          offset = Number(xhr.getResponseHeader('Upload-Offset'));
          resolve();
          return;
        }
        let envelope = null;
        try {
          envelope = JSON.parse(xhr.responseText)?.error;
        } catch {
          envelope = null;
        }
        reject(new ApiError(xhr.status, envelope?.code, envelope?.message || `${xhr.status} ${xhr.statusText}`));
      });
      xhr.addEventListener('error', () => reject(new ApiError(0, 'NETWORK', 'The connection dropped.')));
      xhr.addEventListener('abort', () => reject(aborted()));
      xhr.send(file.slice(offset, end));
    });
  }

  /** The finished upload's answer: what the plain upload route would have answered. */
  async function answer() {
    const response = await tusFetch(url, 'GET');
    if (!response.ok) throw await errorFrom(response);
    const upload = (await response.json())?.uploads?.[0];
    if (!upload) throw new ApiError(response.status, 'INTERNAL', 'The server answered without the upload.');
    return upload;
  }

  async function run() {
    let failures = 0;
    for (;;) {
      if (cancelled) {
        terminate(); // a cancel that came while the upload was being created
        throw aborted();
      }
      if (paused) {
        await new Promise((resolve) => { wake = resolve; });
        continue;
      }
      try {
        if (!url) await locate();
        else if (stale) await askOffset();
        if (offset < file.size) {
          await sendPart();
          failures = 0;
          continue;
        }
        const upload = await answer();
        storage.remove(key);
        return upload;
      } catch (error) {
        if (cancelled) continue;
        if (paused) continue; // the pause aborted the part in flight
        if (error.status === 409 && error.code === 'OFFSET_MISMATCH') {
          stale = true;
          continue;
        }
        if (error.status === 0 && error.code === 'NETWORK') {
          stale = true;
          if (failures < RETRY_DELAYS_MS.length) {
            await sleep(RETRY_DELAYS_MS[failures]);
            failures += 1;
            continue;
          }
          failures = 0;
          paused = true;
          onPause?.('network');
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
      onPause?.('person');
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
      wake?.();
    },
  };
}
