// The file card an MCP host shows (an MCP App) for a published file or an upload the agent
// read: it speaks the MCP Apps protocol (JSON-RPC over postMessage with the host that framed
// it), draws the card from the tool result, and reads what it shows through the host
// (resources/read). Built from the web UI's own modules (dom.js, format.js, icons.js), so a
// size or a file's kind reads the same in the card as in the app: `web-types/check --write`
// bundles this module into the card's one page (crates/ferry-mcp/src/file_card.html).
//
// Everything shown comes from the tool result or from resources/read through the host; text
// goes into the page as text nodes only, and a document's own HTML is shown in a frame that
// may run nothing.
import { h } from '../../../web/assets/dom.js';
import { extensionOf, formatSize } from '../../../web/assets/format.js';
import { fileIconName } from '../../../web/assets/icons.js';

/**
 * A JSON-RPC 2.0 message from the host: a request or a notification (`method`), or the answer to
 * one of the card's requests (`result` or `error`, by `id`).
 * @typedef {{ jsonrpc: '2.0', id?: number | string, method?: string, params?: unknown, result?: unknown,
 *   error?: { code?: number, message?: string } }} RpcMessage
 */

/**
 * A resource as resources/read answers it: text, or bytes in base64 (`blob`).
 * @typedef {{ uri?: string, mimeType?: string, text?: string, blob?: string }} ResourceContents
 */

/**
 * A tool's result, as the host hands it to the card: the publish answer (`structuredContent`),
 * or the upload read (`_meta['ferry/upload']`); text content when the tool failed.
 * @typedef {{ isError?: boolean, content?: { type: string, text?: string }[],
 *   structuredContent?: PublishedFile, _meta?: { 'ferry/upload'?: Upload } }} ToolResult
 */

/**
 * The host's theme (`theme`: light or dark) and style variables.
 * @typedef {{ theme?: string, styles?: { variables?: Record<string, unknown> } }} HostContext
 */

/**
 * What the card shows of a file, whether published or uploaded: its names and facts, how it is
 * previewed (`previewKind`, else `orElse`), and the resources it is read from.
 * @typedef {object} CardFile
 * @property {string} title
 * @property {string} filename
 * @property {string} extension
 * @property {string} mimeType
 * @property {number} size
 * @property {string[]} facts
 * @property {string} description
 * @property {string} previewKind
 * @property {string} [orElse] The preview kind when the slides cannot be drawn.
 * @property {string} [text] An upload's text preview.
 * @property {string} contentUri
 * @property {string} imageUri
 * @property {string} [htmlUri]
 * @property {string} pagesUri
 */

/** Draws a kind of preview of `file` into `box`. @typedef {(file: CardFile, box: HTMLElement) => Promise<void>} Preview */

const PROTOCOL_VERSION = '2026-01-26';
const PDF_PAGES_SHOWN = 3;
const host = window.parent;
// file-card.html has the card's root.
const card = /** @type {HTMLElement} */ (document.getElementById('card'));
/**
 * The card's requests waiting for their answers, by id (a number; an answer may name any).
 * @type {Map<RpcMessage['id'], { resolve: (result: unknown) => void, reject: (error: Error) => void }>}
 */
const pending = new Map();
let nextId = 1;
/** @type {{ downloadFile?: unknown }} */
let hostCapabilities = {};

const post = (/** @type {object} */ message) => host.postMessage(message, '*');
const notify = (/** @type {string} */ method, /** @type {object} */ params = {}) => post({ jsonrpc: '2.0', method, params });
/**
 * Asks the host; resolves with its result, of the type the caller names (the method's).
 * @template T
 * @param {string} method
 * @param {object} params
 * @returns {Promise<T>}
 */
function request(method, params) {
  const id = nextId++;
  post({ jsonrpc: '2.0', id, method, params });
  // The host's result is the method's: the caller names it as T.
  return new Promise((resolve, reject) => pending.set(id, { resolve: /** @type {(result: unknown) => void} */ (resolve), reject }));
}

/**
 * The envelope's message when the tool failed ({"error": {"code", "message"}}), or its text.
 * @param {ToolResult | undefined} result
 * @returns {string}
 */
