// One thread: its events as a live log (replayed from the start on every load, then
// streamed; deduplicated by id and kept in id order), the composer, and drag-and-drop.
//
// Why one file: one thread's view keeps one state: the log's order and grouping, an upload's own
// entry giving way to a message's chip, a publish's loading card replaced in place and older
// revisions' cards marked all read and write the same maps, and the header's actions (rename,
// delete, connect an agent) act on the thread it holds; cards and the composer are apart.
import { h, replace, announce, developerDetails } from './dom.js';
import { icon } from './icons.js';
import { formatWhen, formatDateTime, titleFromMessage } from './format.js';
import { route, getJson, sendJson } from './api.js';
import { downloadTo } from './download.js';
import { decorateCode, renderMarkdown } from './markdown.js';
import { keepTrying } from './retry.js';
import { ThreadEvents } from './sse.js';
import { Composer } from './composer.js';
import { confirmDialog } from './confirm.js';
import { menuButton } from './menu.js';
import { publishedCard, publishFailureText, attachmentView, fileSendView, uploadChips, commandView } from './cards.js';

/** Events of one sender this close together share one header. */
const GROUP_MS = 5 * 60 * 1000;

const STATUS_TEXT = {
  connecting: 'Connecting…',
  live: 'Live',
  reconnecting: 'Reconnecting…',
  stopped: 'Offline',
};

/** The hidden notes kept out of the chat: `<UserUploaded… hidden="true">…</…>`. */
const HIDDEN_NOTE = /<(UserUploaded(?:Image|Document|Attachment))\b[^>]*hidden="true"[^>]*>[\s\S]*?<\/\1>/g;

/**
 * What the page gives a thread's view: the preview panel, and what to do when the thread is not
 * found (its stream refused with 404), renamed, or deleted here.
 * @typedef {object} ThreadViewOptions
 * @property {import('./preview.js').PreviewPanel} preview
 * @property {(error: import('./api.js').ApiError) => void} [onNotFound]
 * @property {(thread: Thread) => void} [onRenamed]
 * @property {(thread: Thread) => void} [onDeleted]
 */

