// Resumable uploads with tus-js-client, the tus project's own client, unchanged, against the
// real `ferry` binary (docs/reference/resumable-uploads.md): an upload whose connection drops
// continues from the bytes the server kept; one whose server is killed (SIGKILL) continues
// after the restart from its last durable part; both finish as the plain upload, byte for byte.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import http from 'node:http';
import * as tus from 'tus-js-client';
import { startFerry, client } from './lib/server.mjs';

const BIN = process.env.FERRY_BIN;
if (!BIN) throw new Error('set FERRY_BIN to the ferry binary');
const MiB = 1 << 20;
const servers = [];
after(async () => {
  for (const s of servers) await s.stop();
});

const sha256 = (bytes) => createHash('sha256').update(bytes).digest('hex');

/** Runs a tus upload until it succeeds or fails; `onChunk(offset, upload)` sees each part land. */
function run(bytes, options, onChunk) {
  return new Promise((resolve, reject) => {
    const upload = new tus.Upload(bytes, {
      retryDelays: null,
      storeFingerprintForResuming: false,
      ...options,
      onChunkComplete: (_size, accepted) => onChunk?.(accepted, upload),
      onSuccess: () => resolve(upload),
      onError: (error) => reject(Object.assign(error, { upload })),
    });
    upload.start();
  });
}

async function offsetOf(base, token, url) {
  const r = await fetch(url, { method: 'HEAD', headers: { Authorization: `Bearer ${token}`, 'Tus-Resumable': '1.0.0' } });
  assert.equal(r.status, 200);
  return Number(r.headers.get('upload-offset'));
}

test('a killed server comes back and the upload continues from its last durable part', async () => {
  let ferry = await startFerry(BIN);
  servers.push(ferry);
  const user = ferry.token(['--user', 'alice']);
  const alice = client(ferry.base, user);
  const thread = await alice.post('/api/threads', { title: 'tus' });
  const bytes = randomBytes(24 * MiB);
  const options = {
    endpoint: `${ferry.base}/api/uploads/resumable`,
    chunkSize: 4 * MiB,
    headers: { Authorization: `Bearer ${user}` },
    metadata: { threadId: thread.id, filename: 'recording.bin' },
  };
  // The server dies (SIGKILL) once two parts are acknowledged.
  let killed;
  const failed = await run(bytes, options, (accepted) => {
    if (accepted >= 8 * MiB && !killed) killed = ferry.crash();
  }).then(() => null, (e) => e);
  assert.ok(failed, 'the upload fails while the server is down');
  await killed;
  const url = failed.upload.url;
  assert.match(url, /\/api\/uploads\/resumable\/[0-9a-f-]{36}$/);

  const again = await startFerry(BIN, {}, ferry);
  servers.push(again);
  ferry = again;
  const kept = await offsetOf(ferry.base, user, url);
  assert.ok(kept >= 8 * MiB && kept < bytes.length, `the acknowledged parts survived (${kept})`);
  assert.equal(kept % (4 * MiB), 0, 'only whole parts were durable at the kill');

  await run(bytes, { ...options, uploadUrl: url });
  const answer = await alice.get(new URL(url).pathname);
  const [upload] = answer.uploads;
  assert.equal(upload.fileName, 'recording.bin');
  assert.equal(upload.size, bytes.length);
  assert.equal(upload.sha256, sha256(bytes));
  const copy = await fetch(`${ferry.base}/api/threads/${thread.id}/sandbox/user_uploads/recording.bin`, { headers: { Authorization: `Bearer ${user}` } });
  assert.equal(sha256(Buffer.from(await copy.arrayBuffer())), sha256(bytes));
});

test('a dropped connection keeps the bytes that arrived, and the upload continues', async () => {
  const ferry = await startFerry(BIN);
  servers.push(ferry);
  const user = ferry.token(['--user', 'bob']);
  const thread = await client(ferry.base, user).post('/api/threads', { title: 'drop' });
  const bytes = randomBytes(16 * MiB);
  const metadata = { threadId: thread.id, filename: 'export.bin' };
  const encoded = Object.entries(metadata).map(([k, v]) => `${k} ${Buffer.from(v).toString('base64')}`).join(',');
  const created = await fetch(`${ferry.base}/api/uploads/resumable`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${user}`, 'Tus-Resumable': '1.0.0', 'Upload-Length': String(bytes.length), 'Upload-Metadata': encoded },
  });
  assert.equal(created.status, 201);
  const url = new URL(created.headers.get('location'), ferry.base).href;
  // One PATCH for the whole file, whose connection drops after six MiB.
  await new Promise((resolve) => {
    const request = http.request(url, {
      method: 'PATCH',
      headers: {
        Authorization: `Bearer ${user}`, 'Tus-Resumable': '1.0.0', 'Upload-Offset': '0',
        'Content-Type': 'application/offset+octet-stream', 'Content-Length': String(bytes.length),
      },
    });
    request.on('error', resolve);
    request.on('close', resolve);
    request.write(bytes.subarray(0, 6 * MiB), () => setTimeout(() => request.destroy(), 300));
  });
  // The server keeps what reached it before the cut (it may take a moment to see the drop).
  let kept = 0;
  for (let i = 0; i < 50 && kept === 0; i++) {
    await new Promise((r) => setTimeout(r, 100));
    kept = await offsetOf(ferry.base, user, url);
  }
  assert.ok(kept > 0 && kept <= 6 * MiB, `bytes that arrived were kept (${kept})`);
  // tus-js-client continues it from there.
  await run(bytes, {
    endpoint: `${ferry.base}/api/uploads/resumable`,
    uploadUrl: url,
    chunkSize: 4 * MiB,
    headers: { Authorization: `Bearer ${user}` },
  });
  const file = await fetch(`${ferry.base}/api/threads/${thread.id}/sandbox/user_uploads/export.bin`, { headers: { Authorization: `Bearer ${user}` } });
  assert.equal(file.status, 200);
  assert.equal(sha256(Buffer.from(await file.arrayBuffer())), sha256(bytes));
});