function failureOf(result) {
  const text = ((result && result.content) || []).filter((c) => c.type === 'text').map((c) => c.text).join('\n');
  try {
    /** @type {Partial<ErrorEnvelope> | null} */
    const envelope = JSON.parse(text);
    if (envelope && envelope.error && envelope.error.message) return envelope.error.message;
  } catch { /* not JSON: the text itself */ }
  return text || 'The file could not be published.';
}

/**
 * Reads a resource through the host.
 * @param {string} uri
 * @returns {Promise<ResourceContents>}
 */
async function read(uri) {
  /** @type {{ contents?: ResourceContents[] } | null | undefined} */
  const answer = await request('resources/read', { uri });
  const contents = answer && answer.contents && answer.contents[0];
  if (!contents) throw new Error('the host answered no contents');
  return contents;
}

const IMAGE_TYPE = /^image\/(png|jpeg|gif|webp|bmp|avif|svg\+xml)$/;
/**
 * An image resource as an <img>; throws when it is not an image.
 * @param {ResourceContents} contents
 * @param {string} alt
 * @returns {HTMLImageElement}
 */
function imageOf(contents, alt) {
  const type = String(contents.mimeType || '').split(';')[0].trim().toLowerCase();
  if (!IMAGE_TYPE.test(type)) throw new Error(`not an image (${type || 'no type'})`);
  // An <img> never runs script, SVG included.
  const src = contents.blob !== undefined
    ? `data:${type};base64,${contents.blob}`
    : `data:${type};charset=utf-8,${encodeURIComponent(contents.text || '')}`;
  return h('img', { src, alt, decoding: 'async' });
}

/**
 * A document's first pages (or a deck's slides) as the server draws them, into `box`.
 * @param {CardFile} file
 * @param {HTMLElement} box
 * @param {string} unit
 */
async function drawnPages(file, box, unit) {
  for (let page = 1; page <= PDF_PAGES_SHOWN; page += 1) {
    let contents;
    try {
      contents = await read(`${file.pagesUri}/${page}`);
    } catch (error) {
      if (page === 1) throw error;
      break; // the document has fewer pages
    }
    box.append(h('figure', {}, imageOf(contents, `${unit} ${page} of ${file.title}`),
      h('figcaption', { text: `${unit} ${page}` })));
  }
}

/**
 * The preview of each kind, into `box`.
 * @type {Partial<Record<string, Preview>>}
 */
const PREVIEWS = {
  async image(file, box) {
    box.append(imageOf(await read(file.imageUri), file.title));
  },
  async pdf(file, box) {
    await drawnPages(file, box, 'Page');
  },
  // A presentation's slides, drawn when the server has an office renderer; without one, the
  // preview its kind has otherwise (`orElse`).
  async slides(file, box) {
    try {
      await drawnPages(file, box, 'Slide');
    } catch (error) {
      // Without another kind (undefined) none is found, as for any kind without a preview.
      const orElse = PREVIEWS[/** @type {string} */ (file.orElse)];
      if (!orElse) throw error;
      await orElse(file, box);
    }
  },
  async html(file, box) {
    // A file previewed as HTML has its HTML's resource (published()).
    const contents = await read(/** @type {string} */ (file.htmlUri));
    // sandbox="" : the document's HTML may show, never run (no script, no form, no popup).
    const frame = h('iframe', { sandbox: '', title: `Preview of ${file.title}`, referrerpolicy: 'no-referrer' });
    frame.srcdoc = contents.text || '';
    box.append(frame);
  },
  async text(file, box) {
    box.append(h('pre', { class: 'text', text: file.text }));
  },
};

/**
 * @param {CardFile} file
 * @param {HTMLElement} box
 */
async function showPreview(file, box) {
  const preview = PREVIEWS[file.previewKind];
  if (!preview) {
    box.append(h('p', { class: 'muted', text: 'No preview for this type of file.' }));
    return;
  }
  box.setAttribute('aria-busy', 'true');
  try {
    await preview(file, box);
  } catch (error) {
    box.append(h('p', { class: 'muted', text: `The preview could not be loaded: ${/** @type {Error} */ (error).message}` }));
  } finally {
    box.removeAttribute('aria-busy');
  }
}