export class ThreadView {
  /**
   * @param {Thread} thread
   * @param {ThreadViewOptions} options
   */
  constructor(thread, { preview, onNotFound, onRenamed, onDeleted }) {
    this.thread = thread;
    this.preview = preview;
    this.onNotFound = onNotFound;
    this.onRenamed = onRenamed;
    this.onDeleted = onDeleted;
    /** @type {Map<number, HTMLLIElement | null>} */
    this.seen = new Map();
    /** @type {Map<string, PublishedFile>} */
    this.published = new Map(); // published file id → latest revision seen
    /** @type {Map<string, HTMLLIElement>} */
    this.publishing = new Map(); // publishId → the loading card of a publish still running
    /** @type {Map<string, { revision: number, card: HTMLElement }[]>} */
    this.cardsByFile = new Map(); // published file id → its ready cards, to mark superseded ones
    /** @type {ThreadEvents | null} */
    this.stream = null;

    this.statusEl = h('span', { class: 'conn conn-connecting', role: 'status', text: STATUS_TEXT.connecting });
    this.titleEl = h('h1', { class: 'thread-title', id: 'thread-title', tabindex: '-1', text: thread.title || 'Untitled thread' });
    this.log = h('ol', { class: 'log' });
    this.empty = h('div', { class: 'empty-thread' },
      icon('chat', 'icon icon-xl'),
      h('p', { class: 'empty-title', text: 'No messages yet' }),
      h('p', { text: 'Write to your agent, or attach files with the paper clip or by dropping them here. What the agent sends back — messages, files, previews — appears in this thread as it happens.' }));
    // Shown when something arrives while the reader is scrolled up, so it is not missed; it
    // sits at the end of the log and sticks to the bottom of the visible part.
    this.newHint = h('button', {
      type: 'button', class: 'btn btn-small new-hint', hidden: true,
      onclick: () => this.toBottom(),
    }, icon('arrow-down'), h('span', { class: 'label', text: 'New messages' }));
    // Until the replay reaches the thread's newest event (`lastEventId` when it was read), the
    // log shows grey placeholder messages: a thread still loading never says "No messages yet".
    this.empty.hidden = true;
    this.caughtUp = false;
    this.skeleton = h('div', { class: 'log-skeleton', role: 'status', 'aria-label': 'Loading messages' },
      ...['from-agent', 'from-user', 'from-agent'].map((side) => h('div', { class: `bone ${side}` })));
    // The live region holds the list rather than being it: a list with the role "log" would no
    // longer be a list, and its entries list items of none.
    this.scroller = h('div', { class: 'log-scroller', tabindex: '-1' }, this.skeleton, this.empty,
      h('div', { class: 'log-region', role: 'log', 'aria-live': 'polite', 'aria-relevant': 'additions', 'aria-labelledby': 'thread-title' }, this.log),
      this.newHint);
    /** @type {Map<string, HTMLLIElement>} */
    this.uploadNodes = new Map(); // upload id → its own entry, until a message sends it
    /** @type {Set<string>} */
    this.sentUploads = new Set(); // ids of uploads a message has sent
    this.composer = new Composer(thread.id, {
      onSent: (event) => {
        this.add(event);
        this.titleFromFirstMessage(event);
      },
      onUploaded: (upload) => this.showUpload(upload.id, false),
      onDiscarded: (upload) => this.showUpload(upload.id, true),
    });
    this.menu = menuButton({
      label: 'Thread actions',
      className: 'thread-menu',
      items: [
        { label: 'Connect agent', iconName: 'plug', className: 'menu-connect-agent', run: (opener) => connectAgentDialog(thread, opener) },
        { label: 'Rename', iconName: 'pencil', className: 'menu-rename', run: () => this.startRename() },
        { label: 'Download outputs (zip)', iconName: 'download', className: 'menu-outputs-zip', run: (opener) => this.downloadOutputs(opener) },
        { label: 'Delete thread', iconName: 'trash', className: 'menu-delete', danger: true, run: (opener) => this.deleteThread(opener) },
      ],
    });
    this.dropZone = h('div', { class: 'drop-overlay', 'aria-hidden': 'true' },
      h('div', { class: 'drop-box' }, icon('clip', 'icon icon-xl'), h('p', { text: 'Drop files to attach them' })));
    this.el = h('section', { class: 'thread', 'aria-labelledby': 'thread-title', dataset: { threadId: thread.id } },
      h('header', { class: 'thread-header' },
        this.heading = h('div', { class: 'thread-heading' }, this.titleEl,
          h('p', { class: 'thread-sub', text: `Started ${formatDateTime(thread.createdAt)}` })),
        // The message box comes after the whole log; this gets a keyboard there at once.
        h('a', {
          href: '#message', class: 'skip-to-composer',
          onclick: (e) => { e.preventDefault(); this.composer.focus(); },
        }, 'Write a message'),
        // On a wide screen each action has its own button; on a narrow one (app.css) they fold
        // into one menu button, so the title gets the room.
        h('button', {
          type: 'button', class: 'btn btn-small btn-icon rename-thread wide-action', 'aria-label': 'Rename thread', title: 'Rename',
          onclick: () => this.startRename(),
        }, icon('pencil')),
        h('button', {
          type: 'button', class: 'btn btn-small btn-icon delete-thread wide-action', 'aria-label': 'Delete thread', title: 'Delete',
          'aria-haspopup': 'dialog',
          onclick: (e) => this.deleteThread(e.currentTarget),
        }, icon('trash')),
        this.statusEl,
        // Everything the agent left in /sandbox/outputs, as one zip the server streams.
        h('button', {
          type: 'button', class: 'btn btn-small btn-icon outputs-zip wide-action', 'aria-label': 'Download outputs as a zip',
          title: 'Download the agent\'s outputs folder as a zip',
          onclick: (e) => this.downloadOutputs(e.currentTarget),
        }, icon('download')),
        h('button', {
          type: 'button', class: 'btn btn-small connect-agent wide-action', 'aria-haspopup': 'dialog', 'aria-label': 'Connect agent',
          onclick: (e) => connectAgentDialog(thread, e.currentTarget),
        }, icon('plug'), h('span', { class: 'label', text: 'Connect agent' })),
        this.menu.el),
      this.scroller,
      this.composer.el,
      this.dropZone);
    this.setUpDrop();
    // Stay at the bottom while it is where the reader is, also when images arrive later.
    this.stick = true;
    this.scroller.addEventListener('scroll', () => {
      this.stick = this.nearBottom();
      if (this.stick) this.newHint.hidden = true;
    }, { passive: true });
    this.log.addEventListener('load', () => {
      if (this.stick) this.scroller.scrollTop = this.scroller.scrollHeight;
    }, true);
  }

