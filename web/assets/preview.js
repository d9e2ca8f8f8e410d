// The preview panel (docs/reference/web-ui.md): opened by clicking a published file's card,
// or the chip of a file the person uploaded. It shows the server's preview by `preview_kind`:
// an image; a PDF's pages (and a presentation's slides, when the server has an office
// renderer) as the server draws them (images: nothing of the document runs in the browser);
// server-rendered HTML in a sandboxed frame; or "Preview not available — download to view".
// It has a revision picker and Download. Escape or Close closes it, and focus goes back to
// the card it came from.
import { h, replace, announce } from './dom.js';
import { icon } from './icons.js';
import { formatSize, typeLabel, formatWhen, extensionOf } from './format.js';
import { route, getBlob, getJson, request } from './api.js';
import { downloadTo } from './download.js';
import { publishedContentPath } from './cards.js';

/** Pages of a PDF the panel shows at most; the rest are a download away. */
const PAGES_SHOWN = 20;

/**
 * Files with one version: a person's upload, or a file shown from its own address (`src`: a
 * say-mode photo). Published files have revisions.
 */
function oneVersion(file) {
  return Boolean(file.upload || file.src);
}

export class PreviewPanel {
  constructor(host) {
    this.host = host;
    this.el = null;
    this.urls = [];
    this.loadSeq = 0;
    this.returnFocus = null;
    this.file = null;
    this.threadId = null;
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

  /** Where the panel's Download gets the file shown. */
  contentPath(file) {
    if (file.src) return file.src;
    return file.upload
      ? route('threads', this.threadId, 'uploads', file.id, 'content')
      : publishedContentPath(this.threadId, file.id);
  }

  /** Opens (or re-targets) the panel on one revision of a published file. */
  open(threadId, file, returnFocusTo) {
    this.threadId = threadId;
    this.file = file;
    this.returnFocus = returnFocusTo || document.activeElement;
    if (!this.el) this.build();
    this.showFile(file);
    this.loadRevisions(file);
    this.loadPreview(file);
    this.el.querySelector('.panel-close').focus({ preventScroll: true });
    document.body.classList.add('panel-open');
  }

  close() {
    if (!this.el) return;
    this.loadSeq += 1;
    this.revokeUrls();
    this.el.remove();
    this.el = null;
    document.removeEventListener('keydown', this.onKey);
    document.body.classList.remove('panel-open');
    const target = this.returnFocus;
    this.returnFocus = null;
    if (target && target.isConnected) target.focus({ preventScroll: false });
  }

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
    this.download = h('button', {
      type: 'button',
      class: 'btn btn-primary panel-download',
      onclick: () => downloadTo(this.download, this.contentPath(this.file), this.file.filename,
        oneVersion(this.file) ? {} : { revision: this.file.revision }).catch(() => {}),
    }, icon('download'), h('span', { class: 'label', text: 'Download' }));
    this.body = h('div', { class: 'panel-body', 'aria-live': 'polite' });
    this.el = h('aside', {
      class: 'panel',
      role: 'dialog',
      'aria-modal': 'false',
      'aria-labelledby': 'panel-title',
    },
    // Close sits in the panel's corner, apart from the file's actions.
    h('header', { class: 'panel-header' },
      h('div', { class: 'panel-titles' }, this.title, this.meta),
      h('button', {
        type: 'button', class: 'btn btn-icon panel-close', 'aria-label': 'Close preview', title: 'Close (Esc)',
        onclick: () => this.close(),
      }, icon('close')),
      h('div', { class: 'panel-actions' },
        h('div', { class: 'revision-picker' },
          h('label', { for: 'panel-revision', text: 'Revision' }), this.select),
        this.download)),
    this.body);
    this.host.append(this.el);
    document.addEventListener('keydown', this.onKey);
  }

  showFile(file) {
    this.title.textContent = file.display_name;
    const parts = [file.filename, `${typeLabel(file.file_type || file.filename)} · ${formatSize(file.file_size)}`];
    if (file.description) parts.push(file.description);
    this.meta.textContent = parts.join(' · ');
    if (oneVersion(file)) {
      // An upload or a say-mode photo has one version: the picker says so and stays disabled.
      this.download.setAttribute('aria-label', `Download ${file.filename}`);
      replace(this.select, h('option', { value: '1', text: file.upload ? 'Uploaded original' : 'As sent' }));
      this.select.disabled = true;
      return;
    }
    this.download.setAttribute('aria-label', `Download ${file.filename}, revision ${file.revision}`);
    if (!this.revisions) {
      replace(this.select, h('option', { value: String(file.revision), text: `Revision ${file.revision}` }));
    }
    this.select.value = String(file.revision);
  }

  async loadRevisions(file) {
    this.revisions = null;
    if (oneVersion(file)) return;
    try {
      const { files } = await getJson(route('threads', this.threadId, 'published'), { query: { revisions: 'all' } });
      if (this.file?.id !== file.id || !this.el) return;
      const mine = (files || []).filter((f) => f.id === file.id).sort((a, b) => b.revision - a.revision);
      if (!mine.some((r) => r.revision === file.revision)) mine.push(file);
      this.revisions = mine;
      const latest = Math.max(...mine.map((r) => r.revision));
      replace(this.select, mine.map((r) => h('option', {
        value: String(r.revision),
        text: `Revision ${r.revision}${r.revision === latest ? ' (latest)' : ''}${r.published_at ? ` · ${formatWhen(r.published_at)}` : ''}`,
      })));
      this.select.value = String(this.file.revision);
      this.select.disabled = mine.length < 2;
    } catch {
      this.select.disabled = true;
    }
  }