/**
 * @param {ResourceContents} contents
 * @returns {Uint8Array<ArrayBuffer>}
 */
function bytesOf(contents) {
  if (contents.blob === undefined) return new TextEncoder().encode(contents.text || '');
  const raw = atob(contents.blob);
  const bytes = new Uint8Array(raw.length);
  for (let i = 0; i < raw.length; i += 1) bytes[i] = raw.charCodeAt(i);
  return bytes;
}

// The host saves the file when it offers to (ui/download-file, which it reads through
// resources/read); otherwise the page reads it and hands the browser a file to save.
/**
 * @param {CardFile} file
 * @param {HTMLButtonElement} button
 * @param {HTMLElement} note Where a failure is said.
 */
async function download(file, button, note) {
  button.disabled = true;
  note.textContent = '';
  try {
    if (hostCapabilities.downloadFile) {
      const link = { type: 'resource_link', uri: file.contentUri, name: file.filename, mimeType: file.mimeType, size: file.size };
      /** @type {{ isError?: boolean } | null | undefined} */
      const answer = await request('ui/download-file', { contents: [link] });
      if (answer && answer.isError) throw new Error('the host did not save the file');
    } else {
      const bytes = bytesOf(await read(file.contentUri));
      const url = URL.createObjectURL(new Blob([bytes], { type: file.mimeType || 'application/octet-stream' }));
      h('a', { href: url, download: file.filename }).click();
      setTimeout(() => URL.revokeObjectURL(url), 60000);
    }
  } catch (error) {
    note.textContent = `Download failed: ${/** @type {Error} */ (error).message}`;
  } finally {
    button.disabled = false;
  }
}

/**
 * A presentation is shown as its slides when they can be drawn, else by its own kind.
 * @param {string} previewKind
 * @param {string} extension
 * @returns {{ previewKind: string, orElse?: string }}
 */
function slidesOr(previewKind, extension) {
  return extension === '.pptx'
    ? { previewKind: 'slides', orElse: previewKind }
    : { previewKind };
}

/**
 * A file the agent published: the publish answer, at the revision that call made.
 * @param {PublishedFile} answer
 * @returns {CardFile}
 */
function published(answer) {
  const revision = Number(answer.revision) || 1;
  const uri = `ferry://published/${encodeURIComponent(answer.id)}/revisions/${revision}`;
  const extension = answer.file_type || extensionOf(answer.filename);
  return {
    title: answer.display_name || answer.filename,
    filename: answer.filename,
    extension,
    mimeType: answer.mime_type,
    size: answer.file_size,
    facts: [answer.filename, formatSize(answer.file_size), `revision ${revision}`],
    description: answer.description,
    ...slidesOr(answer.preview_kind, extension),
    contentUri: uri,
    imageUri: `${uri}/preview`,
    htmlUri: `${uri}/preview`,
    pagesUri: `${uri}/pages`,
  };
}

/**
 * A file the user uploaded, as the thread's upload list shows it.
 * @param {Upload} upload
 * @returns {CardFile}
 */
function uploaded(upload) {
  const uri = `ferry://uploads/${encodeURIComponent(upload.id)}`;
  const extension = extensionOf(upload.fileName);
  let previewKind = upload.preview ? 'text' : 'none';
  if (upload.kind === 'image') previewKind = 'image';
  else if (upload.fileType === 'application/pdf') previewKind = 'pdf';
  return {
    title: upload.fileName,
    filename: upload.fileName,
    extension,
    mimeType: upload.fileType, // an upload's fileType is its MIME type
    size: upload.size,
    facts: ['Uploaded by the user', formatSize(upload.size)],
    description: '',
    ...slidesOr(previewKind, extension),
    text: upload.preview || '',
    contentUri: uri,
    imageUri: uri,
    pagesUri: `${uri}/pages`,
  };
}