  /** @param {HTMLElement} opener */
  deleteThread(opener) {
    deleteThreadDialog(this.thread, opener, () => this.onDeleted?.(this.thread));
  }

  /**
   * Downloads what the agent left in /sandbox/outputs, as one zip.
   * @param {HTMLButtonElement} button
   * @returns {Promise<void>}
   */
  downloadOutputs(button) {
    return downloadTo(button, route('threads', this.thread.id, 'sandbox'), 'outputs.zip', { dir: '/sandbox/outputs', format: 'zip' })
      .then(() => announce('outputs.zip downloaded'), () => {});
  }

  /**
   * An untitled thread takes its title from the first message sent in it (format.js
   * `titleFromMessage`; a message of files only, from the first file's name), as chat apps
   * name a conversation. Only once: a thread its person made untitled later stays so.
   * @param {ThreadEvent} event
   */
  async titleFromFirstMessage(event) {
    if (this.thread.title || this.titledOnce) return;
    this.titledOnce = true;
    const files = event.type === 'message' ? event.uploads || [] : [];
    const title = titleFromMessage(event.content || '') || files[0]?.fileName || '';
    if (!title) return;
    try {
      this.showTitle(await sendJson('PATCH', route('threads', this.thread.id), { title }));
    } catch {
      // The title is a convenience: the thread works without one, and Rename is there.
    }
  }

  /**
   * Shows a title set here or in another tab (the live thread list); a rename in progress
   * here is left alone.
   * @param {Thread} thread
   */
  renamedElsewhere(thread) {
    if (thread.title === this.thread.title || this.heading.querySelector('.rename-form')) return;
    this.showTitle(thread);
  }

  /** @param {Thread} renamed */
  showTitle(renamed) {
    this.thread.title = renamed.title;
    this.titledOnce = true;
    this.titleEl.textContent = renamed.title || 'Untitled thread';
    this.onRenamed?.(renamed);
  }

  /** Swaps the title for a field; Enter or Save renames (PATCH), Escape or Cancel goes back. */
  startRename() {
    if (this.heading.querySelector('.rename-form')) return;
    const field = h('input', {
      class: 'input rename-input', name: 'title', maxlength: '500', autocomplete: 'off',
      'aria-label': 'Thread title', value: this.thread.title || '', placeholder: 'Untitled thread',
    });
    const error = h('p', { class: 'form-error', role: 'alert', hidden: true });
    // While the title is a field, a narrow header gives it the whole row (app.css).
    const header = this.heading.closest('.thread-header');
    header?.classList.add('renaming');
    const done = () => {
      header?.classList.remove('renaming');
      form.replaceWith(this.titleEl);
      this.titleEl.focus();
    };
    const form = h('form', {
      class: 'rename-form', 'aria-label': 'Rename thread',
      onsubmit: async (e) => {
        e.preventDefault();
        // The form's Save, made below.
        const save = /** @type {HTMLButtonElement} */ (form.querySelector('button[type=submit]'));
        save.disabled = true;
        try {
          const title = field.value.trim();
          /** @type {Thread} */
          const renamed = await sendJson('PATCH', route('threads', this.thread.id), { title: title || null });
          this.showTitle(renamed);
          announce(`Thread renamed to ${renamed.title || 'Untitled thread'}`);
          done();
        } catch (err) {
          error.textContent = `The thread was not renamed: ${/** @type {import('./api.js').Failure} */ (err).message}`;
          error.hidden = false;
          save.disabled = false;
        }
      },
      onkeydown: (e) => {
        if (e.key === 'Escape') {
          e.preventDefault();
          done();
        }
      },
    }, field,
    h('button', { type: 'submit', class: 'btn btn-small btn-primary', text: 'Save' }),
    h('button', { type: 'button', class: 'btn btn-small', text: 'Cancel', onclick: done }),
    error);
    this.titleEl.replaceWith(form);
    field.focus();
    field.select();
  }