  revokeUrls() {
    for (const url of this.urls) URL.revokeObjectURL(url);
    this.urls = [];
  }

  blobUrl(blob) {
    const url = URL.createObjectURL(blob);
    this.urls.push(url);
    return url;
  }

  async loadPreview(file) {
    const seq = ++this.loadSeq;
    this.revokeUrls();
    const kind = file.preview_kind || 'none';
    this.body.dataset.kind = kind;
    replace(this.body, h('div', { class: 'panel-loading', role: 'status' }, icon('spinner', 'icon spin'), h('span', { text: 'Loading preview…' })));
    if (kind === 'none') {
      this.showUnavailable();
      return;
    }
    // A presentation's slides are drawn by the server when it has an office renderer; without
    // one (422) the deck's HTML rendering, its slides' text and pictures, is shown instead.
    const slides = kind === 'html' && file.file_type === '.pptx';
    if (kind === 'pdf' || slides) {
      const shown = await this.showPages(file, seq, { orElse: slides });
      if (shown || seq !== this.loadSeq) return;
    }
    let blob;
    try {
      blob = file.src ? await getBlob(file.src) : file.upload
        ? await getBlob(route('threads', this.threadId, 'uploads', file.id, 'preview'))
        : await getBlob(route('threads', this.threadId, 'published', file.id, 'preview'), { query: { revision: file.revision } });
    } catch (e) {
      if (seq !== this.loadSeq) return;
      if (e.status === 404 || e.status === 422) this.showUnavailable(e.message);
      else replace(this.body, h('p', { class: 'panel-error', role: 'alert', text: `The preview could not be loaded: ${e.message}` }));
      return;
    }
    if (seq !== this.loadSeq) return;
    const name = file.display_name;
    if (kind === 'image') {
      const img = h('img', { class: 'preview-image', alt: `${name} (preview)`, src: this.blobUrl(blob) });
      replace(this.body, h('div', { class: 'preview-image-wrap' }, img));
    } else if (kind === 'html') {
      // Server-rendered, sanitized HTML, in a frame that may run nothing and reach nothing:
      // no allow-scripts, no allow-same-origin.
      const html = new Blob([await blob.text()], { type: 'text/html;charset=utf-8' });
      if (seq !== this.loadSeq) return;
      const frame = h('iframe', { class: 'preview-frame preview-html', title: `${name} (preview)`, sandbox: '', referrerpolicy: 'no-referrer', src: this.blobUrl(html) });
      replace(this.body, frame);
    } else {
      this.showUnavailable();
    }
  }

  /**
   * A PDF (or a deck) as its pages, drawn by the server (the same drawings a model is shown):
   * page 1 first, which says how many there are, then the others in turn, up to PAGES_SHOWN.
   * Answers whether the pages are shown; with `orElse`, a first page the server cannot draw
   * (422) is left to the caller's other preview instead of being reported.
   */
  async showPages(file, seq, { orElse = false } = {}) {
    const path = (n) => (file.upload
      ? route('threads', this.threadId, 'uploads', file.id, 'pages', n)
      : route('threads', this.threadId, 'published', file.id, 'pages', n));
    const query = file.upload ? {} : { revision: file.revision };
    let first;
    try {
      first = await request(path(1), { query });
    } catch (e) {
      if (seq !== this.loadSeq) return true;
      if (orElse && e.status === 422) return false;
      if (e.status === 404 || e.status === 422) this.showUnavailable(e.message);
      else replace(this.body, h('p', { class: 'panel-error', role: 'alert', text: `The preview could not be loaded: ${e.message}` }));
      return true;
    }
    const count = Number(first.headers.get('x-page-count')) || 1;
    const blob = await first.blob();
    if (seq !== this.loadSeq) return true;
    const name = file.display_name;
    const [unit, units] = file.file_type === '.pptx' ? ['Slide', 'Slides'] : ['Page', 'Pages'];
    const pages = h('div', { class: 'preview-pages', role: 'list', 'aria-label': `${name}, ${count} ${(count === 1 ? unit : units).toLowerCase()}` });
    const add = (n, image) => pages.append(h('figure', { class: 'preview-page', role: 'listitem' },
      h('img', { class: 'preview-page-image', alt: `${unit} ${n} of ${count} of ${name}`, src: this.blobUrl(image) }),
      h('figcaption', { text: `${unit} ${n} of ${count}` })));
    replace(this.body, pages);
    add(1, blob);
    const shown = Math.min(count, PAGES_SHOWN);
    for (let n = 2; n <= shown; n++) {
      try {
        const image = await getBlob(path(n), { query });
        if (seq !== this.loadSeq) return true;
        add(n, image);
      } catch (e) {
        if (seq !== this.loadSeq) return true;
        pages.append(h('p', { class: 'note', role: 'listitem', text: `${unit} ${n} cannot be shown: ${e.message}` }));
      }
    }
    if (count > shown) {
      pages.append(h('p', { class: 'note', text: `${units} ${shown + 1}–${count} are not shown here; download the file to see them all.` }));
    }
    return true;
  }

  showUnavailable(detail) {
    replace(this.body, h('div', { class: 'preview-unavailable' },
      icon('file', 'icon icon-xl'),
      h('p', { class: 'unavailable-title', text: 'Preview not available — download to view' }),
      detail ? h('p', { class: 'note', text: detail }) : null));
  }
}
