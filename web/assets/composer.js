// The composer: text, an attach button, drag-and-drop and paste, several files at once,
// each uploading on its own with a progress bar, a Cancel, its own error (a 413 says the limit
// in words) and a Retry. Files over RESUMABLE_THRESHOLD go up in parts (resumable.js) with
// Pause and Resume. An upload that loses the network says it waits for it and goes on by itself
// when it is back; the uploads a reload left unfinished are listed (unfinished.js). Sending posts
// the text with the ids of the finished uploads.
import { h, announce } from './dom.js';
import { icon, fileIcon } from './icons.js';
import { describeLimit, formatSize, tooLargeText } from './format.js';
import { onServerBack, route, sendJson, serverLimits, uploadFile } from './api.js';
import { RESUMABLE_THRESHOLD, uploadResumably } from './resumable.js';
import { UnfinishedUploads } from './unfinished.js';

/** Images up to this size get a thumbnail in their tile. */
const THUMB_MAX_BYTES = 20 * 1024 * 1024;

/** Screens on which the composer's hint leaves the keyboard out (the layout's own breakpoint). */
const SMALL_SCREEN = '(max-width: 760px)';

let composerCounter = 0;

/**
 * @typedef {object} ComposerHooks
 * @property {(event: ThreadEventOf<'message'>) => void} [onSent] The message was stored: its event.
 * @property {(upload: Upload) => void} [onUploaded] An attached file finished uploading.
 * @property {(upload: Upload) => void} [onDiscarded] An uploaded file was taken off the message.
 */

/**
 * What the composer holds of an upload while it runs: the plain one's `{ promise, abort }`, or
 * a resumable one's (`resumable: true`), which also pauses and resumes.
 * @typedef {{ resumable?: false, promise: Promise<Upload>, abort: () => void } | import('./resumable.js').ResumableUpload} UploadHandle
 */

/**
 * A file in the composer, from the moment it is added until it is sent or removed: its state,
 * its upload once done, and the parts of its row.
 * @typedef {object} Item
 * @property {File} file
 * @property {'uploading' | 'paused' | 'done' | 'error' | 'removed' | 'sent'} state
 * @property {Upload | null} upload The upload, once it is done.
 * @property {UploadHandle | null} handle The upload while it runs.
 * @property {string | null} [thumb] The blob: URL of an image's thumbnail.
 * @property {HTMLLIElement} el
 * @property {HTMLProgressElement} progress
 * @property {HTMLSpanElement} status
 * @property {HTMLButtonElement} remove
 * @property {HTMLButtonElement} pause
 * @property {HTMLButtonElement} retry
 * @property {number} [sent] The bytes sent so far.
 * @property {(() => void) | null} [stopWaiting] Stops waiting for the network to send it again.
 */

