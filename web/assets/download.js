// Saving bytes under a file name: fetch with the token → Blob → a temporary a[download].
import { getBlob } from './api.js';

/**
 * Saves `blob` as a download named `filename`.
 * @param {Blob} blob
 * @param {string} filename
 */
export function saveBlob(blob, filename) {
  const url = URL.createObjectURL(blob);
  const a = document.createElement('a');
  a.href = url;
  a.download = filename || 'download';
  a.rel = 'noopener';
  a.hidden = true;
  document.body.append(a);
  a.click();
  a.remove();
  // Give the browser time to start the download before the bytes are let go.
  setTimeout(() => URL.revokeObjectURL(url), 60000);
}

/**
 * Downloads an API path with the token, saving it as `filename`. While it runs the button
 * shows "Downloading…"; a failure is shown next to it (and thrown).
 * @param {HTMLButtonElement} button
 * @param {string} path
 * @param {string} filename
 * @param {import('./api.js').RequestOptions['query']} [query]
 * @returns {Promise<void>}
 */
export async function downloadTo(button, path, filename, query) {
  const label = button.querySelector('.label');
  const before = label ? label.textContent : '';
  button.disabled = true;
  button.setAttribute('aria-busy', 'true');
  if (label) label.textContent = 'Downloading…';
  try {
    const blob = await getBlob(path, { query });
    saveBlob(blob, filename);
  } catch (e) {
    showInlineError(button, `Download failed: ${/** @type {import('./api.js').Failure} */ (e).message}`);
    throw e;
  } finally {
    button.disabled = false;
    button.removeAttribute('aria-busy');
    if (label) label.textContent = before;
  }
}

/**
 * Says `message` under what holds `anchor` (a card, the panel's header, …), in place of what it
 * said before.
 * @param {Element} anchor
 * @param {string} message
 */
export function showInlineError(anchor, message) {
  // An anchor in the page is in one of those, or at least has a parent.
  const host = /** @type {Element} */ (anchor.closest('.card, .panel-header, .file-send, .attachment') || anchor.parentElement);
  let note = host.querySelector(':scope > .inline-error');
  if (!note) {
    note = document.createElement('p');
    note.className = 'inline-error';
    note.setAttribute('role', 'alert');
    host.append(note);
  }
  note.textContent = message;
}
