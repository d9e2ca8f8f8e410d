// Formatting shared by every screen.

/**
 * The size format of docs/reference/web-ui.md: under 1,024 → `N B`, under 1 MiB → `N.N KB`, else `N.N MB`.
 * @param {number | null | undefined} bytes Nothing reads as 0 B.
 * @returns {string}
 */
export function formatSize(bytes) {
  const n = Number(bytes) || 0;
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / (1024 * 1024)).toFixed(1)} MB`;
}

/**
 * `.docx` → `DOCX`; a file name → its extension in capitals; nothing → `FILE`.
 * @param {string | null | undefined} fileTypeOrName
 * @returns {string}
 */
export function typeLabel(fileTypeOrName) {
  const s = String(fileTypeOrName || '');
  const dot = s.lastIndexOf('.');
  const ext = dot >= 0 ? s.slice(dot + 1) : '';
  return ext ? ext.toUpperCase() : 'FILE';
}

/**
 * The extension of a file name, with its dot, lower-cased (`''` when none).
 * @param {string | null | undefined} name
 * @returns {string}
 */
export function extensionOf(name) {
  const s = String(name || '');
  const base = s.slice(s.lastIndexOf('/') + 1);
  const dot = base.lastIndexOf('.');
  return dot > 0 ? base.slice(dot).toLowerCase() : '';
}

const timeFormat = new Intl.DateTimeFormat(undefined, { hour: '2-digit', minute: '2-digit' });
const dateTimeFormat = new Intl.DateTimeFormat(undefined, {
  year: 'numeric', month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit',
});

/**
 * A time of day for today's events, a date and time for older ones.
 * @param {string} iso
 * @returns {string}
 */
export function formatWhen(iso) {
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return '';
  const today = new Date();
  return date.toDateString() === today.toDateString()
    ? timeFormat.format(date)
    : dateTimeFormat.format(date);
}

/**
 * A date and time, or '' for a time that cannot be read.
 * @param {string} iso
 * @returns {string}
 */
export function formatDateTime(iso) {
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? '' : dateTimeFormat.format(date);
}

/**
 * A limit in bytes in words, in the units sizes are shown in (`formatSize`: KB and MB of 1,024):
 * `32 MB`, `512 KB`, else `N bytes` — so a file's size and the limit it is over read alike.
 * @param {number} bytes
 * @returns {string}
 */
export function describeLimit(bytes) {
  const n = Number(bytes) || 0;
  if (n >= 1024 * 1024 && n % (1024 * 1024) === 0) return `${n / (1024 * 1024)} MB`;
  if (n >= 1024 && n % 1024 === 0) return `${n / 1024} KB`;
  return `${n.toLocaleString('en-US')} bytes`;
}

/**
 * The limit a 413 envelope names, in words, or null: the server says "the body is larger than
 * the limit of 100 MiB (104857600 bytes)", or "… over the publish limit of 40 MiB (… bytes)".
 * @param {string | null | undefined} message
 * @returns {string | null}
 */
export function limitIn(message) {
  const m = /limit of ([^(]+?)\s*(\(|$)/.exec(String(message || ''));
  // Said in the units sizes are shown in (the server's MiB is the page's MB).
  return m ? m[1].trim().replace(/\b([KMG])iB\b/, '$1B') : null;
}

/**
 * What an upload refused as too large says: the limit, in words.
 * @param {string} message
 * @returns {string}
 */
export function tooLargeText(message) {
  const limit = limitIn(message);
  if (limit) return `Too large — the limit is ${limit}`;
  return message ? `Too large — ${message}` : 'Too large for the server';
}

/**
 * How long something ran, short: `12 ms` under a tenth of a second, `0.4 s` and `9.9 s` under
 * ten, `42 s` under a minute, then `2 min 5 s`, `3 min` and `1 h 3 min`.
 * @param {number | null | undefined} ms Nothing (or a negative time) reads as ''.
 * @returns {string}
 */
export function formatDuration(ms) {
  const n = Number(ms);
  if (!Number.isFinite(n) || n < 0) return '';
  if (n < 100) return `${Math.round(n)} ms`;
  if (n < 9950) return `${(n / 1000).toFixed(1)} s`;
  const seconds = Math.round(n / 1000);
  if (seconds < 60) return `${seconds} s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return seconds % 60 ? `${minutes} min ${seconds % 60} s` : `${minutes} min`;
  return minutes % 60 ? `${Math.floor(minutes / 60)} h ${minutes % 60} min` : `${Math.floor(minutes / 60)} h`;
}

// A terminal's control sequences: CSI (colours, cursor moves), OSC (titles, links; ended by BEL
// or ESC \), character set choices (`ESC ( B`), and the two-character escapes. None of them is
// text to show.
const ESCAPES = /\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()*+][ -~]|\x1b[@-Z\\-_]/g;
// Other control characters, but for the tab and the line feed.
const CONTROLS = /[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]/g;

/**
 * A program's output as a terminal would have left it on screen, as plain text: without
 * colour and cursor codes, and of a line rewritten after carriage returns (a progress bar) only
 * what was last written over it. Line endings may be `\r\n`.
 * @param {string | null | undefined} output
 * @returns {string}
 */
export function terminalText(output) {
  return String(output ?? '')
    .replace(ESCAPES, '')
    .split('\n')
    .map((line) => {
      const passes = (line.endsWith('\r') ? line.slice(0, -1) : line).split('\r');
      // Each pass after a carriage return writes over the start of the line.
      let shown = Array.from(passes[0]);
      for (const pass of passes.slice(1)) {
        const chars = Array.from(pass);
        shown = chars.concat(shown.slice(chars.length));
      }
      return shown.join('').replace(CONTROLS, '');
    })
    .join('\n');
}

/** Characters of a message that title a new thread at most (a word is never cut). */
const TITLE_CHARS = 60;

/**
 * The title a thread takes from its first message, as chat apps title a conversation: the
 * text's first line with its Markdown marks and runs of spaces dropped, cut at a word before
 * 60 characters with `…`; an empty text gives ''.
 * @param {string} text
 * @returns {string}
 */
export function titleFromMessage(text) {
  const line = String(text || '')
    .split('\n')
    .map((l) => l.replace(/^\s*(?:#{1,6}\s+|[-*+]\s+|>\s*|\d+[.)]\s+)/, '').replace(/[*_`~]+/g, '').replace(/\s+/g, ' ').trim())
    .find((l) => l.length > 0) || '';
  if (line.length <= TITLE_CHARS) return line;
  const cut = line.slice(0, TITLE_CHARS);
  const space = cut.lastIndexOf(' ');
  return `${(space > TITLE_CHARS / 2 ? cut.slice(0, space) : cut).replace(/[\s,;:.-]+$/, '')}…`;
}
