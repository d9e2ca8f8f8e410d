// What agents deliver, as docs/reference/web-ui.md describes it: a card per published file (publishing, error
// and ready states; icon by type, display name, `DOCX · 44.6 KB`, description, Download),
// say-mode attachments, `file_send` contents inline, the chips of a user's uploads, and the
// commands the agent ran in its sandbox.
import { h, developerDetails } from './dom.js';
import { icon, fileIcon } from './icons.js';
import { formatSize, typeLabel, extensionOf, formatDuration, terminalText, limitIn } from './format.js';
import { route, getBlob } from './api.js';
import { downloadTo, saveBlob } from './download.js';
import { keepTrying, showFailure, showKeepingFocus } from './retry.js';

/** @typedef {import('./preview.js').PreviewFile} PreviewFile */

/**
 * A button with an icon and a label.
 * @param {string} label
 * @param {import('./icons.js').IconName} iconName
 * @param {import('./dom.js').Attrs<'button'>} [attrs]
 * @returns {HTMLButtonElement}
 */
function button(label, iconName, attrs = {}) {
  return h('button', { type: 'button', class: 'btn', ...attrs },
    iconName ? icon(iconName) : null,
    h('span', { class: 'label', text: label }));
}

/**
 * A small picture of an image, fetched with the token (an <img> cannot send it) and shown from
 * a blob: URL, released once drawn. `fallback` stays in place until it is, and if it never is.
 * @param {string} path
 * @param {string} alt
 * @param {Element} fallback
 * @param {import('./api.js').RequestOptions['query']} [query]
 * @returns {[Element, HTMLImageElement]}
 */
function thumbnail(path, alt, fallback, query) {
  const img = h('img', { class: 'thumb', alt, hidden: true });
  getBlob(path, query ? { query } : undefined).then((blob) => {
    const url = URL.createObjectURL(blob);
    img.addEventListener('load', () => {
      URL.revokeObjectURL(url);
      img.hidden = false;
      fallback.remove();
    }, { once: true });
    img.addEventListener('error', () => URL.revokeObjectURL(url), { once: true });
    img.src = url;
  }).catch(() => {});
  return [fallback, img];
}

/**
 * The path of a published file's bytes.
 * @param {string} threadId
 * @param {string} fileId
 * @returns {string}
 */
export function publishedContentPath(threadId, fileId) {
  return route('threads', threadId, 'published', fileId, 'content');
}

/**
 * @typedef {object} PublishFailure
 * @property {string} [code] The error's code (`NOT_FOUND`, `REQUEST_TOO_LARGE`, …).
 * @property {string} [message] The server's message.
 * @property {string} [filePath] The file the agent asked to publish, as it named it.
 */

/**
 * Why a publish failed, in a sentence for the person: the file by its name, never by its path in
 * the agent's sandbox (the server's own words, path and all, are for developers).
 * @param {PublishFailure} failure
 */
