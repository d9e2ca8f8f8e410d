// A space file in the preview panel, shown as the same file is in a thread (preview.js): the
// format is told from the name by the server's own table (ferry-extract's kind.rs), and each
// is drawn with the same views (preview-views.js). The server renders no HTML for space files,
// so what it draws is asked for where it can (a PDF's pages, a document's text, through the
// agents' `read_file`: docs/agent-files.md) and the rest is shown by the browser from the bytes
// (GET /api/spaces/{space}/files/{path}): images as <img>, text as text, Markdown rendered by
// the server's Markdown renderer, CSV as a table. Bytes that are not text are never shown as
// text.
import { route, getBlob, sendJson, ApiError } from './api.js';
import { renderMarkdown } from './markdown.js';
import { extensionOf } from './format.js';
import {
  imageView, textView, markdownView, tableView, unavailableView, pagesView,
} from './preview-views.js';

/** @typedef {import('./preview.js').SpacePreview} SpacePreview */
/** What `read_file` answers for a document's text. @typedef {Extract<ReadOutput, { kind: 'text' }>} ReadText */
/** What `read_file` answers for a PDF's pages. @typedef {Extract<ReadOutput, { kind: 'pages' }>} ReadPages */
/** A page's image, in what `read_file` answers. @typedef {Extract<ReadPages['content'][number], { type: 'image' }>} ImageBlock */
/**
 * How a space file is previewed (spaceFormat).
 * @typedef {'image' | 'pdf' | 'document' | 'csv' | 'tsv' | 'markdown' | 'json' | 'text' | 'other'} SpaceFormat
 */

/** Extensions of text and source code, as the server's TEXT_EXTENSIONS. */
const TEXT = new Set(('txt text log py rs js mjs cjs jsx ts tsx go java kt kts scala swift c h cc cpp cxx hpp hh cs '
  + 'rb php pl lua r sh bash zsh fish ps1 bat yaml yml toml xml html htm xhtml css scss sass less sql ini cfg conf env '
  + 'properties gradle jsonl ndjson rst tex diff patch vue svelte dart ex exs erl hs ml clj graphql proto tf dockerfile '
  + 'makefile cmake gitignore').split(' '));
/** Names without an extension that are text, as the server's TEXT_NAMES. */
const TEXT_NAMES = new Set('makefile dockerfile readme license licence changelog authors notice todo containerfile'.split(' '));
/**
 * Image types by extension, from ferry's own table, never from what the writer said.
 * @type {Partial<Record<string, string>>}
 */
const IMAGE_TYPES = {
  '.png': 'image/png', '.jpg': 'image/jpeg', '.jpeg': 'image/jpeg', '.gif': 'image/gif', '.webp': 'image/webp', '.svg': 'image/svg+xml',
};
/** @type {Partial<Record<string, SpaceFormat>>} */
const FORMATS = {
  '.pdf': 'pdf',
  '.docx': 'document', '.xlsx': 'document', '.xlsm': 'document', '.xls': 'document', '.pptx': 'document',
  '.csv': 'csv', '.tsv': 'tsv', '.tab': 'tsv',
  '.md': 'markdown', '.markdown': 'markdown', '.mdown': 'markdown', '.mkd': 'markdown',
  '.json': 'json', '.geojson': 'json',
};

/** Text shown at most, as the server's HTML renderings of text files. */
const TEXT_SHOWN = 2 * 1024 * 1024;
/** The longest text the Markdown renderer takes (docs/reference/web-ui.md). */
const MARKDOWN_MAX = 32768;
/** A table stops here, as the server's renderings of CSV and sheets do. */
const TABLE = { rows: 1000, columns: 100, cell: 2000 };
/** Lines of a document's text asked for: read_file's most. */
const DOCUMENT_LINES = 50000;

/**
 * How a space file is previewed, by its name: `image`, `pdf`, `document` (DOCX, XLSX, XLS,
 * PPTX), `csv`, `tsv`, `markdown`, `json`, `text`, or `other` (shown as text only if its bytes
 * are text).
 * @param {string} name
 * @returns {SpaceFormat}
 */
