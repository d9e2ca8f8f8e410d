// The uploads a reload (or a closed tab) left unfinished in a thread, listed above the composer:
// the page cannot read a file the person has not picked again, so the list says which files
// they were, how much of each the server kept, and "Pick the file again to continue" (picking
// it continues from the kept bytes: resumable.js). Dismiss forgets one and frees its bytes on
// the server.
import { h, announce } from './dom.js';
import { icon, fileIcon } from './icons.js';
import { formatSize } from './format.js';
import { unfinishedUploads, keptBytes, forgetUnfinished, isFileOf } from './resumable.js';

export class UnfinishedUploads {
  /**
   * @param {string} threadId
   * @param {{ pick: () => void }} hooks `pick` opens the composer's file chooser.
   */
  constructor(threadId, { pick }) {
    this.threadId = threadId;
    /** @type {Map<string, { unfinished: import('./resumable.js').Unfinished, el: HTMLLIElement }>} */
    this.rows = new Map(); // key → { unfinished, el }
    this.list = h('ul', { class: 'unfinished-list' });
    this.el = h('section', { class: 'unfinished', 'aria-labelledby': `unfinished-title-${threadId}` },
      h('p', { class: 'unfinished-title', id: `unfinished-title-${threadId}` },
        icon('alert', 'icon icon-sm'), h('span', { text: 'Unfinished uploads' })),
      this.list);
    for (const unfinished of unfinishedUploads(threadId)) this.addRow(unfinished, pick);
    this.refresh();
  }

  /**
   * @param {import('./resumable.js').Unfinished} unfinished
   * @param {() => void} pick
   */
  addRow(unfinished, pick) {
    const kept = h('span', { class: 'unfinished-kept', text: formatSize(unfinished.size) });
    const el = h('li', { class: 'unfinished-file', dataset: { name: unfinished.name } },
      fileIcon(unfinished.name, ''),
      h('div', { class: 'unfinished-main' },
        h('span', { class: 'unfinished-name', text: unfinished.name, title: unfinished.name }),
        kept,
        h('span', { class: 'unfinished-hint', text: 'Pick the file again to continue' })),
      h('button', {
        type: 'button', class: 'btn btn-small unfinished-pick', text: 'Pick file',
        'aria-label': `Pick ${unfinished.name} again to continue its upload`,
        onclick: pick,
      }),
      h('button', {
        type: 'button', class: 'btn btn-icon btn-small unfinished-dismiss', title: 'Dismiss',
        'aria-label': `Dismiss the unfinished upload of ${unfinished.name}`,
        onclick: () => {
          forgetUnfinished(unfinished);
          this.remove(unfinished.key);
          announce(`The unfinished upload of ${unfinished.name} was dismissed`);
        },
      }, icon('close')));
    this.rows.set(unfinished.key, { unfinished, el });
    this.list.append(el);
    // How far it got, as the server says; one the server no longer has is not listed.
    keptBytes(unfinished).then((bytes) => {
      if (bytes === null) this.remove(unfinished.key);
      else kept.textContent = `${formatSize(bytes)} of ${formatSize(unfinished.size)} kept`;
    }, () => {});
  }

  /**
   * A file was picked: the row of the upload it continues goes (the composer shows it now).
   * @param {File} file
   */
  picked(file) {
    for (const [key, { unfinished }] of this.rows) {
      if (isFileOf(unfinished, this.threadId, file)) this.remove(key);
    }
  }

  /** @param {string} key */
  remove(key) {
    this.rows.get(key)?.el.remove();
    this.rows.delete(key);
    this.refresh();
  }

  refresh() {
    this.el.hidden = this.rows.size === 0;
  }
}
