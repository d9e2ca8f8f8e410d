// Icons as path data (24×24 grid, drawn with strokes in app.css). Drawn for ferry.
import { svgIcon } from './dom.js';

const P = {
  file: ['M14 3H7a2 2 0 0 0-2 2v14a2 2 0 0 0 2 2h10a2 2 0 0 0 2-2V8z', 'M14 3v5h5'],
  text: ['M14 3H7a2 2 0 0 0-2 2v14a2 2 0 0 0 2 2h10a2 2 0 0 0 2-2V8z', 'M14 3v5h5', 'M9 13h6', 'M9 17h6', 'M9 9h2'],
  doc: ['M14 3H7a2 2 0 0 0-2 2v14a2 2 0 0 0 2 2h10a2 2 0 0 0 2-2V8z', 'M14 3v5h5', 'M8.5 12l1.2 5 1.3-4 1.3 4 1.2-5'],
  pdf: ['M14 3H7a2 2 0 0 0-2 2v14a2 2 0 0 0 2 2h10a2 2 0 0 0 2-2V8z', 'M14 3v5h5', 'M8 17v-5h1.5a1.5 1.5 0 0 1 0 3H8', 'M13 12v5h1a2 2 0 0 0 2-2v-1a2 2 0 0 0-2-2z'],
  sheet: ['M14 3H7a2 2 0 0 0-2 2v14a2 2 0 0 0 2 2h10a2 2 0 0 0 2-2V8z', 'M14 3v5h5', 'M8 12h8v6H8z', 'M8 15h8', 'M12 12v6'],
  slides: ['M14 3H7a2 2 0 0 0-2 2v14a2 2 0 0 0 2 2h10a2 2 0 0 0 2-2V8z', 'M14 3v5h5', 'M8 11h8v5H8z', 'M12 16v2'],
  image: ['M5 4h14a1 1 0 0 1 1 1v14a1 1 0 0 1-1 1H5a1 1 0 0 1-1-1V5a1 1 0 0 1 1-1z', 'M4 16l5-5 4 4 2-2 5 5', 'M15.5 8.5h.01'],
  code: ['M14 3H7a2 2 0 0 0-2 2v14a2 2 0 0 0 2 2h10a2 2 0 0 0 2-2V8z', 'M14 3v5h5', 'M10 12l-2 2 2 2', 'M14 12l2 2-2 2'],
  archive: ['M14 3H7a2 2 0 0 0-2 2v14a2 2 0 0 0 2 2h10a2 2 0 0 0 2-2V8z', 'M14 3v5h5', 'M11 5h1', 'M11 8h1', 'M11 11h1', 'M10.5 14h2v3h-2z'],
  video: ['M4 6h11a1 1 0 0 1 1 1v10a1 1 0 0 1-1 1H4a1 1 0 0 1-1-1V7a1 1 0 0 1 1-1z', 'M16 10l5-3v10l-5-3'],
  download: ['M12 4v11', 'M7 10l5 5 5-5', 'M5 20h14'],
  upload: ['M12 20V9', 'M7 14l5-5 5 5', 'M5 4h14'],
  close: ['M6 6l12 12', 'M18 6L6 18'],
  clip: ['M20 11.5l-8.1 8.1a5 5 0 0 1-7.1-7.1L13 4.3a3.3 3.3 0 0 1 4.7 4.7l-8.2 8.2a1.7 1.7 0 0 1-2.4-2.4L14.6 7.3'],
  send: ['M4 12l16-8-6 16-2.5-6.5z', 'M11.5 13.5L20 4'],
  plus: ['M12 5v14', 'M5 12h14'],
  menu: ['M4 7h16', 'M4 12h16', 'M4 17h16'],
  more: ['M5 12h.01', 'M12 12h.01', 'M19 12h.01'],
  folder: ['M3 7a2 2 0 0 1 2-2h4l2 2h8a2 2 0 0 1 2 2v8a2 2 0 0 1-2 2H5a2 2 0 0 1-2-2z'],
  'folder-plus': ['M3 7a2 2 0 0 1 2-2h4l2 2h8a2 2 0 0 1 2 2v8a2 2 0 0 1-2 2H5a2 2 0 0 1-2-2z', 'M12 10.5v5', 'M9.5 13h5'],
  check: ['M12 21a9 9 0 1 0 0-18 9 9 0 0 0 0 18z', 'M8 12.5l2.5 2.5L16 9.5'],
  alert: ['M12 21a9 9 0 1 0 0-18 9 9 0 0 0 0 18z', 'M12 7.5v5.5', 'M12 16.5h.01'],
  cross: ['M12 21a9 9 0 1 0 0-18 9 9 0 0 0 0 18z', 'M9 9l6 6', 'M15 9l-6 6'],
  clock: ['M12 21a9 9 0 1 0 0-18 9 9 0 0 0 0 18z', 'M12 7v5l3.5 2'],
  stop: ['M12 21a9 9 0 1 0 0-18 9 9 0 0 0 0 18z', 'M9.5 9.5h5v5h-5z'],
  terminal: ['M4 5h16a1 1 0 0 1 1 1v12a1 1 0 0 1-1 1H4a1 1 0 0 1-1-1V6a1 1 0 0 1 1-1z', 'M7 9.5l3 2.5-3 2.5', 'M12.5 15H17'],
  spinner: ['M12 3a9 9 0 1 0 9 9'],
  chat: ['M5 5h14a1 1 0 0 1 1 1v9a1 1 0 0 1-1 1H10l-4 3.5V16H5a1 1 0 0 1-1-1V6a1 1 0 0 1 1-1z'],
  signout: ['M9 4H6a1 1 0 0 0-1 1v14a1 1 0 0 0 1 1h3', 'M16 16l4-4-4-4', 'M20 12H10'],
  chevron: ['M9 6l6 6-6 6'],
  'arrow-down': ['M12 5v14', 'M6 13l6 6 6-6'],
  plug: ['M9 3v5', 'M15 3v5', 'M6 8h12v3a6 6 0 0 1-12 0z', 'M12 17v4'],
  refresh: ['M20 11a8 8 0 1 0-2.3 5.7', 'M20 5v6h-6'],
  pencil: ['M4 20h4L19 9l-4-4L4 16z', 'M13.5 6.5l4 4'],
  trash: ['M4 7h16', 'M10 11v6', 'M14 11v6', 'M6 7l1 13h10l1-13', 'M9 7V4h6v3'],
  search: ['M11 18a7 7 0 1 0 0-14 7 7 0 0 0 0 14z', 'M16 16l4.5 4.5'],
  person: ['M12 12a4 4 0 1 0 0-8 4 4 0 0 0 0 8z', 'M4.5 20a7.5 7.5 0 0 1 15 0'],
  agent: ['M6 9h12a2 2 0 0 1 2 2v6a2 2 0 0 1-2 2H6a2 2 0 0 1-2-2v-6a2 2 0 0 1 2-2z', 'M12 5.5V9', 'M12 4.5h.01', 'M9.5 14h.01', 'M14.5 14h.01'],
};