  start() {
    this.stream = new ThreadEvents(this.thread.id, {
      onEvent: (event) => this.add(event),
      onStatus: (status) => {
        this.statusEl.textContent = STATUS_TEXT[status] || status;
        this.statusEl.className = `conn conn-${status}`;
        this.el.dataset.connection = status;
        if (status === 'live' && !(this.thread.lastEventId > 0)) this.markCaughtUp();
        if (status === 'live') this.composer.connectionBack();
      },
      onFatal: (error) => {
        if (error.status === 404) this.onNotFound?.(error);
      },
    }).start();
    // Tests and the console can reach the stream to simulate a dropped connection.
    window.ferryDebug = { ...(window.ferryDebug || {}), stream: this.stream };
  }

  destroy() {
    this.stream?.stop();
    this.composer.destroy();
  }

  setUpDrop() {
    let depth = 0;
    const hasFiles = (/** @type {DragEvent} */ e) => Array.from(e.dataTransfer?.types || []).includes('Files');
    // A drag that has files has its dataTransfer: the casts below say so.
    this.el.addEventListener('dragenter', (e) => {
      if (!hasFiles(e)) return;
      e.preventDefault();
      depth += 1;
      this.el.classList.add('dragging');
    });
    this.el.addEventListener('dragover', (e) => {
      if (!hasFiles(e)) return;
      e.preventDefault();
      /** @type {DataTransfer} */ (e.dataTransfer).dropEffect = 'copy';
    });
    this.el.addEventListener('dragleave', () => {
      depth = Math.max(0, depth - 1);
      if (depth === 0) this.el.classList.remove('dragging');
    });
    this.el.addEventListener('drop', (e) => {
      if (!hasFiles(e)) return;
      e.preventDefault();
      depth = 0;
      this.el.classList.remove('dragging');
      this.composer.addFiles(/** @type {DataTransfer} */ (e.dataTransfer).files);
    });
  }

  /** The replay has shown everything the thread held when it was opened. */
  markCaughtUp() {
    if (this.caughtUp) return;
    this.caughtUp = true;
    this.skeleton.remove();
    this.empty.hidden = this.log.childElementCount > 0;
  }

  nearBottom() {
    const s = this.scroller;
    return s.scrollHeight - s.scrollTop - s.clientHeight < 120;
  }

  /**
   * Shows an event once, in id order.
   * @param {ThreadEvent} event
   */
  add(event) {
    if (!event || typeof event !== 'object') return;
    const id = Number(event.id);
    if (!Number.isFinite(id) || this.seen.has(id)) return;
    const node = this.render(event);
    this.seen.set(id, node);
    if (id >= (this.thread.lastEventId || 0)) this.markCaughtUp();
    if (!node) return;
    // The end of a publish turns its loading card into the file or the error, in place.
    const publishId = 'publishId' in event ? event.publishId : null;
    const pending = publishId ? this.publishing.get(publishId) : null;
    if (pending && event.type !== 'file_publishing') {
      // A pending card was found by its publishId.
      this.publishing.delete(/** @type {string} */ (publishId));
      node.dataset.eventId = pending.dataset.eventId;
      pending.replaceWith(node);
      this.group(node);
      return;
    }
    if (event.type === 'file_publishing' && publishId) this.publishing.set(publishId, node);
    node.dataset.eventId = String(id);
    const stick = this.stick || this.nearBottom();
    /** @type {HTMLElement | null} */
    let before = null;
    // The log holds only its entries (<li>), as do the casts below.
    for (let child = /** @type {HTMLElement | null} */ (this.log.lastElementChild); child; child = /** @type {HTMLElement | null} */ (child.previousElementSibling)) {
      if (Number(child.dataset.eventId) > id) before = child;
      else break;
    }
    this.log.insertBefore(node, before);
    this.group(node);
    const next = this.nextShown(node);
    if (next) this.group(next);
    this.empty.hidden = true;
    if (stick || event.role === 'user') {
      this.toBottom();
    } else {
      this.newHint.hidden = false;
    }
  }

