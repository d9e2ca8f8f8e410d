// The preview panel (docs/reference/web-ui.md): opened by clicking a published file's card,
// the chip of a file the person uploaded, or a file of a space, so a file previews the same
// wherever it is. A thread's file is shown by its `preview_kind`: an image; a PDF's pages (and
// a presentation's slides, when the server has an office renderer) as the server draws them
// (images: nothing of the document runs in the browser); server-rendered HTML in a sandboxed
// frame; or "Preview not available — download to view". A space's file is shown with the same
// views (space-preview.js). A preview that cannot be loaded says why, with Retry, and tries
// again by itself (retry.js). The header has the file's name, Download and Close, and a
// revision picker when the file has two revisions or more. Escape or Close closes it, and focus
// goes back to what opened it.
import { h, replace, announce } from './dom.js';
import { icon } from './icons.js';
import { formatSize, typeLabel, formatWhen, formatDateTime, extensionOf } from './format.js';
import { route, getBlob, getJson, request } from './api.js';
import { downloadTo } from './download.js';
import { publishedContentPath } from './cards.js';
import { keepTrying, showFailure, showKeepingFocus } from './retry.js';
import { imageView, frameView, unavailableView, pagesView } from './preview-views.js';
import { spacePreview, spaceFilePath } from './space-preview.js';

/**
 * A published revision of a thread's file (the other kinds' marks, `upload`, `src`, `space`, are
 * not on it).
 * @typedef {PublishedFile & { upload?: undefined, src?: undefined, space?: undefined, path?: undefined }} PublishedPreview
 */

/**
 * A file a person uploaded to a thread, shown as a published file of one revision would be.
 * @typedef {{ id: string, upload: true, display_name: string, filename: string, file_type: string,
 *   file_size: number, revision: number, preview_kind: string, description?: undefined,
 *   src?: undefined, space?: undefined, path?: undefined }} UploadPreview
 */

/**
 * A say-mode photo, shown from its own address (`src`).
 * @typedef {{ id: string, src: string, display_name: string, filename: string, file_type: string,
 *   file_size: number, revision: number, preview_kind: string, description?: undefined,
 *   upload?: undefined, space?: undefined, path?: undefined }} PhotoPreview
 */

/**
 * A file of a space (space-preview.js shows it), by its path there.
 * @typedef {{ space: string, path: string, display_name: string, filename: string, file_type: string,
 *   file_size: number | null | undefined, contentType?: string | null, updatedAt?: string | null,
 *   revision: number, id?: undefined, upload?: undefined, src?: undefined, description?: undefined,
 *   preview_kind?: undefined }} SpacePreview
 */

/** A thread's file the panel shows. @typedef {PublishedPreview | UploadPreview | PhotoPreview} ThreadPreview */

/** What the panel shows. @typedef {ThreadPreview | SpacePreview} PreviewFile */

/**
 * Files with one version: a person's upload, a file shown from its own address (`src`: a
 * say-mode photo), or a space's file. Published files have revisions.
 * @param {PreviewFile} file
 * @returns {file is UploadPreview | PhotoPreview | SpacePreview}
 */
function oneVersion(file) {
  return Boolean(file.upload || file.src || file.space);
}

export class PreviewPanel {
  /** @param {HTMLElement} host What the panel is put in when it opens. */
  constructor(host) {
    this.host = host;
    /** @type {HTMLElement | null} The panel, while it is open. */
    this.el = null;
    /** @type {string[]} */
    this.urls = [];
    this.loadSeq = 0;
    /** @type {Set<{ stop: () => void }>} */
    this.retries = new Set();
    /** @type {{ stop: () => void } | null} */
    this.revisionRetry = null;
    /** @type {HTMLElement | null} */
    this.returnFocus = null;
    /** @type {PreviewFile | null} */
    this.file = null;
    /** @type {string | null} The thread of the file shown; null for a space's. */
    this.threadId = null;
    // The panel's parts, which build() makes before anything reads them (open() calls it first):
    // declared here for their types only.
    /** @type {HTMLHeadingElement} */
    this.title;
    /** @type {HTMLParagraphElement} */
    this.meta;
    /** @type {HTMLSelectElement} */
    this.select;
    /** @type {HTMLDivElement} */
    this.picker;
    /** @type {HTMLButtonElement} */
    this.download;
    /** @type {HTMLDivElement} */
    this.body;
    /** @type {PublishedFile[] | null | undefined} The revisions of the published file shown, once known. */
    this.revisions;
    /** @param {KeyboardEvent} e */
    this.onKey = (e) => {
      // A modal dialog over the panel (e.g. Connect agent) takes its own Escape.
      if (e.key === 'Escape' && this.el && !e.defaultPrevented && !document.querySelector('dialog[open]')) {
        e.preventDefault();
        this.close();
      }
    };
  }