export function spaceFormat(name) {
  const ext = extensionOf(name);
  if (IMAGE_TYPES[ext]) return 'image';
  if (FORMATS[ext]) return FORMATS[ext];
  if (ext && TEXT.has(ext.slice(1))) return 'text';
  const base = String(name).slice(String(name).lastIndexOf('/') + 1).toLowerCase();
  // A dot-file such as `.env` or `.gitignore` is named by its extension alone.
  if (base.startsWith('.') && TEXT.has(base.slice(1))) return 'text';
  if (!ext && TEXT_NAMES.has(base.replace(/^\.+/, ''))) return 'text';
  return 'other';
}

/**
 * A path of a space file as a URL path: each segment encoded, the slashes kept.
 * @param {string} space
 * @param {string} path
 * @returns {string}
 */
export function spaceFilePath(space, path) {
  return `${route('spaces', space, 'files')}/${path.split('/').map(encodeURIComponent).join('/')}`;
}

/**
 * The text of the bytes, or null when they are not text (not UTF-8, or holding a NUL byte), at
 * most `max` characters; `cut` says whether there was more.
 * @param {ArrayBuffer} buffer
 * @param {number} [max]
 * @returns {{ text: string, cut: boolean } | null}
 */
export function textOf(buffer, max = TEXT_SHOWN) {
  const bytes = new Uint8Array(buffer);
  const cut = bytes.length > max;
  let text;
  try {
    // Streaming: a character cut at the end of the part shown is not an error.
    text = new TextDecoder('utf-8', { fatal: true }).decode(cut ? bytes.subarray(0, max) : bytes, { stream: cut });
  } catch {
    return null;
  }
  if (text.includes('\0')) return null;
  return { text: text.replace(/^\uFEFF/, ''), cut };
}

/**
 * CSV (or TSV) records as rows of cells (RFC 4180 quotes), at most TABLE's rows, columns and
 * characters. The `.csv` separator is sniffed from the first line, as the server does.
 * @param {string} text
 * @param {boolean} tab Whether the cells are separated by tabs (TSV), whatever the first line.
 * @returns {{ rows: string[][], more: boolean, wide: boolean }}
 */
export function parseDelimited(text, tab) {
  const firstLine = text.slice(0, text.indexOf('\n') >= 0 ? text.indexOf('\n') : text.length);
  const count = (/** @type {string} */ c) => firstLine.split(c).length - 1;
  const sep = tab ? '\t' : [',', ';', '\t'].reduce((best, c) => (count(c) > count(best) ? c : best), ',');
  /** @type {string[][]} */
  const rows = [];
  /** @type {string[]} */
  let row = [];
  let cell = '';
  let quoted = false;
  let wide = false;
  const endCell = () => {
    if (row.length < TABLE.columns) row.push(cell.length > TABLE.cell ? `${cell.slice(0, TABLE.cell)}…` : cell);
    else wide = true;
    cell = '';
  };
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') { cell += '"'; i++; } else if (c === '"') quoted = false;
      else cell += c;
    } else if (c === '"' && cell === '') quoted = true;
    else if (c === sep) endCell();
    else if (c === '\n' || c === '\r') {
      if (c === '\r' && text[i + 1] === '\n') i++;
      endCell();
      rows.push(row);
      row = [];
      // The header and TABLE.rows records.
      if (rows.length > TABLE.rows) {
        return { rows, more: i + 1 < text.length, wide };
      }
    } else cell += c;
  }
  if (cell !== '' || row.length) {
    endCell();
    rows.push(row);
  }
  return { rows, more: false, wide };
}

/**
 * A `read_file` of a space file, through the agents' file operations. What it answers depends on
 * what `extra` asks (a PDF's pages, a document's lines): the caller names it.
 * @template {ReadOutput} T
 * @param {SpacePreview} file
 * @param {{ pages?: string, limit?: number }} extra
 * @returns {Promise<T>}
 */
function readFile(file, extra) {
  return sendJson('POST', route('fs', 'read_file'), { path: `/spaces/${file.space}/${file.path}`, ...extra });
}