  /**
   * An event from the same sender as the one before it, within GROUP_MS, continues it: its
   * name, avatar and time are left out (`.continued`), as chat apps show a run of messages.
   * @param {HTMLElement} node An entry of the log, which holds only its entries (<li>).
   */
  group(node) {
    let prev = /** @type {HTMLElement | null} */ (node.previousElementSibling);
    while (prev && prev.hidden) prev = /** @type {HTMLElement | null} */ (prev.previousElementSibling);
    // Boolean(prev) first: the casts of prev below say so.
    const continues = Boolean(prev) && /** @type {HTMLElement} */ (prev).dataset.sender === node.dataset.sender
      && Number(node.dataset.at) - Number(/** @type {HTMLElement} */ (prev).dataset.at) < GROUP_MS;
    node.classList.toggle('continued', continues);
  }

  toBottom() {
    this.scroller.scrollTop = this.scroller.scrollHeight;
    this.stick = true;
    this.newHint.hidden = true;
  }

  /**
   * The entry of an event the log shows, or null (sandbox file changes are for agents, and a
   * type this page does not know is left out rather than shown raw).
   * @param {ThreadEvent} event
   * @returns {HTMLLIElement | null}
   */
  render(event) {
    switch (event.type) {
      case 'message': return this.renderMessage(event);
      case 'file_send': return this.renderFileSend(event);
      case 'file_published': return this.renderPublished(event);
      case 'file_publishing': return this.renderPublishing(event);
      case 'file_publish_failed': return this.renderPublishFailed(event);
      case 'upload': return this.renderUpload(event);
      case 'command_executed': return this.renderCommand(event);
      case 'file_written':
      case 'file_deleted':
      case 'file_moved':
      default: return null;
    }
  }

  /** @param {ThreadEvent} event */
  who(event) {
    return event.role === 'user' ? 'You' : (event.agentId || 'Agent');
  }

  /**
   * @param {ThreadEvent} event
   * @param {string} className
   * @param {...(Node | null)} children
   * @returns {HTMLLIElement}
   */
  frame(event, className, ...children) {
    const role = event.role === 'user' ? 'user' : 'agent';
    return h('li', {
      class: `event ${className} from-${role}`,
      dataset: { sender: role === 'user' ? 'user' : `agent:${event.agentId || ''}`, at: String(Date.parse(event.timestamp) || 0) },
    },
      h('div', { class: 'event-meta' },
        h('span', { class: 'avatar', 'aria-hidden': 'true' }, icon(role === 'user' ? 'person' : 'agent')),
        h('span', { class: 'event-who', text: this.who(event) }),
        h('time', { class: 'event-time', datetime: event.timestamp || '', text: formatWhen(event.timestamp) })),
      ...children);
  }

  /**
   * An upload is shown on its own until a message sends it (then as that message's chip): so an
   * upload made through the API or S3, with no message, is seen too. One still waiting in this
   * page's composer is hidden, since its tile is there.
   * @param {ThreadEventOf<'upload'>} event
   */
  renderUpload(event) {
    const upload = event.upload;
    if (!upload?.id || this.sentUploads.has(upload.id)) return null;
    // Said in words: a file that was attached and never sent (the page reloaded, the phone's
    // tab was closed) must not look like one a message sent.
    const node = this.frame(event, 'event-upload event-unsent',
      uploadChips(this.thread.id, [upload], {
        onOpen: (u, opener) => this.preview.openUpload(this.thread.id, u, opener),
      }),
      h('p', { class: 'event-caption unsent-note' }, icon('clock', 'icon icon-sm'), h('span', { text: 'Uploaded, not sent in a message' })));
    node.hidden = this.composer.holds(upload.id);
    this.uploadNodes.set(upload.id, node);
    return node;
  }

