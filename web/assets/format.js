// Formatting shared by every screen.

/** The size format of docs/reference/web-ui.md: under 1,024 → `N B`, under 1 MiB → `N.N KB`, else `N.N MB`. */
export function formatSize(bytes) {
  const n = Number(bytes) || 0;
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / (1024 * 1024)).toFixed(1)} MB`;
}

/** `.docx` → `DOCX`; a file name → its extension in capitals; nothing → `FILE`. */
export function typeLabel(fileTypeOrName) {
  const s = String(fileTypeOrName || '');
  const dot = s.lastIndexOf('.');
  const ext = dot >= 0 ? s.slice(dot + 1) : '';
  return ext ? ext.toUpperCase() : 'FILE';
}

/** The extension of a file name, with its dot, lower-cased (`''` when none). */
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

/** A time of day for today's events, a date and time for older ones. */
export function formatWhen(iso) {
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return '';
  const today = new Date();
  return date.toDateString() === today.toDateString()
    ? timeFormat.format(date)
    : dateTimeFormat.format(date);
}

export function formatDateTime(iso) {
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? '' : dateTimeFormat.format(date);
}

/** A limit in bytes in words, as the server says them: `32 MiB`, `512 KiB`, else `N bytes`. */
export function describeLimit(bytes) {
  const n = Number(bytes) || 0;
  if (n >= 1024 * 1024 && n % (1024 * 1024) === 0) return `${n / (1024 * 1024)} MiB`;
  if (n >= 1024 && n % 1024 === 0) return `${n / 1024} KiB`;
  return `${n.toLocaleString('en-US')} bytes`;
}

/**
 * The limit a 413 envelope names, in words: the server says
 * "the body is larger than the limit of 100 MiB (104857600 bytes)".
 */
export function tooLargeText(message) {
  const m = /limit of ([^(]+?)\s*(\(|$)/.exec(String(message || ''));
  if (m) return `Too large — the limit is ${m[1].trim()}`;
  return message ? `Too large — ${message}` : 'Too large for the server';
}