/**
 * The name of one of ferry's icons.
 * @typedef {keyof typeof P} IconName
 */

/**
 * An icon by name (the file icon for a name it does not know).
 * @param {IconName} name
 * @param {string} [className]
 * @returns {SVGSVGElement}
 */
export function icon(name, className = 'icon') {
  return svgIcon(P[name] || P.file, className);
}

/** @type {Partial<Record<string, IconName>>} */
const BY_EXTENSION = {
  '.pdf': 'pdf',
  '.doc': 'doc', '.docx': 'doc', '.odt': 'doc', '.rtf': 'doc',
  '.xls': 'sheet', '.xlsx': 'sheet', '.ods': 'sheet', '.csv': 'sheet', '.tsv': 'sheet',
  '.ppt': 'slides', '.pptx': 'slides', '.odp': 'slides', '.key': 'slides',
  '.png': 'image', '.jpg': 'image', '.jpeg': 'image', '.gif': 'image', '.webp': 'image', '.svg': 'image', '.bmp': 'image',
  '.txt': 'text', '.md': 'text', '.log': 'text', '.ini': 'text', '.cfg': 'text', '.conf': 'text', '.toml': 'text', '.yaml': 'text', '.yml': 'text',
  '.json': 'code', '.xml': 'code', '.html': 'code', '.htm': 'code', '.css': 'code', '.js': 'code', '.ts': 'code', '.jsx': 'code', '.tsx': 'code',
  '.py': 'code', '.rb': 'code', '.go': 'code', '.rs': 'code', '.java': 'code', '.c': 'code', '.cpp': 'code', '.h': 'code', '.hpp': 'code',
  '.sh': 'code', '.bash': 'code', '.zsh': 'code', '.sql': 'code', '.graphql': 'code',
  '.zip': 'archive', '.tar': 'archive', '.gz': 'archive', '.tgz': 'archive', '.7z': 'archive',
  '.mp4': 'video', '.mov': 'video', '.webm': 'video',
};

/**
 * The icon name for a file, from its extension (`.docx` or a file name) or MIME type.
 * @param {string | null} [extensionOrName]
 * @param {string} [mime]
 * @returns {IconName}
 */
export function fileIconName(extensionOrName = '', mime = '') {
  const lower = String(extensionOrName).toLowerCase();
  const dot = lower.lastIndexOf('.');
  const ext = dot >= 0 ? lower.slice(dot) : '';
  if (BY_EXTENSION[ext]) return BY_EXTENSION[ext];
  if (mime.startsWith('image/')) return 'image';
  if (mime.startsWith('video/')) return 'video';
  if (mime.startsWith('text/')) return 'text';
  if (mime === 'application/pdf') return 'pdf';
  return 'file';
}

/**
 * A file's icon, from its extension (`.docx` or a file name) or MIME type.
 * @param {string | undefined} extensionOrName
 * @param {string} [mime]
 * @returns {SVGSVGElement}
 */
export function fileIcon(extensionOrName, mime) {
  const name = fileIconName(extensionOrName, mime);
  const el = icon(name, `icon file-icon file-icon-${name}`);
  return el;
}