  /**
   * Shows or hides an upload's own entry (the composer took it, or let it go).
   * @param {string} uploadId
   * @param {boolean} shown
   */
  showUpload(uploadId, shown) {
    const node = this.uploadNodes.get(uploadId);
    if (!node || node.hidden === !shown) return;
    node.hidden = !shown;
    const next = this.nextShown(node);
    if (next) this.group(next);
    if (shown) this.group(node);
  }

  /**
   * The next entry of the log that is shown, if any.
   * @param {HTMLElement} node An entry of the log, which holds only its entries (<li>).
   * @returns {HTMLElement | null}
   */
  nextShown(node) {
    let next = /** @type {HTMLElement | null} */ (node.nextElementSibling);
    while (next && next.hidden) next = /** @type {HTMLElement | null} */ (next.nextElementSibling);
    return next;
  }

  /** @param {ThreadEventOf<'message'>} event */
  renderMessage(event) {
    const text = typeof event.content === 'string' ? event.content.replace(HIDDEN_NOTE, '').trim() : '';
    const uploads = Array.isArray(event.uploads) ? event.uploads : [];
    // The uploads it sends are shown on it from now on, not on their own.
    for (const upload of uploads) {
      this.sentUploads.add(upload.id);
      const own = this.uploadNodes.get(upload.id);
      if (own) {
        const next = this.nextShown(own);
        own.remove();
        this.uploadNodes.delete(upload.id);
        if (next) this.group(next);
      }
    }
    const files = Array.isArray(event.files) ? event.files : [];
    if (!text && !uploads.length && !files.length) return null;
    const bubble = text ? h('div', { class: 'bubble' }, text) : null;
    // The agent writes Markdown: shown as plain text at once, then as rendered HTML. What a
    // person typed is shown as typed.
    if (bubble && event.role !== 'user') this.showMarkdown(bubble, text);
    return this.frame(event, 'event-message',
      bubble,
      uploads.length ? uploadChips(this.thread.id, uploads, {
        onOpen: (upload, opener) => this.preview.openUpload(this.thread.id, upload, opener),
      }) : null,
      files.length ? h('div', { class: 'attachments' }, files.map((f) => attachmentView(this.thread.id, f, {
        // An attachment is its own copy; one that says which published file it came from
        // (publishedId) opens that file's preview like a card.
        findPublished: (a) => (a.publishedId ? this.published.get(a.publishedId) || null : null),
        onOpen: (file, opener) => this.preview.open(this.thread.id, file, opener),
      }))) : null);
  }

  /**
   * @param {HTMLDivElement} bubble
   * @param {string} text
   */
  showMarkdown(bubble, text) {
    // Until it is rendered the plain text stays, still readable; a rendering that failed is
    // asked for again by itself (retry.js: the texts asked for together go in one request).
    keepTrying(async () => {
      const html = await renderMarkdown(text);
      const stick = this.stick;
      // Sanitized by the server (see markdown.js); the page's CSP would stop any script anyway.
      bubble.innerHTML = html;
      bubble.classList.add('markdown');
      decorateCode(bubble);
      if (stick) this.scroller.scrollTop = this.scroller.scrollHeight;
    }, {
      // A thread left meanwhile has no bubble to render into.
      onError: () => (this.el.isConnected ? undefined : false),
    });
  }

  /** @param {ThreadEventOf<'file_send'>} event */
  renderFileSend(event) {
    const contents = event.fileContents;
    return this.frame(event, 'event-file-send',
      event.content ? h('p', { class: 'event-caption', text: event.content }) : null,
      fileSendView(contents));
  }

  /**
   * A command the agent ran: a compact row that opens on the command and its output. A run of
   * them sits close together under one header, as the steps of one piece of work.
   * @param {ThreadEventOf<'command_executed'>} event
   */
  renderCommand(event) {
    return this.frame(event, 'event-command', commandView(event));
  }

  /** @param {ThreadEventOf<'file_publishing'>} event */
  renderPublishing(event) {
    return this.frame(event, 'event-published',
      publishedCard(this.thread.id, { display_name: event.display_name }, { state: 'publishing' }));
  }