export function publishFailureText({ code, message, filePath }) {
  const name = filePath ? filePath.slice(filePath.lastIndexOf('/') + 1) : '';
  if (code === 'NOT_FOUND' && name) return `The agent's file ${name} could not be found.`;
  const limit = code === 'REQUEST_TOO_LARGE' ? limitIn(message) : null;
  if (limit) return `${name || 'The file'} is too large to publish: the limit is ${limit}.`;
  // Any path of the agent's own (/sandbox/…, /spaces/…) is said by its file name.
  const said = String(message || 'Something went wrong.').replace(/\/(?:sandbox|spaces)\/[^\s:;,'"]*[^\s:;,'".)]/g, (path) => path.slice(path.lastIndexOf('/') + 1) || path);
  return `${said.charAt(0).toUpperCase()}${said.slice(1)}${/[.!?]$/.test(said) ? '' : '.'}`;
}

/**
 * A published file's card. `state` is 'publishing', 'error' or 'ready' (docs/reference/web-ui.md);
 * `onOpen(file, openButton)` opens the preview panel when the card (not its button) is clicked.
 * A card still publishing, or that failed, knows only the file's display name; one that failed
 * says why (`failure`).
 * @param {string} threadId
 * @param {Partial<PublishedFile>} file
 * @param {{ state?: 'publishing' | 'error' | 'ready', failure?: PublishFailure, onOpen?: OpenPreview<PublishedFile> }} [options]
 * @returns {HTMLElement}
 */
export function publishedCard(threadId, file, { state = 'ready', failure = {}, onOpen } = {}) {
  if (state === 'publishing') {
    return h('article', { class: 'card card-publishing', 'aria-busy': 'true' },
      h('div', { class: 'card-icon' }, icon('spinner', 'icon spin')),
      h('div', { class: 'card-body' },
        h('h3', { class: 'card-title', text: 'Publishing file…' }),
        h('p', { class: 'card-meta', text: file?.display_name ? `Preparing “${file.display_name}” for download` : 'Preparing file for download' })));
  }
  if (state === 'error') {
    const reason = publishFailureText(failure);
    return h('article', { class: 'card card-error' },
      h('div', { class: 'card-icon' }, icon('alert')),
      h('div', { class: 'card-body' },
        h('h3', { class: 'card-title', text: 'Error publishing file' }),
        h('p', { class: 'card-meta error-text', text: file?.display_name ? `“${file.display_name}”: ${reason}` : reason }),
        failure.message || failure.filePath
          ? developerDetails(h('dl', { class: 'dev-facts' },
            failure.filePath ? [h('dt', { text: 'File' }), h('dd', {}, h('code', { text: failure.filePath }))] : null,
            failure.message ? [h('dt', { text: 'Details' }), h('dd', { text: failure.code ? `${failure.code}: ${failure.message}` : failure.message })] : null))
          : null));
  }
  // A ready card is of a published file, whole (its event's, or an attachment's): the casts below
  // say so of its id, name and revision.
  const label = `${typeLabel(file.file_type || file.filename)} · ${formatSize(file.file_size)}`;
  const titleId = `card-${file.id}-r${file.revision}-${Math.random().toString(36).slice(2, 8)}`;
  const open = h('button', {
    type: 'button',
    class: 'card-open',
    id: titleId,
    'aria-haspopup': 'dialog',
    'aria-label': `Preview ${file.display_name} (${label})`,
    onclick: () => onOpen?.(/** @type {PublishedFile} */ (file), open),
  }, file.display_name);
  const download = button('Download', 'download', {
    class: 'btn card-download',
    'aria-label': `Download ${file.filename}`,
    onclick: (e) => {
      e.stopPropagation();
      downloadTo(download, publishedContentPath(threadId, /** @type {string} */ (file.id)), /** @type {string} */ (file.filename), { revision: file.revision }).catch(() => {});
    },
  });
  const card = h('article', {
    class: 'card card-ready',
    'aria-labelledby': titleId,
    dataset: { fileId: /** @type {string} */ (file.id), revision: String(file.revision || 1), previewKind: file.preview_kind || 'none' },
  },
  h('div', { class: 'card-icon' }, file.preview_kind === 'image'
    ? thumbnail(route('threads', threadId, 'published', /** @type {string} */ (file.id), 'preview'), '',
      fileIcon(file.file_type || file.filename, file.mime_type), { revision: file.revision })
    : fileIcon(file.file_type || file.filename, file.mime_type)),
  h('div', { class: 'card-body' },
    h('div', { class: 'card-heading' },
      h('span', { class: 'badge-ok', title: 'File ready', 'aria-label': 'File ready', role: 'img' }, icon('check', 'icon icon-sm')),
      h('h3', { class: 'card-title' }, open),
      /** @type {number} */ (file.revision) > 1 ? h('span', { class: 'rev-badge', text: `rev ${file.revision}` }) : null),
    h('p', { class: 'card-meta', text: label }),
    file.description ? h('p', { class: 'card-desc', text: file.description }) : null),
  download);
  return card;
}

/**
 * A say-mode attachment (`files` on a message): photos inline, everything else as a card
 * with a Download button. Published files among them open the preview like any card.
 */
/**
 * @param {string} threadId
 * @param {Attachment} attachment
 * @param {{ findPublished?: (attachment: Attachment) => PublishedFile | null | undefined, onOpen?: OpenPreview<PreviewFile> }} [options]
 * @returns {HTMLElement}
 */
export function attachmentView(threadId, attachment, { findPublished, onOpen } = {}) {
  const path = attachmentPath(threadId, attachment);
  const mime = attachment.mimeType || '';
  const isPhoto = attachment.sendAs === 'photo' || (attachment.sendAs === 'auto' && mime.startsWith('image/'));
  if (isPhoto && path) {
    const img = h('img', { class: 'photo', alt: attachment.filename || 'photo', loading: 'lazy' });
    // The photo opens in the preview panel, large, with Download.
    const open = onOpen ? h('button', {
      type: 'button', class: 'photo-open', 'aria-haspopup': 'dialog',
      'aria-label': `Open ${attachment.filename || 'photo'}`,
      onclick: () => onOpen({
        id: attachment.id, src: path, display_name: attachment.filename, filename: attachment.filename,
        file_type: extensionOf(attachment.filename), file_size: attachment.size, revision: 1, preview_kind: 'image',
      }, open),
    }, img) : img;
    const figure = h('figure', { class: 'attachment attachment-photo', dataset: { attachmentId: attachment.id || '' } },
      open,
      h('figcaption', {},
        h('span', { class: 'photo-name', text: `${attachment.filename} · ${formatSize(attachment.size)}` }),
        downloadButton()));
    // A photo that cannot be loaded now says so in its place, with Retry, and is loaded by itself
    // once the server answers again (retry.js).
    const failed = h('div', { class: 'photo-failure' });
    keepTrying(async () => {
      const blob = await getBlob(path);
      img.src = URL.createObjectURL(blob);
      showKeepingFocus(failed, () => failed.remove(), () => figure.querySelector('button'));
    }, {
      onError: (e, attempt) => {
        // A thread left meanwhile: nothing to show it in.
        if (!figure.isConnected) return false;
        if (!failed.isConnected) figure.insertBefore(failed, figure.lastElementChild);
        showFailure(failed, { message: 'The photo could not be loaded', error: e, attempt, compact: true });
        return undefined;
      },
    });
    return figure;

    function downloadButton() {
      const b = button('Download', 'download', {
        class: 'btn btn-small',
        'aria-label': `Download ${attachment.filename}`,
        // Made only for a photo that has its path (above).
        onclick: () => downloadTo(b, /** @type {string} */ (path), attachment.filename).catch(() => {}),
      });
      return b;
    }
  }
  const published = findPublished?.(attachment);
  if (published) return publishedCard(threadId, published, { onOpen });
  const label = `${typeLabel(attachment.filename)} · ${formatSize(attachment.size)}`;
  const download = button('Download', 'download', {
    class: 'btn card-download',
    'aria-label': `Download ${attachment.filename}`,
    onclick: () => path && downloadTo(download, path, attachment.filename).catch(() => {}),
  });
  if (!path) download.disabled = true;
  return h('article', { class: 'card card-ready attachment', dataset: { attachmentId: attachment.id || '' } },
    h('div', { class: 'card-icon' }, fileIcon(attachment.filename, mime)),
    h('div', { class: 'card-body' },
      h('h3', { class: 'card-title', text: attachment.filename }),
      h('p', { class: 'card-meta', text: label })),
    download);
}

/**
 * Where an attachment's bytes are: its `url` when it is this server's API, else by id.
 * @param {string} threadId
 * @param {Attachment} attachment
 * @returns {string | null}
 */
export function attachmentPath(threadId, attachment) {
  const url = attachment?.url;
  if (typeof url === 'string' && url) {
    try {
      const parsed = new URL(url, window.location.origin);
      if (parsed.origin === window.location.origin && parsed.pathname.startsWith('/api/')) {
        return parsed.pathname + parsed.search;
      }
    } catch {
      // not a URL
    }
  }
  if (attachment?.id) return publishedContentPath(threadId, attachment.id);
  return null;
}

/**
 * The bytes of a `file_send` event's contents.
 * @param {Partial<SentFile> | null | undefined} contents
 * @returns {Uint8Array<ArrayBuffer>}
 */
export function fileSendBytes(contents) {
  if (contents?.encoding === 'base64') {
    const binary = atob(contents.content || '');
    const bytes = new Uint8Array(binary.length);
    for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
    return bytes;
  }
  return new TextEncoder().encode(contents?.content || '');
}

let fileSendCounter = 0;

/**
 * A `file_send` event: the text inline (monospaced, collapsible) with a Download button.
 * @param {SentFile | null | undefined} contents
 * @returns {HTMLElement}
 */
export function fileSendView(contents) {
  const bytes = fileSendBytes(contents);
  const isBase64 = contents?.encoding === 'base64';
  const text = isBase64 ? new TextDecoder('utf-8').decode(bytes) : (contents?.content || '');
  const id = `file-send-${++fileSendCounter}`;
  const lines = text.split('\n').length;
  const startOpen = lines <= 60;
  const pre = h('pre', { class: 'file-send-content', id, tabindex: '0', 'aria-label': `Contents of ${contents?.filename}` },
    h('code', {}, text));
  pre.hidden = !startOpen;
  const toggle = h('button', {
    type: 'button',
    class: 'file-send-toggle',
    'aria-expanded': String(startOpen),
    'aria-controls': id,
    onclick: () => {
      const open = toggle.getAttribute('aria-expanded') !== 'true';
      toggle.setAttribute('aria-expanded', String(open));
      pre.hidden = !open;
    },
  },
  icon('chevron', 'icon chevron'),
  fileIcon(contents?.filename, contents?.mimeType),
  h('span', { class: 'file-send-name', text: contents?.filename || 'file' }),
  h('span', { class: 'file-send-meta', text: `${typeLabel(contents?.filename)} · ${formatSize(contents?.sizeBytes ?? bytes.length)}` }));
  const download = button('Download', 'download', {
    class: 'btn btn-small',
    'aria-label': `Download ${contents?.filename}`,
    onclick: () => saveBlob(new Blob([bytes], { type: contents?.mimeType || 'text/plain' }), contents?.filename || 'file.txt'),
  });
  return h('section', { class: 'file-send', 'aria-label': `File ${contents?.filename}` },
    h('div', { class: 'file-send-head' }, toggle, download),
    isBase64 ? h('p', { class: 'note', text: 'This file is not valid UTF-8; characters that could not be read are shown as �. Download it for the exact bytes.' }) : null,
    pre);
}

/**
 * Why ferry stopped a command (`stoppedBy`), as its row says it.
 * @type {{ timeout: string, [reason: string]: string | undefined }}
 */
const STOPPED_BY = {
  timeout: 'timed out',
  memory: 'stopped: out of memory',
  disk: 'stopped: out of disk space',
};

/**
 * How a command ended, for its row: `kind` is 'ok' (exit 0), 'failed' (another exit code, or
 * a signal) or 'stopped' (ferry stopped it: a timeout or a limit), with an icon and a few words.
 * @param {{ exitCode?: number | null, timedOut?: boolean, stoppedBy?: string | null }} command
 * @returns {{ kind: 'ok' | 'failed' | 'stopped', icon: import('./icons.js').IconName, text: string }}
 */
export function commandStatus({ exitCode, timedOut, stoppedBy }) {
  if (stoppedBy === 'timeout' || (timedOut && !stoppedBy)) return { kind: 'stopped', icon: 'clock', text: STOPPED_BY.timeout };
  if (stoppedBy) return { kind: 'stopped', icon: 'stop', text: STOPPED_BY[stoppedBy] || `stopped: ${stoppedBy}` };
  if (exitCode === 0) return { kind: 'ok', icon: 'check', text: 'exit 0' };
  if (typeof exitCode === 'number') return { kind: 'failed', icon: 'cross', text: `exit ${exitCode}` };
  return { kind: 'failed', icon: 'stop', text: 'ended by a signal' };
}

/**
 * The line a collapsed command shows: its first line that is not blank, with `…` after it when
 * more lines follow.
 * @param {string} command
 */
export function commandSummary(command) {
  const lines = String(command ?? '').split('\n').map((line) => line.trimEnd());
  const first = lines.findIndex((line) => line.trim() !== '');
  if (first < 0) return '';
  const more = lines.slice(first + 1).some((line) => line.trim() !== '');
  return more ? `${lines[first].trim()} …` : lines[first].trim();
}

let commandCounter = 0;

/**
 * The line the server puts where it cut a long output (`… N bytes left out …`), set apart.
 * @param {string} output
 * @param {boolean} truncated
 * @returns {(string | HTMLSpanElement)[]}
 */
function outputParts(output, truncated) {
  const cut = truncated ? /^… [\d,.]+ bytes left out …$/m.exec(output) : null;
  if (!cut) return [output];
  return [output.slice(0, cut.index), h('span', { class: 'command-cut', text: cut[0] }), output.slice(cut.index + cut[0].length)];
}

/**
 * A command the agent ran in its sandbox (`command_executed`), as a chat app shows a code run:
 * one compact row (the command's first line, how it ended, how long it took) that opens, by
 * click, Enter or Space, on the whole command and its output. Everything is text, never markup.
 * @param {ThreadEventOf<'command_executed'>} event
 */
export function commandView(event) {
  const id = `command-${++commandCounter}`;
  const status = commandStatus(event);
  const duration = formatDuration(event.durationMs);
  const output = terminalText(event.output);
  const body = h('div', { class: 'command-body', id, hidden: true },
    h('p', { class: 'command-label' },
      h('span', { text: 'Command' }),
      event.cwd ? h('span', { class: 'command-cwd', text: `in ${event.cwd}` }) : null),
    h('pre', { class: 'command-text', tabindex: '0', 'aria-label': 'Command' }, h('code', {}, event.command || '')),
    h('p', { class: 'command-label' },
      h('span', { text: 'Output' }),
      h('span', { class: 'command-bytes', text: formatSize(event.outputBytes) })),
    output
      ? h('pre', { class: 'command-output', tabindex: '0', 'aria-label': 'Output' }, h('code', {}, outputParts(output, event.outputTruncated)))
      : h('p', { class: 'command-empty', text: 'No output' }),
    event.outputTruncated
      ? h('p', { class: 'command-truncated' }, icon('alert', 'icon icon-sm'),
        h('span', { text: `Output truncated: the start and the end of ${formatSize(event.outputBytes)} are shown.` }))
      : null);
  const summary = commandSummary(event.command);
  const named = summary.length > 200 ? `${summary.slice(0, 200)}…` : summary;
  const toggle = h('button', {
    type: 'button',
    class: 'command-toggle',
    'aria-expanded': 'false',
    'aria-controls': id,
    'aria-label': `Ran ${named || 'an empty command'}, ${status.text}${duration ? `, took ${duration}` : ''}`,
    onclick: () => {
      const open = toggle.getAttribute('aria-expanded') !== 'true';
      toggle.setAttribute('aria-expanded', String(open));
      body.hidden = !open;
    },
  },
  icon('chevron', 'icon chevron'),
  icon('terminal', 'icon command-icon'),
  h('code', { class: 'command-line', text: summary || '(empty command)' }),
  h('span', { class: 'command-meta' },
    h('span', { class: `command-status status-${status.kind}` }, icon(status.icon, 'icon icon-sm'), status.text),
    duration ? h('span', { class: 'command-duration', text: duration }) : null));
  return h('div', { class: `command command-${status.kind}` }, toggle, body);
}

/**
 * The chips of a person's uploads: under the message that sent them, or on their own for an
 * upload made without one. A file with a preview (`previewKind`) opens in the panel, which also
 * downloads it; an image shows itself small. Any other file downloads.
 */
/**
 * @param {string} threadId
 * @param {Upload[]} uploads
 * @param {{ onOpen?: OpenPreview<Upload> }} [options]
 * @returns {HTMLUListElement}
 */
export function uploadChips(threadId, uploads, { onOpen } = {}) {
  return h('ul', { class: 'chips', 'aria-label': 'Attached files' },
    uploads.map((upload) => {
      const content = route('threads', threadId, 'uploads', upload.id, 'content');
      const previewable = onOpen && (upload.previewKind ? upload.previewKind !== 'none' : upload.kind === 'image');
      const label = [
        h('span', { class: 'label chip-name', text: upload.fileName }),
        h('span', { class: 'chip-size', text: formatSize(upload.size) }),
      ];
      const chip = previewable
        ? h('button', {
          type: 'button',
          class: upload.kind === 'image' ? 'chip chip-image' : 'chip',
          title: `Preview ${upload.fileName}`,
          'aria-label': `Preview ${upload.fileName} (${formatSize(upload.size)})`,
          'aria-haspopup': 'dialog',
          onclick: () => onOpen(upload, chip),
        },
        upload.kind === 'image'
          ? thumbnail(content, '', fileIcon(upload.fileName, upload.fileType))
          : fileIcon(upload.fileName, upload.fileType),
        ...label)
        : h('button', {
          type: 'button',
          class: 'chip',
          title: `Download ${upload.fileName}`,
          'aria-label': `Download ${upload.fileName} (${formatSize(upload.size)})`,
          onclick: () => downloadTo(chip, content, upload.fileName).catch(() => {}),
        },
        fileIcon(upload.fileName || extensionOf(upload.fileName), upload.fileType),
        ...label);
      return h('li', { dataset: { uploadId: upload.id } }, chip);
    }));
}
