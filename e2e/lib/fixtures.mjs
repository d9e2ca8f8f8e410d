// Files the tests exchange: made here (a PNG, Markdown, big blobs) or taken from the
// extraction crate's committed fixtures (a PDF, an XLSX).
import { deflateSync, inflateSync } from 'node:zlib';
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync, openSync, writeSync, closeSync } from 'node:fs';
import { join } from 'node:path';

const CRC_TABLE = (() => {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
})();

function crc32(bytes) {
  let c = 0xffffffff;
  for (const b of bytes) c = CRC_TABLE[(c ^ b) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

function chunk(type, data) {
  const out = Buffer.alloc(12 + data.length);
  out.writeUInt32BE(data.length, 0);
  out.write(type, 4, 'ascii');
  data.copy(out, 8);
  out.writeUInt32BE(crc32(out.subarray(4, 8 + data.length)), 8 + data.length);
  return out;
}

/** An RGB PNG of a diagonal gradient with a dark square in the middle. */
export function makePng(width = 96, height = 64) {
  const raw = Buffer.alloc((width * 3 + 1) * height);
  for (let y = 0; y < height; y++) {
    const row = y * (width * 3 + 1);
    raw[row] = 0;
    for (let x = 0; x < width; x++) {
      const inSquare = Math.abs(x - width / 2) < width / 6 && Math.abs(y - height / 2) < height / 6;
      const i = row + 1 + x * 3;
      raw[i] = inSquare ? 20 : Math.round((255 * x) / width);
      raw[i + 1] = inSquare ? 30 : 120;
      raw[i + 2] = inSquare ? 60 : Math.round((255 * y) / height);
    }
  }
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = 2; // truecolour
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', ihdr),
    chunk('IDAT', deflateSync(raw)),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

/**
 * Decodes a PNG as Chromium writes screenshots (8-bit RGB or RGBA, not interlaced) into
 * `{ width, height, rgba }`, four bytes a pixel, so a test can look at what was drawn.
 */
export function readPng(png) {
  let pos = 8;
  let header = null;
  const data = [];
  while (pos < png.length) {
    const length = png.readUInt32BE(pos);
    const type = png.toString('ascii', pos + 4, pos + 8);
    const body = png.subarray(pos + 8, pos + 8 + length);
    if (type === 'IHDR') header = { width: body.readUInt32BE(0), height: body.readUInt32BE(4), depth: body[8], color: body[9], interlace: body[12] };
    else if (type === 'IDAT') data.push(body);
    else if (type === 'IEND') break;
    pos += 12 + length;
  }
  const { width, height, depth, color, interlace } = header;
  if (depth !== 8 || (color !== 2 && color !== 6) || interlace !== 0) throw new Error(`an unexpected PNG: depth ${depth}, colour type ${color}, interlace ${interlace}`);
  const bpp = color === 6 ? 4 : 3;
  const stride = width * bpp;
  const raw = inflateSync(Buffer.concat(data));
  const rgba = Buffer.alloc(width * height * 4);
  let prev = Buffer.alloc(stride);
  for (let y = 0; y < height; y++) {
    const filter = raw[y * (stride + 1)];
    const line = Buffer.from(raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1)));
    for (let i = 0; i < stride; i++) {
      const a = i >= bpp ? line[i - bpp] : 0;
      const b = prev[i];
      const c = i >= bpp ? prev[i - bpp] : 0;
      let add = 0;
      if (filter === 1) add = a;
      else if (filter === 2) add = b;
      else if (filter === 3) add = (a + b) >> 1;
      else if (filter === 4) {
        const p = a + b - c;
        const [pa, pb, pc] = [Math.abs(p - a), Math.abs(p - b), Math.abs(p - c)];
        add = pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
      }
      line[i] = (line[i] + add) & 0xff;
    }
    for (let x = 0; x < width; x++) {
      const o = (y * width + x) * 4;
      rgba[o] = line[x * bpp];
      rgba[o + 1] = line[x * bpp + 1];
      rgba[o + 2] = line[x * bpp + 2];
      rgba[o + 3] = bpp === 4 ? line[x * bpp + 3] : 255;
    }
    prev = line;
  }
  return { width, height, rgba };
}

/**
 * How well the text in a screenshot stands out from what it is written on: the WCAG contrast
 * ratio between its most common colour (the background) and its pixel farthest from it in
 * luminance (the core of a letter's stroke), and how many pixels contrast with the background
 * at least 3:1 (text, not a faint border or the edge of a letter).
 */
export function textContrast(png) {
  const { width, height, rgba } = readPng(png);
  const channel = (v) => {
    const s = v / 255;
    return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
  };
  const luminance = (o) => 0.2126 * channel(rgba[o]) + 0.7152 * channel(rgba[o + 1]) + 0.0722 * channel(rgba[o + 2]);
  const ratio = (l1, l2) => (Math.max(l1, l2) + 0.05) / (Math.min(l1, l2) + 0.05);
  const counts = new Map();
  let background = 0;
  let most = 0;
  for (let o = 0; o < width * height * 4; o += 4) {
    const key = (rgba[o] << 16) | (rgba[o + 1] << 8) | rgba[o + 2];
    const n = (counts.get(key) || 0) + 1;
    counts.set(key, n);
    if (n > most) {
      most = n;
      background = o;
    }
  }
  const back = luminance(background);
  let far = back;
  let textPixels = 0;
  for (let o = 0; o < width * height * 4; o += 4) {
    const l = luminance(o);
    if (Math.abs(l - back) > Math.abs(far - back)) far = l;
    if (ratio(l, back) >= 3) textPixels += 1;
  }
  return { contrast: ratio(far, back), textPixels, background: back, pixels: width * height };
}

export const MARKDOWN = `# Launch plan

The plan for the **tea shop** launch, as discussed.

| Week | Task | Owner |
| --- | --- | --- |
| 1 | Find a location | Ana |
| 2 | Order tea | Ben |

- [x] Budget approved
- [ ] Sign the lease
`;

export function sha256(bytes) {
  return createHash('sha256').update(bytes).digest('hex');
}

/** Writes `size` bytes of a repeating, non-constant pattern to a file (without holding it). */
export function writeBigFile(path, size) {
  const block = Buffer.alloc(1 << 20);
  for (let i = 0; i < block.length; i++) block[i] = (i * 31 + (i >> 8)) & 0xff;
  const fd = openSync(path, 'w');
  let left = size;
  let n = 0;
  while (left > 0) {
    block[0] = n++ & 0xff; // each MiB differs a little
    const len = Math.min(left, block.length);
    writeSync(fd, block, 0, len);
    left -= len;
  }
  closeSync(fd);
}

export function fixture(repoRoot, name) {
  return readFileSync(join(repoRoot, 'crates', 'ferry-extract', 'tests', 'fixtures', name));
}

export function writeFile(path, bytes) {
  writeFileSync(path, bytes);
  return path;
}
