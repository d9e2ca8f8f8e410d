// What the preview panel shows in its body, whatever the file came from (a thread or a space):
// an image, a document's pages drawn by the server, a server-rendered page in a sandboxed frame,
// text, rendered Markdown, a table, or "Preview not available". Nothing here runs anything of
// the file: images are <img> (an SVG in an <img> runs no script), HTML only in a frame that may
// run nothing, text is text.
import { h } from './dom.js';
import { decorateCode } from './markdown.js';
import { icon } from './icons.js';
import { keepTrying, showFailure, transient } from './retry.js';

/** Pages of a PDF (or slides) the panel shows at most; the rest are a download away. */
export const PAGES_SHOWN = 20;

/**
 * @typedef {object} ViewContext
 * @property {() => boolean} current Whether the panel still shows what asked.
 * @property {(blob: Blob) => string} url A blob: URL the panel releases when it moves on.
 * @property {(handle: { stop: () => void }) => void} track A retry to stop when it moves on.
 */

/**
 * An image from its (blob:) URL; one the browser cannot draw says so.
 * @param {string} url
 * @param {string} name
 * @returns {HTMLDivElement}
 */
export function imageView(url, name) {
  const img = h('img', { class: 'preview-image', alt: `${name} (preview)`, src: url });
  const wrap = h('div', { class: 'preview-image-wrap' }, img);
  // A file named like an image may not be one (or not one the browser reads): say so.
  img.addEventListener('error', () => {
    if (wrap.isConnected) wrap.replaceWith(unavailableView('The image cannot be shown here.'));
  }, { once: true });
  return wrap;
}

/**
 * Server-rendered, sanitized HTML, in a frame that may run nothing and reach nothing: no
 * allow-scripts, no allow-same-origin. Its page follows the light or dark theme (its stylesheet
 * says `color-scheme: light dark`); the frame's own background is the panel's, so in either
 * theme the text stands on the colour it was chosen for.
 * @param {string} url
 * @param {string} name
 * @returns {HTMLIFrameElement}
 */
export function frameView(url, name) {
  return h('iframe', { class: 'preview-frame preview-html', title: `${name} (preview)`, sandbox: '', referrerpolicy: 'no-referrer', src: url });
}

/**
 * Text as text (source code, a log, a document's extracted text), with notes above it.
 * @param {string} text
 * @param {string} name
 * @param {string[]} [notes]
 * @returns {HTMLDivElement}
 */
export function textView(text, name, notes = []) {
  return h('div', { class: 'preview-doc' },
    notes.map((note) => h('p', { class: 'preview-note', text: note })),
    h('pre', { class: 'preview-text', tabindex: '0', 'aria-label': `${name} (preview)` }, text));
}

/**
 * Markdown rendered by the server (sanitized: see markdown.js), in the app's own page.
 * @param {string} html
 * @param {string} name
 * @param {string[]} [notes]
 * @returns {HTMLDivElement}
 */
export function markdownView(html, name, notes = []) {
  const body = h('div', { class: 'preview-markdown markdown', tabindex: '0', 'aria-label': `${name} (preview)` });
  body.innerHTML = html;
  decorateCode(body);
  return h('div', { class: 'preview-doc' }, notes.map((note) => h('p', { class: 'preview-note', text: note })), body);
}

/**
 * Rows of cells as a table, the first row its header.
 * @param {string[][]} rows
 * @param {string} name
 * @param {string[]} [notes]
 * @returns {HTMLDivElement}
 */
export function tableView(rows, name, notes = []) {
  const [head, ...body] = rows;
  const width = Math.max(0, ...rows.map((r) => r.length));
  /** @type {(row: string[], tag: 'th' | 'td') => HTMLTableCellElement[]} */
  const cells = (row, tag) => Array.from({ length: width }, (_, i) => h(tag, { text: row[i] ?? '' }));
  return h('div', { class: 'preview-doc' },
    notes.map((note) => h('p', { class: 'preview-note', text: note })),
    h('div', { class: 'preview-table-wrap', tabindex: '0', role: 'region', 'aria-label': `${name} (preview)` },
      h('table', { class: 'preview-table' },
        head ? h('thead', {}, h('tr', {}, cells(head, 'th'))) : null,
        h('tbody', {}, body.map((row) => h('tr', {}, cells(row, 'td')))))));
}

/**
 * "Preview not available", with why (`detail`) when there is something to say.
 * @param {string} [detail]
 * @param {string} [title]
 * @returns {HTMLDivElement}
 */
export function unavailableView(detail, title = 'Preview not available — download to view') {
  return h('div', { class: 'preview-unavailable' },
    icon('file', 'icon icon-xl'),
    h('p', { class: 'unavailable-title', text: title }),
    detail ? h('p', { class: 'note', text: detail }) : null);
}

/**
 * A document as its pages (or a deck as its slides), drawn by the server: page 1, which says how
 * many there are, is given; the others are fetched in turn by `load(n)`, up to PAGES_SHOWN. A
 * page that cannot be fetched for now (the server out of reach) waits with Retry, trying again
 * by itself, and the pages after it follow once it is shown.
 * @param {{ name: string, count: number, first: Blob, load: (n: number) => Promise<Blob>, slides?: boolean }} doc
 * @param {ViewContext} ctx
 * @returns {HTMLDivElement}
 */
export function pagesView({ name, count, first, load, slides = false }, ctx) {
  const [unit, units] = slides ? ['Slide', 'Slides'] : ['Page', 'Pages'];
  const pages = h('div', { class: 'preview-pages', role: 'list', 'aria-label': `${name}, ${count} ${(count === 1 ? unit : units).toLowerCase()}` });
  /** @type {(n: number, image: Blob) => void} */
  const add = (n, image) => pages.append(h('figure', { class: 'preview-page', role: 'listitem' },
    h('img', { class: 'preview-page-image', alt: `${unit} ${n} of ${count} of ${name}`, src: ctx.url(image) }),
    h('figcaption', { text: `${unit} ${n} of ${count}` })));
  const shown = Math.min(count, PAGES_SHOWN);
  /** @type {(from: number) => Promise<void>} */
  const rest = async (from) => {
    for (let n = from; n <= shown; n++) {
      let image;
      try {
        image = await load(n);
      } catch (e) {
        if (!ctx.current()) return;
        if (!transient(e)) {
          pages.append(h('p', { class: 'note', role: 'listitem', text: `${unit} ${n} cannot be shown: ${/** @type {import('./api.js').Failure} */ (e).message}` }));
          continue;
        }
        waitFor(n);
        return;
      }
      if (!ctx.current()) return;
      add(n, image);
    }
    if (count > shown) {
      pages.append(h('p', { class: 'note', text: `${units} ${shown + 1}–${count} are not shown here; download the file to see them all.` }));
    }
  };
  /** @type {(n: number) => void} */
  const waitFor = (n) => {
    const slot = h('div', { class: 'preview-page-failure', role: 'listitem' });
    pages.append(slot);
    ctx.track(keepTrying(async () => {
      const image = await load(n);
      if (!ctx.current()) return;
      slot.remove();
      add(n, image);
      rest(n + 1);
    }, {
      onError: (error, attempt) => {
        if (!ctx.current()) return false;
        showFailure(slot, { message: `${unit} ${n} could not be loaded`, error, attempt, compact: true });
        return undefined;
      },
    }));
  };
  add(1, first);
  rest(2);
  return pages;
}