  get isOpen() {
    return this.el !== null;
  }

  /**
   * Opens the panel on a file the person uploaded: one version (no revisions), shown by its
   * `previewKind` (the image, the PDF's pages, the rendered document) and downloaded as sent.
   * @param {string} threadId
   * @param {Upload} upload
   * @param {HTMLElement} [returnFocusTo]
   */
  openUpload(threadId, upload, returnFocusTo) {
    this.open(threadId, {
      id: upload.id,
      upload: true,
      display_name: upload.fileName,
      filename: upload.fileName,
      file_type: extensionOf(upload.fileName),
      file_size: upload.size,
      revision: 1,
      preview_kind: upload.previewKind || (upload.kind === 'image' ? 'image' : 'none'),
    }, returnFocusTo);
  }

  /**
   * Opens the panel on a file of a space (an entry of GET /api/spaces/{space}/files): one
   * version, shown as the same file would be in a thread.
   * @param {string} space
   * @param {FileEntry} entry
   * @param {HTMLElement} [returnFocusTo]
   */
  openSpaceFile(space, entry, returnFocusTo) {
    const name = entry.path.slice(entry.path.lastIndexOf('/') + 1);
    this.open(null, {
      space,
      path: entry.path,
      display_name: name,
      filename: name,
      file_type: extensionOf(name),
      file_size: entry.size,
      contentType: entry.contentType,
      updatedAt: entry.updatedAt,
      revision: 1,
    }, returnFocusTo);
  }

  /**
   * Where the panel's Download gets the file shown.
   * @param {PreviewFile} file
   * @returns {string}
   */
  contentPath(file) {
    if (file.space) return spaceFilePath(file.space, file.path);
    if (file.src) return file.src;
    // A thread's file (a space's names its space): the panel was opened with its thread, and it
    // has its id.
    return file.upload
      ? route('threads', /** @type {string} */ (this.threadId), 'uploads', file.id, 'content')
      : publishedContentPath(/** @type {string} */ (this.threadId), /** @type {string} */ (file.id));
  }

  /**
   * Opens (or re-targets) the panel on one revision of a published file.
   * @param {string | null} threadId The file's thread; null for a space's file.
   * @param {PreviewFile} file
   * @param {HTMLElement} [returnFocusTo] Gets the focus back when the panel closes (else what
   *   has it now).
   */
  open(threadId, file, returnFocusTo) {
    this.threadId = threadId;
    this.file = file;
    // The focus is on an element of the page (or its body), never on the SVG of an icon.
    this.returnFocus = returnFocusTo || /** @type {HTMLElement | null} */ (document.activeElement);
    if (!this.el) this.build();
    this.showFile(file);
    this.loadRevisions(file);
    this.loadPreview(file);
    // build() made the panel, with its Close button.
    /** @type {HTMLButtonElement} */ (/** @type {HTMLElement} */ (this.el).querySelector('.panel-close')).focus({ preventScroll: true });
    document.body.classList.add('panel-open');
  }

  close() {
    if (!this.el) return;
    this.loadSeq += 1;
    this.stopRetries();
    this.revisionRetry?.stop();
    this.revokeUrls();
    this.el.remove();
    this.el = null;
    document.removeEventListener('keydown', this.onKey);
    document.body.classList.remove('panel-open');
    const target = this.returnFocus;
    this.returnFocus = null;
    if (target && target.isConnected) target.focus({ preventScroll: false });
  }

