// The composer: text, an attach button, drag-and-drop and paste, several files at once,
// each uploading on its own with a progress bar, a Cancel, and its own error (a 413 says the
// limit in words). Sending posts the text with the ids of the finished uploads.
import { h, announce } from './dom.js';
import { icon, fileIcon } from './icons.js';
import { formatSize, tooLargeText } from './format.js';
import { route, sendJson, uploadFile } from './api.js';

/** Screens on which the composer's hint leaves the keyboard out (the layout's own breakpoint). */
const SMALL_SCREEN = '(max-width: 760px)';

let composerCounter = 0;

export class Composer {
  constructor(threadId, { onSent } = {}) {
    this.threadId = threadId;
    this.onSent = onSent;
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
  }

  focus() {
    this.text.focus();
  }

  destroy() {
    for (const item of this.items) if (item.state === 'uploading') item.handle?.abort();
    this.items = [];
  }

  addFiles(fileList) {
    const files = Array.from(fileList || []);
    for (const file of files) this.addFile(file);
    if (files.length) announce(`${files.length} file${files.length === 1 ? '' : 's'} added; uploading`);
    this.refresh();
  }

  addFile(file) {
    const item = { file, state: 'uploading', upload: null, handle: null };
    const progress = h('progress', { class: 'progress', max: '100', value: '0', 'aria-label': `Upload of ${file.name}` });
    const status = h('span', { class: 'pending-status', text: '0%' });
    const remove = h('button', {
      type: 'button', class: 'btn btn-icon btn-small pending-remove',
      'aria-label': `Cancel upload of ${file.name}`, title: 'Cancel',
      onclick: () => this.removeItem(item),
    }, icon('close'));
    item.el = h('li', { class: 'pending-file state-uploading', dataset: { name: file.name } },
      fileIcon(file.name, file.type),
      h('div', { class: 'pending-main' },
        h('div', { class: 'pending-line' },
          h('span', { class: 'pending-name', text: file.name, title: file.name }),
          h('span', { class: 'pending-size', text: formatSize(file.size) })),
        progress,
        status),
      remove);
    item.progress = progress;
    item.status = status;
    item.remove = remove;
    this.items.push(item);
    this.list.append(item.el);
    this.list.scrollTop = 0;
    item.handle = uploadFile(this.threadId, file, (loaded, total) => {
      const pct = total ? Math.floor((loaded / total) * 100) : 0;
      progress.value = Math.min(pct, 99);
      status.textContent = `${Math.min(pct, 99)}% · ${formatSize(loaded)} of ${formatSize(total)}`;
    });
    item.handle.promise.then((upload) => {
      item.upload = upload;
      this.setState(item, 'done');
      progress.value = 100;
      status.textContent = 'Ready to send';
      remove.setAttribute('aria-label', `Remove ${file.name}`);
      remove.title = 'Remove';
      announce(`${file.name} uploaded`);
    }, (error) => {
      if (error.code === 'ABORTED') return;
      this.setState(item, 'error');
      const message = error.status === 413 ? tooLargeText(error.message) : error.message;
      status.textContent = message;
      status.setAttribute('role', 'alert');
      remove.setAttribute('aria-label', `Dismiss ${file.name}`);
      remove.title = 'Dismiss';
    }).finally(() => this.refresh());
  }

  setState(item, state) {
    item.state = state;
    item.el.className = `pending-file state-${state}`;
  }

  removeItem(item) {
    if (item.state === 'uploading') {
      item.handle?.abort();
      announce(`Upload of ${item.file.name} cancelled`);
    }
    item.state = 'removed';
    item.el.remove();
    this.items = this.items.filter((i) => i !== item);
    this.refresh();
    this.text.focus();
  }

  refresh() {
    const uploading = this.items.filter((i) => i.state === 'uploading').length;
    const ready = this.items.filter((i) => i.state === 'done').length;
    this.list.hidden = this.items.length === 0;
    const hasText = this.text.value.trim().length > 0;
    this.sendButton.disabled = this.sending || uploading > 0 || (!hasText && ready === 0);
    if (uploading > 0) {
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
      const event = await sendJson('POST', route('threads', this.threadId, 'messages'), {
        text,
        uploadIds: ready.map((i) => i.upload.id),
      });
      this.text.value = '';
      for (const item of ready) {
        item.el.remove();
        item.state = 'sent';
      }
      this.items = this.items.filter((i) => i.state !== 'sent');
      this.onSent?.(event);
      announce('Message sent');
    } catch (e) {
      this.error.textContent = `The message was not sent: ${e.message}`;
      this.error.hidden = false;
    } finally {
      this.sending = false;
      this.refresh();
      this.text.focus();
    }
  }
}