  /** @param {ThreadEventOf<'file_publish_failed'>} event */
  renderPublishFailed(event) {
    const failure = { code: event.error?.code, message: event.error?.message, filePath: event.file_path };
    announce(`${this.who(event)} could not publish ${event.display_name}: ${publishFailureText(failure)}`);
    return this.frame(event, 'event-published',
      publishedCard(this.thread.id, { display_name: event.display_name }, { state: 'error', failure }));
  }

  /** @param {ThreadEventOf<'file_published'>} event */
  renderPublished(event) {
    const file = event.file;
    // A `file_published` event always carries the revision it made.
    const state = file?.id ? 'ready' : 'error';
    if (file?.id) {
      const known = this.published.get(file.id);
      if (!known || (file.revision || 0) >= (known.revision || 0)) this.published.set(file.id, file);
    }
    if (state === 'ready') announce(`${this.who(event)} published ${file.display_name}`);
    // A new revision of the file in the open panel joins its revision picker.
    if (state === 'ready' && this.preview.isOpen && this.preview.file?.id === file.id) {
      this.preview.loadRevisions(this.preview.file);
    }
    // No caption: the card names the file, and the line above it who published it and when.
    const card = publishedCard(this.thread.id, file || {}, {
      state,
      failure: { message: 'the file did not arrive' },
      onOpen: (f, opener) => this.preview.open(this.thread.id, f, opener),
    });
    if (state === 'ready' && file.id) this.trackRevision(file, card);
    return this.frame(event, 'event-published', card);
  }

  /**
   * Marks every card of an older revision of the file as superseded by the newest one.
   * @param {PublishedFile} file
   * @param {HTMLElement} card
   */
  trackRevision(file, card) {
    const cards = this.cardsByFile.get(file.id) || [];
    cards.push({ revision: file.revision || 1, card });
    this.cardsByFile.set(file.id, cards);
    const newest = Math.max(...cards.map((c) => c.revision));
    for (const { revision, card: older } of cards) {
      if (revision < newest) markSuperseded(older, newest);
    }
  }
}

/**
 * Says on a card that a newer revision of its file exists (once, then kept up to date).
 * @param {HTMLElement} card
 * @param {number} newest
 */
function markSuperseded(card, newest) {
  card.classList.add('card-superseded');
  let note = card.querySelector('.superseded-note');
  if (!note) {
    note = h('p', { class: 'superseded-note' });
    card.querySelector('.card-body')?.append(note);
  }
  note.textContent = `Superseded by revision ${newest}`;
}

/**
 * Loads a thread and builds its view; answers null (after calling onNotFound) when missing.
 * @param {string} threadId
 * @param {ThreadViewOptions} options
 * @returns {Promise<ThreadView>}
 */
export async function openThread(threadId, options) {
  /** @type {Thread} */
  const thread = await getJson(route('threads', threadId));
  return new ThreadView(thread, options);
}

/**
 * A dialog that mints a token for this thread's agent and shows how to use it. The token is
 * shown in a field to copy, never put in a URL.
 * @param {Thread} thread
 * @param {HTMLElement} opener Gets the focus back when the dialog closes.
 */
