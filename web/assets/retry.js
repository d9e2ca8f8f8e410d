// A load that failed (a thread, a list, a preview) is never left dead: it says what failed, offers
// Retry, and tries again by itself, after 1, 2, 4, 8, 16 and then every 30 s while the error is
// one that time can mend (the server out of reach, or answering 5xx, 408 or 429). It also tries
// at once when the server is heard from again (any answer to any request of the page, or the
// thread's stream coming back: api.js `onServerBack`) or the browser says it is online again.
// When an attempt succeeds the view comes back in place, without a reload.
import { h, replace } from './dom.js';
import { icon } from './icons.js';
import { onServerBack } from './api.js';

/** @typedef {import('./api.js').Failure} Failure */

/** Seconds before each automatic attempt; the last one repeats. */
const DELAYS = [1, 2, 4, 8, 16, 30];

/**
 * Whether waiting can mend the error: a network failure or a server that is not well yet.
 * @param {unknown} error What was thrown: an ApiError has a status.
 * @returns {boolean}
 */
export function transient(error) {
  const status = Number(/** @type {{ status?: unknown } | null | undefined} */ (error)?.status);
  if (!Number.isFinite(status)) return false;
  return status === 0 || status === 408 || status === 425 || status === 429 || status >= 500;
}

/**
 * @typedef {object} Attempt
 * @property {() => void} retry Tries again now (the Retry button).
 * @property {number | null} at When the next automatic attempt is (ms since the epoch), or
 *   null when none is planned (an error that time does not mend).
 */

/**
 * Runs `load` until it succeeds. After each failure `onError(error, attempt)` shows it; answering
 * `false` stops the trying (the error is final: a 404, a page that went away). Answers
 * `{ stop, retry }`; `stop` is for when the view goes away.
 * @param {() => Promise<unknown>} load
 * @param {{ onError: (error: Failure, attempt: Attempt) => (boolean | void) }} options
 * @returns {{ stop: () => void, retry: () => Promise<void> }}
 */
export function keepTrying(load, { onError }) {
  let failures = 0;
  /** @type {number | null} */
  let timer = null;
  /** @type {number | null} */
  let nextAt = null; // when the timer is due
  let running = false;
  let stopped = false;
  let waiting = false; // a failure is shown and a new attempt may start
  const listen = () => {
    if (waiting) run();
  };
  const offBack = onServerBack(listen);
  window.addEventListener('online', listen);
  const stop = () => {
    stopped = true;
    waiting = false;
    clearTimeout(timer);
    offBack();
    window.removeEventListener('online', listen);
  };
  const due = () => {
    timer = null;
    nextAt = null;
    run();
  };
  // An attempt made early (Retry, the server heard from, back online) that fails leaves the
  // planned one where it was: only the planned attempts lengthen the wait, so a page that often
  // hears from the server does not push its next attempt away.
  async function run() {
    if (stopped || running) return;
    running = true;
    waiting = false;
    try {
      await load();
      if (!stopped) stop();
    } catch (error) {
      if (stopped) return;
      // What a load throws is an Error (an ApiError from the API), or at worst nothing.
      if (/** @type {Failure | null | undefined} */ (error)?.name === 'AbortError') return;
      const again = transient(error);
      if (again && timer === null) {
        const delay = DELAYS[Math.min(failures, DELAYS.length - 1)] * 1000;
        failures += 1;
        nextAt = Date.now() + delay;
        timer = setTimeout(due, delay);
      }
      if (onError(/** @type {Failure} */ (error), { retry: run, at: again ? nextAt : null }) === false) {
        stop();
        return;
      }
      waiting = true;
    } finally {
      running = false;
    }
  }
  // On the next turn, so the handle is in the caller's hands before any onError.
  Promise.resolve().then(run);
  return { stop, retry: run };
}

/**
 * The parts of a failure's box, kept on it to update it in place.
 * @typedef {{ text: HTMLParagraphElement, when: HTMLParagraphElement, button: HTMLButtonElement, timer: number | null }} FailureParts
 */

/** @typedef {HTMLElement & { failure?: FailureParts }} FailureBox */

/**
 * Shows a failure in `host`: what could not be loaded and why, when the next automatic attempt
 * is (counted down), and Retry. Shown again on a later failure, the same box is updated in place,
 * so a screen reader hears it once and the focus stays on Retry.
 * @param {HTMLElement} host
 * @param {{ message: string, error: Failure, attempt: Attempt, tag?: 'div' | 'li', compact?: boolean }} failure
 * @returns {FailureBox}
 */
export function showFailure(host, { message, error, attempt, tag = 'div', compact = false }) {
  let box = /** @type {FailureBox | null} */ (host.querySelector(':scope > .load-failure'));
  if (!box) {
    const text = h('p', { class: 'failure-text', role: 'alert' });
    const when = h('p', { class: 'failure-when note', 'aria-live': 'off' });
    const button = h('button', { type: 'button', class: 'btn btn-small failure-retry' },
      icon('refresh'), h('span', { class: 'label', text: 'Retry' }));
    box = h(tag, { class: `load-failure${compact ? ' load-failure-compact' : ''}` },
      compact ? null : icon('alert', 'icon icon-xl failure-icon'), text, when, button);
    box.failure = { text, when, button, timer: null };
    replace(host, box);
  }
  // Every box this makes has its parts.
  const parts = /** @type {FailureParts} */ (box.failure);
  const said = `${message}: ${error?.message || error}`;
  if (parts.text.textContent !== said) parts.text.textContent = said;
  // aria-disabled rather than disabled while an attempt runs: a disabled button would drop the
  // keyboard's focus.
  parts.button.removeAttribute('aria-disabled');
  /** @type {HTMLElement} */ (parts.button.querySelector('.label')).textContent = 'Retry';
  parts.button.onclick = () => {
    if (parts.button.getAttribute('aria-disabled') === 'true') return;
    parts.button.setAttribute('aria-disabled', 'true');
    /** @type {HTMLElement} */ (parts.button.querySelector('.label')).textContent = 'Retrying…';
    parts.when.textContent = '';
    attempt.retry();
  };
  clearInterval(parts.timer);
  const tick = () => {
    if (!box.isConnected) {
      clearInterval(parts.timer);
      return;
    }
    if (attempt.at === null) {
      parts.when.textContent = '';
      return;
    }
    const seconds = Math.ceil((attempt.at - Date.now()) / 1000);
    parts.when.textContent = seconds > 0 ? `Trying again by itself in ${seconds} s.` : 'Trying again…';
  };
  tick();
  if (attempt.at !== null) parts.timer = setInterval(tick, 1000);
  return box;
}

/**
 * Runs `show`, which replaces what `host` holds (a failure with its Retry) by what loaded. When
 * the focus was in `host`, on Retry, it would be lost with it: it goes to `next()` instead.
 * @param {HTMLElement} host
 * @param {() => void} show
 * @param {() => (HTMLElement | null | undefined)} next
 */
export function showKeepingFocus(host, show, next) {
  const had = host.contains(document.activeElement);
  show();
  if (had && !host.contains(document.activeElement)) next()?.focus();
}