/** @param {ToolResult | undefined} result */
function show(result) {
  const fine = result && !result.isError;
  const upload = fine && result._meta && result._meta['ferry/upload'];
  const answer = fine && result.structuredContent;
  let file = null;
  if (upload && typeof upload.id === 'string') file = uploaded(upload);
  else if (answer && typeof answer.id === 'string') file = published(answer);
  if (!file) {
    card.replaceChildren(h('p', { class: 'error', role: 'alert', text: failureOf(result) }));
    return;
  }
  const label = String(file.extension).replace(/^\./, '').toUpperCase().slice(0, 5) || 'FILE';
  const preview = h('div', { class: 'preview' });
  const note = h('p', { class: 'muted', role: 'status' });
  const button = h('button', { type: 'button', text: 'Download', 'aria-label': `Download ${file.filename}` });
  button.addEventListener('click', () => download(file, button, note));
  card.replaceChildren(
    h('div', { class: 'head' },
      h('div', { class: 'badge', 'data-kind': fileIconName(file.extension), 'aria-hidden': 'true', text: label }),
      h('div', { class: 'titles' },
        h('h1', { class: 'name', text: file.title }),
        h('p', { class: 'facts', text: file.facts.join(' · ') }))),
    // Nothing rather than null: replaceChildren() would show a null as the text "null".
    file.description ? h('p', { class: 'description', text: file.description }) : '',
    preview,
    h('div', { class: 'actions' }, button, note),
  );
  showPreview(file, preview);
}

/**
 * The host's theme: light or dark, and its style variables.
 * @param {HostContext} context
 */
function applyContext(context) {
  const root = document.documentElement;
  if (context.theme === 'light' || context.theme === 'dark') {
    root.dataset.theme = context.theme;
    root.style.colorScheme = context.theme;
  }
  const variables = context.styles && context.styles.variables;
  for (const [name, value] of Object.entries(variables || {})) {
    if (name.startsWith('--') && typeof value === 'string') root.style.setProperty(name, value);
  }
}

window.addEventListener('message', (event) => {
  if (event.source !== host) return; // only the host that framed this page speaks to it
  /** @type {RpcMessage | null | undefined} */
  const message = event.data;
  if (!message || message.jsonrpc !== '2.0') return;
  if (message.method === undefined) {
    const waiting = pending.get(message.id);
    if (!waiting) return;
    pending.delete(message.id);
    if (message.error) waiting.reject(new Error(message.error.message || 'the host refused'));
    else waiting.resolve(message.result);
    return;
  }
  switch (message.method) {
    case 'ui/notifications/tool-result':
      show(/** @type {ToolResult | undefined} */ (message.params));
      break;
    case 'ui/notifications/tool-cancelled':
      card.replaceChildren(h('p', { class: 'muted', text: 'The tool call was cancelled.' }));
      break;
    case 'ui/notifications/host-context-changed':
      applyContext(/** @type {HostContext | undefined} */ (message.params) || {});
      break;
    case 'ui/resource-teardown':
    case 'ping':
      post({ jsonrpc: '2.0', id: message.id, result: {} });
      break;
    default:
      if (message.id !== undefined) {
        post({ jsonrpc: '2.0', id: message.id, error: { code: -32601, message: `${message.method} is not handled` } });
      }
  }
});

// The host sizes the frame to the card.
new ResizeObserver(() => {
  notify('ui/notifications/size-changed', { height: Math.ceil(document.documentElement.scrollHeight) });
}).observe(document.body);

/** @type {Promise<{ hostCapabilities?: { downloadFile?: unknown }, hostContext?: HostContext } | null | undefined>} */ (request('ui/initialize', {
  protocolVersion: PROTOCOL_VERSION,
  appInfo: { name: 'ferry-file-card', version: '1' },
  appCapabilities: {},
})).then((answer) => {
  hostCapabilities = (answer && answer.hostCapabilities) || {};
  applyContext((answer && answer.hostContext) || {});
  notify('ui/notifications/initialized');
}, (error) => {
  card.replaceChildren(h('p', { class: 'error', role: 'alert', text: `The host did not start the card: ${error.message}` }));
});