  /** Makes the panel: its parts are there from then on (open() calls it first). */
  build() {
    this.title = h('h2', { id: 'panel-title', class: 'panel-title' });
    this.meta = h('p', { class: 'panel-meta' });
    this.select = h('select', { id: 'panel-revision', class: 'select' });
    this.select.addEventListener('change', () => {
      const revision = Number(this.select.value);
      const chosen = (this.revisions || []).find((r) => r.revision === revision);
      if (chosen) {
        this.file = chosen;
        this.showFile(chosen);
        this.loadPreview(chosen);
        announce(`Showing revision ${revision}`);
      }
    });
    this.picker = h('div', { class: 'revision-picker', hidden: true },
      h('label', { for: 'panel-revision', text: 'Revision' }), this.select);
    // Download is clicked while the panel shows a file: the casts say so.
    this.download = h('button', {
      type: 'button',
      class: 'btn btn-primary panel-download',
      onclick: () => downloadTo(this.download, this.contentPath(/** @type {PreviewFile} */ (this.file)), /** @type {PreviewFile} */ (this.file).filename,
        oneVersion(/** @type {PreviewFile} */ (this.file)) ? {} : { revision: /** @type {PreviewFile} */ (this.file).revision }).catch(() => {}),
    }, icon('download'), h('span', { class: 'label', text: 'Download' }));
    this.body = h('div', { class: 'panel-body', 'aria-live': 'polite' });
    // The header is a grid (app.css): the names, Download and Close share its first row, each in
    // a column of its own, so they cannot overlap at any width; the revision picker, when there
    // is a choice, takes the second row.
    this.el = h('aside', {
      class: 'panel',
      role: 'dialog',
      'aria-modal': 'false',
      'aria-labelledby': 'panel-title',
    },
    h('header', { class: 'panel-header' },
      h('div', { class: 'panel-titles' }, this.title, this.meta),
      h('div', { class: 'panel-actions' }, this.download),
      h('button', {
        type: 'button', class: 'btn btn-icon panel-close', 'aria-label': 'Close preview', title: 'Close (Esc)',
        onclick: () => this.close(),
      }, icon('close')),
      this.picker),
    this.body);
    this.host.append(this.el);
    document.addEventListener('keydown', this.onKey);
  }

  /**
   * Shows the file's names, type, size and revision in the header.
   * @param {PreviewFile} file
   */
  showFile(file) {
    this.title.textContent = file.display_name;
    const type = `${typeLabel(file.file_type || file.filename)} · ${formatSize(file.file_size)}`;
    const parts = file.space
      ? [`${file.space}/${file.path}`, type, file.updatedAt ? `updated ${formatDateTime(file.updatedAt)}` : '']
      : [file.filename, type, file.description];
    this.meta.textContent = parts.filter(Boolean).join(' · ');
    this.download.setAttribute('aria-label', oneVersion(file)
      ? `Download ${file.filename}`
      : `Download ${file.filename}, revision ${file.revision}`);
    if (oneVersion(file)) {
      this.picker.hidden = true;
      return;
    }
    // Until the revisions are known (or when they cannot be), the picker stays hidden: a choice
    // of one is no choice.
    if (!this.revisions) this.picker.hidden = true;
    else this.select.value = String(file.revision);
  }

  /**
   * Lists the file's revisions (again after a new one is published): the picker is shown once
   * there are two or more. A failure is tried again by itself, quietly: the preview works
   * without it.
   * @param {PreviewFile} file
   */
  loadRevisions(file) {
    this.revisions = null;
    this.revisionRetry?.stop();
    this.revisionRetry = null;
    if (oneVersion(file)) return;
    // A published file is a thread's: the panel was opened with its thread.
    const threadId = /** @type {string} */ (this.threadId);
    this.revisionRetry = keepTrying(async () => {
      /** @type {PublishedList} */
      const { files } = await getJson(route('threads', threadId, 'published'), { query: { revisions: 'all' } });
      if (this.file?.id !== file.id || !this.el) return;
      const mine = (files || []).filter((f) => f.id === file.id).sort((a, b) => b.revision - a.revision);
      // The panel still shows the published file asked about (its id, checked above): the casts
      // below say so.
      if (!mine.some((r) => r.revision === /** @type {PublishedPreview} */ (this.file).revision)) mine.push(/** @type {PublishedPreview} */ (this.file));
      this.revisions = mine;
      const latest = Math.max(...mine.map((r) => r.revision));
      replace(this.select, mine.map((r) => h('option', {
        value: String(r.revision),
        text: `Revision ${r.revision}${r.revision === latest ? ' (latest)' : ''}${r.published_at ? ` · ${formatWhen(r.published_at)}` : ''}`,
      })));
      this.select.value = String(/** @type {PublishedPreview} */ (this.file).revision);
      this.picker.hidden = mine.length < 2;
    }, {
      onError: () => (this.file?.id === file.id && this.el ? undefined : false),
    });
  }