function connectAgentDialog(thread, opener) {
  const origin = window.location.origin;
  const output = h('div', { class: 'agent-output' });
  const error = h('p', { class: 'form-error', role: 'alert' });
  error.hidden = true;
  const create = h('button', { type: 'button', class: 'btn btn-primary' }, icon('plus'), h('span', { class: 'label', text: 'Create an agent token' }));
  const dialog = h('dialog', { class: 'dialog', 'aria-labelledby': 'agent-dialog-title' },
    h('header', { class: 'dialog-header' },
      h('h2', { id: 'agent-dialog-title', text: 'Connect an agent to this thread' }),
      h('button', { type: 'button', class: 'btn btn-icon', 'aria-label': 'Close', onclick: () => dialog.close() }, icon('close'))),
    h('p', { text: 'An agent token lets one agent work in this thread: read what you write and send, keep its working files, send you files here, and use your spaces. It is valid for an hour.' }),
    create, error, output);
  create.addEventListener('click', async () => {
    create.disabled = true;
    error.hidden = true;
    try {
      /** @type {AgentToken} */
      const { token, expiresAt } = await sendJson('POST', route('threads', thread.id, 'agent-token'), {});
      const field = h('input', { id: 'agent-token', class: 'input mono', readonly: true, value: token, 'aria-describedby': 'agent-token-exp' });
      const copy = h('button', {
        type: 'button', class: 'btn',
        onclick: async () => {
          field.select();
          try {
            await navigator.clipboard.writeText(token);
            // The button was made with its label, below.
            /** @type {HTMLSpanElement} */ (copy.querySelector('.label')).textContent = 'Copied';
          } catch {
            /** @type {HTMLSpanElement} */ (copy.querySelector('.label')).textContent = 'Press Ctrl+C';
          }
        },
      }, h('span', { class: 'label', text: 'Copy' }));
      replace(output,
        h('label', { for: 'agent-token', class: 'field-label', text: 'Agent token' }),
        h('div', { class: 'field-row' }, field, copy),
        h('p', { id: 'agent-token-exp', class: 'field-help', text: `Expires ${new Date(expiresAt).toLocaleString()}.` }),
        h('p', { text: 'Paste it into your agent where it asks for ferry’s token. Whoever holds it can act as this thread’s agent until it expires, so give it to your agent only.' }),
        developerDetails(
          h('p', { class: 'field-label', text: 'MCP over HTTP: the endpoint, with the token as a bearer header' }),
          h('pre', { class: 'snippet mcp-url' }, `${origin}/mcp`),
          h('pre', { class: 'snippet' }, JSON.stringify({
            mcpServers: { ferry: { type: 'http', url: `${origin}/mcp`, headers: { Authorization: 'Bearer <the token above>' } } },
          }, null, 2)),
          h('p', { class: 'field-label', text: 'MCP over stdio, for clients that start a program' }),
          h('pre', { class: 'snippet' }, `FERRY_TOKEN=<the token above> ferry mcp --url ${origin}`),
          h('p', { class: 'field-label', text: 'Or over HTTP' }),
          h('pre', { class: 'snippet' }, `Authorization: Bearer <the token above>\n${origin}/api/threads/${thread.id}/…`)));
      field.focus();
      field.select();
    } catch (e) {
      error.textContent = `No token was created: ${/** @type {import('./api.js').Failure} */ (e).message}`;
      error.hidden = false;
    } finally {
      create.disabled = false;
    }
  });
  dialog.addEventListener('close', () => {
    dialog.remove();
    opener?.focus();
  });
  document.body.append(dialog);
  dialog.showModal();
  create.focus();
}

/**
 * Asks before deleting the thread with everything in it; then calls `deleted`.
 * @param {Thread} thread
 * @param {HTMLElement} opener
 * @param {() => void} deleted
 */
function deleteThreadDialog(thread, opener, deleted) {
  confirmDialog({
    title: `Delete “${thread.title || 'Untitled thread'}”?`,
    text: 'Its messages, your uploads, the files the agent published and the agent’s working files are deleted for good. Agent tokens of this thread stop working.',
    action: 'Delete thread',
    failure: 'The thread was not deleted',
    run: () => sendJson('DELETE', route('threads', thread.id)),
    done: deleted,
    opener,
  });
}

/**
 * What the main area shows for a thread that cannot be seen.
 * @param {string} threadId
 * @returns {HTMLElement}
 */
export function threadNotFound(threadId) {
  return h('section', { class: 'notice', 'aria-labelledby': 'nf-title' },
    h('h1', { id: 'nf-title', text: 'Thread not found' }),
    h('p', { text: `There is no thread “${threadId}” that you can see. It may belong to someone else, or the link may be wrong.` }),
    h('p', {}, h('a', { href: '/', 'data-nav': '', text: 'Back to your threads' })));
}

/**
 * What the main area shows while something loads.
 * @param {string} text
 * @returns {HTMLDivElement}
 */
export function loadingView(text) {
  return h('div', { class: 'loading', role: 'status' }, icon('spinner', 'icon spin'), h('span', { text }));
}

export { replace };