/**
 * Page `n` of a space PDF, as the server draws it for a model: { count, image }.
 * @param {SpacePreview} file
 * @param {number} n
 * @returns {Promise<{ count: number, image: Blob }>}
 */
async function pdfPage(file, n) {
  /** @type {ReadPages} */
  const answer = await readFile(file, { pages: String(n) });
  // The page's image block, then its text (docs/agent-files.md, `read_file`'s pages).
  const block = /** @type {ImageBlock | undefined} */ ((answer.content || []).find((b) => b.type === 'image' && b.base64));
  if (!block) throw new ApiError(422, 'UNSUPPORTED_FILE_TYPE', `page ${n} of ${file.filename} cannot be drawn`);
  const binary = atob(block.base64);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return { count: Number(answer.totalPages) || 1, image: new Blob([bytes], { type: block.mime_type || 'image/png' }) };
}

/**
 * The preview of a space file (`{ space, path, filename, contentType }`), as a view for the
 * panel's body. Throws ApiError when the server cannot be asked (the panel offers Retry).
 * @param {SpacePreview} file
 * @param {import('./preview-views.js').ViewContext} ctx
 * @returns {Promise<HTMLElement>}
 */
export async function spacePreview(file, ctx) {
  const name = file.filename;
  const format = spaceFormat(file.path);
  if (format === 'pdf') {
    const { count, image } = await pdfPage(file, 1);
    return pagesView({ name, count, first: image, load: async (n) => (await pdfPage(file, n)).image }, ctx);
  }
  if (format === 'document') {
    // Office documents: the server renders their HTML for thread files only; here their text,
    // as the agents read it, is what can be shown.
    /** @type {ReadText} */
    const answer = await readFile(file, { limit: DOCUMENT_LINES });
    const text = String(answer.content || '').split('\n').map((line) => line.replace(/^ *\d+\t/, '')).join('\n');
    const notes = [`The text of ${name}, as your agents read it: its layout, pictures and charts are not shown here. Download the file to see it as it is.`];
    if (answer.nextOffset) notes.push(`Only its first ${DOCUMENT_LINES.toLocaleString('en-US')} lines are shown.`);
    return textView(text.trimEnd(), name, notes);
  }
  const blob = await getBlob(spaceFilePath(file.space, file.path));
  if (format === 'image') {
    // Typed by its name (an SVG as an image, so it can run nothing), whatever it was stored as.
    return imageView(ctx.url(new Blob([blob], { type: IMAGE_TYPES[extensionOf(name)] })), name);
  }
  // A name the server does not know is shown only when it was stored as text and is text.
  if (format === 'other' && !/^text\/|json|xml|yaml|toml|javascript|x-sh/i.test(String(file.contentType || blob.type))) {
    return unavailableView('');
  }
  const read = textOf(await blob.arrayBuffer());
  if (!read) return unavailableView(`${name} is not text${format === 'other' ? '' : ', though its name says it is'}.`);
  const cutNote = read.cut ? ['The file is longer than 2 MiB; only its beginning is shown.'] : [];
  if (format === 'csv' || format === 'tsv') {
    const { rows, more, wide } = parseDelimited(read.text, format === 'tsv');
    const notes = [...cutNote];
    if (more) notes.push(`Only the first ${TABLE.rows.toLocaleString('en-US')} rows are shown.`);
    if (wide) notes.push(`Only the first ${TABLE.columns} columns are shown.`);
    return tableView(rows, name, notes);
  }
  if (format === 'markdown') {
    if (read.text.length <= MARKDOWN_MAX) return markdownView(await renderMarkdown(read.text), name, cutNote);
    return textView(read.text, name, [...cutNote, 'It is too long to be shown rendered here; this is its text.']);
  }
  if (format === 'json') {
    try {
      return textView(JSON.stringify(JSON.parse(read.text), null, 2), name, cutNote);
    } catch {
      // not JSON after all: its text as it is
    }
  }
  return textView(read.text, name, cutNote);
}