  revokeUrls() {
    for (const url of this.urls) URL.revokeObjectURL(url);
    this.urls = [];
  }

  stopRetries() {
    for (const retry of this.retries) retry.stop();
    this.retries.clear();
  }

  /**
   * A blob: URL of `blob`, released when the panel moves on.
   * @param {Blob} blob
   * @returns {string}
   */
  blobUrl(blob) {
    const url = URL.createObjectURL(blob);
    this.urls.push(url);
    return url;
  }

  /**
   * Shows the preview of `file`. A failure to load it is shown with Retry and tried again by
   * itself (retry.js) until it loads or the panel moves on; a file with no preview (404, 422)
   * says so.
   * @param {PreviewFile} file
   */
  loadPreview(file) {
    const seq = ++this.loadSeq;
    this.stopRetries();
    this.revokeUrls();
    const kind = file.space ? 'space' : (file.preview_kind || 'none');
    this.body.dataset.kind = kind;
    replace(this.body, h('div', { class: 'panel-loading', role: 'status' }, icon('spinner', 'icon spin'), h('span', { text: 'Loading preview…' })));
    if (kind === 'none') {
      this.showUnavailable();
      return;
    }
    /** @type {import('./preview-views.js').ViewContext} */
    const ctx = {
      current: () => seq === this.loadSeq && this.el !== null,
      url: (blob) => this.blobUrl(blob),
      track: (handle) => this.retries.add(handle),
    };
    ctx.track(keepTrying(async () => {
      // A space's file always names its space: without one, it is a thread's.
      const view = file.space ? await spacePreview(file, ctx) : await this.threadPreview(/** @type {ThreadPreview} */ (file), ctx);
      if (!ctx.current()) return;
      // Current: the panel is open, with its Close button.
      showKeepingFocus(this.body, () => replace(this.body, view), () => /** @type {HTMLElement | null} */ (/** @type {HTMLElement} */ (this.el).querySelector('.panel-close')));
    }, {
      onError: (error, attempt) => {
        if (!ctx.current()) return false;
        if (error.status === 404 || error.status === 422) {
          this.showUnavailable(error.message);
          return false;
        }
        showFailure(this.body, { message: 'The preview could not be loaded', error, attempt });
        return undefined;
      },
    }));
  }

  /**
   * The view of a thread's file (a published revision, an upload, a photo) by its preview_kind.
   * The panel was opened with the file's thread: the casts of `threadId` below say so.
   * @param {ThreadPreview} file
   * @param {import('./preview-views.js').ViewContext} ctx
   * @returns {Promise<HTMLElement>}
   */
  async threadPreview(file, ctx) {
    const kind = file.preview_kind;
    const name = file.display_name;
    // A presentation's slides are drawn by the server when it has an office renderer; without
    // one (422) the deck's HTML rendering, its slides' text and pictures, is shown instead.
    const slides = kind === 'html' && file.file_type === '.pptx';
    if (kind === 'pdf' || slides) {
      const path = (/** @type {number} */ n) => (file.upload
        ? route('threads', /** @type {string} */ (this.threadId), 'uploads', file.id, 'pages', n)
        : route('threads', /** @type {string} */ (this.threadId), 'published', file.id, 'pages', n));
      const query = file.upload ? {} : { revision: file.revision };
      let first;
      try {
        first = await request(path(1), { query });
      } catch (e) {
        if (!(slides && /** @type {import('./api.js').Failure} */ (e).status === 422)) throw e;
      }
      if (first) {
        const count = Number(first.headers.get('x-page-count')) || 1;
        const image = await first.blob();
        return pagesView({ name, count, first: image, slides, load: (n) => getBlob(path(n), { query }) }, ctx);
      }
    }
    const blob = file.src ? await getBlob(file.src) : file.upload
      ? await getBlob(route('threads', /** @type {string} */ (this.threadId), 'uploads', file.id, 'preview'))
      : await getBlob(route('threads', /** @type {string} */ (this.threadId), 'published', file.id, 'preview'), { query: { revision: file.revision } });
    if (kind === 'image') return imageView(ctx.url(blob), name);
    if (kind === 'html') {
      const html = new Blob([await blob.text()], { type: 'text/html;charset=utf-8' });
      return frameView(ctx.url(html), name);
    }
    return unavailableView();
  }

  /** @param {string} [detail] */
  showUnavailable(detail) {
    replace(this.body, unavailableView(detail));
  }
}