export class Composer {
  /**
   * @param {string} threadId
   * @param {ComposerHooks} [hooks]
   */
  constructor(threadId, { onSent, onUploaded, onDiscarded } = {}) {
    this.threadId = threadId;
    this.onSent = onSent;
    // Told when an upload is ready in the composer, and when one is removed unsent.
    this.onUploaded = onUploaded;
    this.onDiscarded = onDiscarded;
    /** @type {Item[]} */
    this.items = [];
    this.sending = false;
    const n = ++composerCounter;

    this.fileInput = h('input', {
      type: 'file', multiple: true, hidden: true, class: 'file-input', tabindex: '-1', 'aria-hidden': 'true',
      onchange: () => {
        this.addFiles(this.fileInput.files);
        this.fileInput.value = '';
      },
    });
    this.attach = h('button', {
      type: 'button', class: 'btn btn-icon attach', 'aria-label': 'Attach files', title: 'Attach files',
      onclick: () => this.fileInput.click(),
    }, icon('clip'));
    this.text = h('textarea', {
      id: `composer-text-${n}`, class: 'composer-text', rows: '1', name: 'text',
      placeholder: 'Message your agent…', 'aria-describedby': `composer-hint-${n}`,
      onkeydown: (e) => {
        if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
          e.preventDefault();
          this.send();
        }
      },
      oninput: () => this.refresh(),
      onpaste: (e) => {
        const files = e.clipboardData?.files;
        if (files && files.length) {
          e.preventDefault();
          this.addFiles(files);
        }
      },
    });
    this.sendButton = h('button', { type: 'submit', class: 'btn btn-primary send', 'aria-label': 'Send message', title: 'Send (Enter)' },
      icon('send'), h('span', { class: 'label send-label', text: 'Send' }));
    this.unfinished = new UnfinishedUploads(threadId, { pick: () => this.fileInput.click() });
    this.list = h('ul', { class: 'pending', 'aria-label': 'Files to send' });
    this.list.hidden = true;
    this.status = h('p', { class: 'composer-status', id: `composer-hint-${n}`, 'aria-live': 'polite' });
    // On a small screen there is no keyboard to speak of: the hint names the clip instead.
    this.smallScreen = window.matchMedia(SMALL_SCREEN);
    this.smallScreen.addEventListener('change', () => this.refresh());
    this.error = h('p', { class: 'composer-error', role: 'alert' });
    this.error.hidden = true;
    this.el = h('form', {
      class: 'composer', 'aria-label': 'Send a message',
      onsubmit: (e) => {
        e.preventDefault();
        this.send();
      },
    },
    this.unfinished.el,
    this.list,
    this.error,
    h('div', { class: 'composer-row' },
      this.attach,
      this.fileInput,
      h('label', { class: 'visually-hidden', for: `composer-text-${n}`, text: 'Message' }),
      this.text,
      this.sendButton),
    this.status);
    this.refresh();
    serverLimits().then((limits) => {
      const words = `Attach files (at most ${describeLimit(limits.uploadMaxBytes)} each)`;
      this.attach.title = words;
      this.attach.setAttribute('aria-label', words);
    }, () => {});
  }

  focus() {
    this.text.focus();
  }

  /**
   * The thread's connection is back: an error that only said the server could not be reached is
   * stale now (what was typed is still in the box, to send again).
   */
  connectionBack() {
    if (!this.offlineError) return;
    this.offlineError = false;
    this.error.hidden = true;
  }

  /**
   * Whether the upload with this id waits in the composer to be sent.
   * @param {string} uploadId
   * @returns {boolean}
   */
  holds(uploadId) {
    return this.items.some((i) => i.state === 'done' && i.upload?.id === uploadId);
  }

  destroy() {
    for (const item of this.items) {
      if (item.state === 'uploading' || item.state === 'paused') item.handle?.abort();
      item.stopWaiting?.();
    }
    this.items = [];
  }

  /**
   * Adds files to the message, each uploading at once.
   * @param {FileList | null | undefined} fileList
   */
  addFiles(fileList) {
    const files = Array.from(fileList || []);
    for (const file of files) this.addFile(file);
    if (files.length) announce(`${files.length} file${files.length === 1 ? '' : 's'} added; uploading`);
    this.refresh();
  }

  /** @param {File} file */
  addFile(file) {
    this.unfinished.picked(file);
    // Its row's parts are added below, before anything reads them.
    const item = /** @type {Item} */ ({ file, state: 'uploading', upload: null, handle: null });
    const progress = h('progress', { class: 'progress', max: '100', value: '0', 'aria-label': `Upload of ${file.name}` });
    const status = h('span', { class: 'pending-status', text: '0%' });
    const remove = h('button', {
      type: 'button', class: 'btn btn-icon btn-small pending-remove',
      'aria-label': `Cancel upload of ${file.name}`, title: 'Cancel',
      onclick: () => this.removeItem(item),
    }, icon('close'));
    // Pause/Resume, for the large files that go up in parts; Retry, for a failed upload.
    const pause = h('button', {
      type: 'button', class: 'btn btn-small pending-pause', hidden: true,
      // Shown only for a resumable upload, while it runs.
      onclick: () => (item.state === 'paused'
        ? /** @type {import('./resumable.js').ResumableUpload} */ (item.handle).resume()
        : /** @type {import('./resumable.js').ResumableUpload} */ (item.handle).pause()),
    });
    const retry = h('button', {
      type: 'button', class: 'btn btn-small pending-retry', hidden: true, text: 'Retry',
      'aria-label': `Retry upload of ${file.name}`,
      onclick: () => this.startUpload(item),
    });
    // An image shows itself (read from the person's disk: nothing is fetched).
    item.thumb = file.type.startsWith('image/') && file.size > 0 && file.size <= THUMB_MAX_BYTES
      ? URL.createObjectURL(file) : null;
    item.el = h('li', { class: 'pending-file state-uploading', dataset: { name: file.name } },
      item.thumb ? h('img', { class: 'pending-thumb', src: item.thumb, alt: '' }) : fileIcon(file.name, file.type),
      h('div', { class: 'pending-main' },
        h('div', { class: 'pending-line' },
          h('span', { class: 'pending-name', text: file.name, title: file.name }),
          h('span', { class: 'pending-size', text: formatSize(file.size) })),
        progress,
        status),
      pause,
      retry,
      remove);
    Object.assign(item, { progress, status, remove, pause, retry });
    this.items.push(item);
    this.list.append(item.el);
    this.list.scrollTop = 0;
    this.check(item.file).then((problem) => {
      if (item.state !== 'uploading') return; // removed meanwhile
      if (problem) this.refuse(item, problem, { retry: false });
      else this.startUpload(item);
    });
  }

  /**
   * What would make the server refuse a file, told before a byte is sent: an empty file, or one
   * over the upload limit. `null` when it may go (or the limits cannot be read: the server
   * checks anyway).
   * @param {File} file
   * @returns {Promise<string | null>}
   */
  async check(file) {
    if (file.size === 0) return 'Empty file (0 bytes) — nothing to send';
    const limits = await serverLimits().catch(() => null);
    if (limits?.uploadMaxBytes && file.size > limits.uploadMaxBytes) {
      return `Too large — the limit is ${describeLimit(limits.uploadMaxBytes)}`;
    }
    return null;
  }

  /**
   * Marks a file as refused, with why; `retry` offers to send it again.
   * @param {Item} item
   * @param {string} message
   * @param {{ retry: boolean }} options
   */
  refuse(item, message, { retry }) {
    this.setState(item, 'error');
    item.pause.hidden = true;
    item.retry.hidden = !retry;
    item.status.textContent = message;
    item.status.setAttribute('role', 'alert');
    item.remove.setAttribute('aria-label', `Dismiss ${item.file.name}`);
    item.remove.title = 'Dismiss';
    this.refresh();
  }

  /**
   * Starts (or, after a failure, starts again) the upload of one listed file.
   * @param {Item} item
   */
  startUpload(item) {
    const { file, progress, status, remove, pause, retry } = item;
    item.stopWaiting?.();
    /** @type {(loaded: number, total: number) => string} */
    const sent = (loaded, total) => `${formatSize(loaded)} of ${formatSize(total)}`;
    /** @type {(loaded: number, total: number) => number} */
    const percent = (loaded, total) => Math.min(total ? Math.floor((loaded / total) * 100) : 0, 99);
    /** @type {(loaded: number, total: number) => void} */
    const onProgress = (loaded, total) => {
      item.sent = loaded;
      progress.value = percent(loaded, total);
      status.textContent = `${percent(loaded, total)}% · ${sent(loaded, total)}`;
    };
    this.setState(item, 'uploading');
    status.removeAttribute('role');
    status.textContent = '0%';
    progress.value = 0;
    retry.hidden = true;
    remove.setAttribute('aria-label', `Cancel upload of ${file.name}`);
    remove.title = 'Cancel';
    const showPause = (/** @type {boolean} */ paused) => {
      pause.textContent = paused ? 'Resume' : 'Pause';
      pause.setAttribute('aria-label', `${paused ? 'Resume' : 'Pause'} upload of ${file.name}`);
    };
    if (file.size > RESUMABLE_THRESHOLD) {
      item.handle = uploadResumably(this.threadId, file, {
        onProgress: (loaded, total) => {
          if (item.state === 'uploading') onProgress(loaded, total);
        },
        onResumeFrom: (offset) => {
          status.textContent = `Continuing from ${sent(offset, file.size)}`;
          progress.value = percent(offset, file.size);
          announce(`${file.name}: continuing an earlier upload from ${formatSize(offset)}`);
        },
        onPause: () => {
          this.setState(item, 'paused');
          showPause(true);
          status.textContent = `Paused at ${percent(item.sent || 0, file.size)}% · ${sent(item.sent || 0, file.size)}`;
          announce(`Upload of ${file.name} paused`);
          this.refresh();
        },
        // The network went: the row says so (the upload goes on by itself when it is back).
        onNetwork: (waiting) => {
          if (item.state !== 'uploading') return;
          item.el.classList.toggle('waiting-network', waiting);
          status.textContent = waiting
            ? `Waiting for the network… at ${percent(item.sent || 0, file.size)}%, it goes on by itself`
            : 'Resuming…';
          announce(waiting ? `Upload of ${file.name} waiting for the network` : `Upload of ${file.name} resuming`);
        },
      });
      pause.hidden = false;
      showPause(false);
      const resume = item.handle.resume;
      item.handle.resume = () => {
        this.setState(item, 'uploading');
        showPause(false);
        status.textContent = 'Resuming…';
        resume();
        this.refresh();
      };
    } else {
      pause.hidden = true;
      item.handle = uploadFile(this.threadId, file, onProgress);
    }
    item.handle.promise.then((upload) => {
      item.upload = upload;
      this.setState(item, 'done');
      this.onUploaded?.(upload);
      pause.hidden = true;
      progress.value = 100;
      status.textContent = 'Ready to send';
      remove.setAttribute('aria-label', `Remove ${file.name}`);
      remove.title = 'Remove';
      announce(`${file.name} uploaded`);
    }, (/** @type {import('./api.js').ApiError} */ error) => {
      if (error.code === 'ABORTED') return;
      if (error.status === 0 && error.code === 'NETWORK') {
        this.waitForNetwork(item);
        return;
      }
      // A refusal (too large, not allowed) would only be refused again; anything else may pass.
      this.refuse(item, error.status === 413 ? tooLargeText(error.message) : error.message,
        { retry: ![403, 413, 415].includes(error.status) });
    }).finally(() => this.refresh());
  }

  /**
   * A file sent in one request lost the network: its row says so, and it is sent again by itself
   * once the browser is online or the server answers the page (Retry does it now).
   * @param {Item} item
   */
  waitForNetwork(item) {
    this.refuse(item, 'Waiting for the network… it is sent again by itself when the connection is back', { retry: true });
    item.status.removeAttribute('role');
    item.el.classList.add('waiting-network');
    const again = () => {
      item.stopWaiting?.();
      if (item.state === 'error') this.startUpload(item);
    };
    const offBack = onServerBack(again);
    window.addEventListener('online', again);
    item.stopWaiting = () => {
      item.stopWaiting = null;
      offBack();
      window.removeEventListener('online', again);
    };
  }

  /**
   * @param {Item} item
   * @param {Item['state']} state
   */
  setState(item, state) {
    item.state = state;
    item.el.className = `pending-file state-${state}`; // also ends a 'waiting-network'
  }

  /** @param {Item} item */
  removeItem(item) {
    item.stopWaiting?.();
    if (item.state === 'uploading' || item.state === 'paused') {
      item.handle?.abort();
      announce(`Upload of ${item.file.name} cancelled`);
    }
    // A file done uploading has its upload.
    if (item.state === 'done') this.onDiscarded?.(/** @type {Upload} */ (item.upload));
    item.state = 'removed';
    item.el.remove();
    if (item.thumb) URL.revokeObjectURL(item.thumb);
    this.items = this.items.filter((i) => i !== item);
    this.refresh();
    this.text.focus();
  }

  refresh() {
    const uploading = this.items.filter((i) => i.state === 'uploading' || i.state === 'paused').length;
    const ready = this.items.filter((i) => i.state === 'done').length;
    this.list.hidden = this.items.length === 0;
    const hasText = this.text.value.trim().length > 0;
    this.sendButton.disabled = this.sending || uploading > 0 || (!hasText && ready === 0);
    const paused = this.items.filter((i) => i.state === 'paused').length;
    if (paused > 0 && paused === uploading) {
      this.status.textContent = `${paused} upload${paused === 1 ? '' : 's'} paused: resume ${paused === 1 ? 'it' : 'them'}, or remove ${paused === 1 ? 'it' : 'them'}, to send.`;
    } else if (uploading > 0) {
      this.status.textContent = `Uploading ${uploading} file${uploading === 1 ? '' : 's'}… Send is available when ${uploading === 1 ? 'it is' : 'they are'} done.`;
    } else if (this.sending) {
      this.status.textContent = 'Sending…';
    } else {
      this.status.textContent = this.smallScreen.matches
        ? 'Attach files with the clip'
        : 'Enter to send · Shift+Enter for a new line · drop or paste files to attach';
    }
  }

  async send() {
    if (this.sendButton.disabled) return;
    const ready = this.items.filter((i) => i.state === 'done');
    const text = this.text.value;
    if (!text.trim() && ready.length === 0) return;
    this.sending = true;
    this.error.hidden = true;
    this.refresh();
    try {
      /** @type {ThreadEventOf<'message'>} */
      const event = await sendJson('POST', route('threads', this.threadId, 'messages'), {
        text,
        // Ready: done uploading, each has its upload.
        uploadIds: ready.map((i) => /** @type {Upload} */ (i.upload).id),
      });
      this.text.value = '';
      for (const item of ready) {
        item.el.remove();
        item.state = 'sent';
        if (item.thumb) URL.revokeObjectURL(item.thumb);
      }
      this.items = this.items.filter((i) => i.state !== 'sent');
      this.onSent?.(event);
      announce('Message sent');
    } catch (e) {
      this.error.textContent = `The message was not sent: ${/** @type {import('./api.js').Failure} */ (e).message}`;
      this.error.hidden = false;
      this.offlineError = /** @type {import('./api.js').Failure} */ (e).status === 0;
    } finally {
      this.sending = false;
      this.refresh();
      this.text.focus();
    }
  }
}
