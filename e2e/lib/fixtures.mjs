// Files the tests exchange: made here (a PNG, Markdown, big blobs) or taken from the
// extraction crate's committed fixtures (a PDF, an XLSX).
import { deflateSync } from 'node:zlib';
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
