// Unit tests of the web app's pure parts, in node: the SSE parser, the size format,
// the 413 wording, token claims, the spaces tree, how a command's row says how it ended, a
// thread's title from its first message and the thread list's order. Run by run.mjs (and on their own with
// `node --test e2e/unit.mjs`).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SseParser } from '../web/assets/sse.js';
import { formatSize, typeLabel, tooLargeText, extensionOf, describeLimit, formatDuration, terminalText, titleFromMessage } from '../web/assets/format.js';
import { byActivity, withThread, fold } from '../web/assets/thread-list.js';
import { claimsOf, tokenState } from '../web/assets/auth.js';
import { buildTree } from '../web/assets/spaces.js';
import { fileSendBytes, commandStatus, commandSummary, publishFailureText } from '../web/assets/cards.js';

test('unit: the SSE parser follows the event-stream rules, across chunk boundaries', () => {
  const got = [];
  const p = new SseParser((m) => got.push(m));
  p.push(': keep-alive\n\nid: 1\ndata: {"a":');
  p.push('1}\n\nid: 2\r');
  p.push('\nevent: message\r\ndata:{"b":2}\r\n\r\n');
  p.push('data: line one\ndata: line two\n\n');
  p.push('id: 3\ndata\n\nretry: 1500\n\n');
  assert.deepEqual(got, [
    { id: '1', event: 'message', data: '{"a":1}' },
    { id: '2', event: 'message', data: '{"b":2}' },
    { id: '2', event: 'message', data: 'line one\nline two' },
    { id: '3', event: 'message', data: '' },
  ]);
  assert.equal(p.retry, 1500);
  const held = [];
  const q = new SseParser((m) => held.push(m));
  q.push('data: x\r');
  assert.equal(held.length, 0, 'a CR at the end of a chunk waits for its LF');
  q.push('\n\r\n');
  assert.deepEqual(held, [{ id: '', event: 'message', data: 'x' }]);
});

test("unit: sizes read as docs/reference/web-ui.md formats them", () => {
  assert.equal(formatSize(0), '0 B');
  assert.equal(formatSize(1023), '1023 B');
  assert.equal(formatSize(1024), '1.0 KB');
  assert.equal(formatSize(45678), '44.6 KB');
  assert.equal(formatSize(1024 * 1024 - 1), '1024.0 KB');
  assert.equal(formatSize(1024 * 1024), '1.0 MB');
  assert.equal(formatSize(30 * 1000 * 1000), '28.6 MB');
  assert.equal(typeLabel('.docx'), 'DOCX');
  assert.equal(typeLabel('report.tar.gz'), 'GZ');
  assert.equal(typeLabel('README'), 'FILE');
  assert.equal(extensionOf('a/b/.env'), '');
  assert.equal(extensionOf('Notes.MD'), '.md');
});

test('unit: a 413 says the limit in words', () => {
  assert.equal(tooLargeText('the body is larger than the limit of 100 MiB (104857600 bytes)'), 'Too large — the limit is 100 MB');
  assert.equal(tooLargeText('File exceeds the 20KB size limit (21.0KB).'), 'Too large — File exceeds the 20KB size limit (21.0KB).');
  assert.equal(tooLargeText(''), 'Too large for the server');
});

test('unit: token claims are read without trusting them, and expiry is checked', () => {
  const b64 = (v) => Buffer.from(JSON.stringify(v)).toString('base64url');
  const token = (claims) => `${b64({ alg: 'HS256' })}.${b64(claims)}.sig`;
  assert.equal(claimsOf(token({ sub: 'ana', exp: 10 })).sub, 'ana');
  assert.equal(claimsOf('not a token'), null);
  assert.equal(tokenState(token({ sub: 'ana', exp: 10 }), 20_000).state, 'expired');
  assert.equal(tokenState(token({ sub: 'ana', exp: 100 }), 20_000).state, 'ok');
  assert.equal(tokenState(token({ exp: 100 }), 20_000).state, 'malformed');
  assert.equal(tokenState('', 0).state, 'missing');
  assert.equal(claimsOf(token({ sub: 'Zoë' })).sub, 'Zoë', 'UTF-8 claims decode');
});

test('unit: a space\'s files and folders become a tree, empty folders too', () => {
  const tree = buildTree([
    { path: 'ideas', type: 'dir' },
    { path: 'ideas/a.md', type: 'file' },
    { path: 'ideas/old/b.md', type: 'file' },
    { path: 'logo.png', type: 'file' },
    { path: 'reports/2026', type: 'dir' },
  ]);
  assert.deepEqual([...tree.dirs.keys()], ['ideas', 'reports']);
  const reports = tree.dirs.get('reports');
  assert.deepEqual([...reports.dirs.keys()], ['2026']);
  assert.equal(reports.dirs.get('2026').files.length + reports.dirs.get('2026').dirs.size, 0, 'an empty folder is a node');
  assert.deepEqual(tree.files.map((f) => f.name), ['logo.png']);
  const ideas = tree.dirs.get('ideas');
  assert.deepEqual(ideas.files.map((f) => f.name), ['a.md']);
  assert.deepEqual(ideas.dirs.get('old').files.map((f) => f.path), ['ideas/old/b.md']);
});

test('unit: a failed publish is said with the file\'s name, never its sandbox path', () => {
  assert.equal(publishFailureText({ code: 'NOT_FOUND', message: 'File not found: /sandbox/outputs/missing.pdf', filePath: '/sandbox/outputs/missing.pdf' }),
    'The agent\'s file missing.pdf could not be found.');
  assert.equal(publishFailureText({ code: 'REQUEST_TOO_LARGE', message: 'the file is 41943041 bytes, over the publish limit of 40 MiB (41943040 bytes)', filePath: '/sandbox/outputs/all.bin' }),
    'all.bin is too large to publish: the limit is 40 MB.');
  assert.equal(publishFailureText({ code: 'INVALID_PATH', message: 'cannot publish /sandbox/tmp/x.txt, a folder.' }), 'Cannot publish x.txt, a folder.');
  assert.equal(publishFailureText({}), 'Something went wrong.');
});

test('unit: file_send contents decode from base64 to the exact bytes', () => {
  assert.deepEqual([...fileSendBytes({ encoding: 'base64', content: Buffer.from([0x63, 0x61, 0x66, 0xe9, 0x00, 0xff]).toString('base64') })], [0x63, 0x61, 0x66, 0xe9, 0x00, 0xff]);
  assert.deepEqual([...fileSendBytes({ encoding: 'utf-8', content: 'é' })], [0xc3, 0xa9]);
  assert.deepEqual([...fileSendBytes({ encoding: 'base64', content: '' })], []);
});

test('unit: a limit is said in words, in the units sizes are shown in', () => {
  assert.equal(describeLimit(32 * 1024 * 1024), '32 MB');
  assert.equal(describeLimit(100 * 1024 * 1024), '100 MB');
  assert.equal(describeLimit(512 * 1024), '512 KB');
  assert.equal(describeLimit(200000), '200,000 bytes');
  assert.equal(tooLargeText('the body is larger than the limit of 32 MiB (33554432 bytes)'), 'Too large — the limit is 32 MB');
  // A file over the limit and the limit read in one system.
  assert.equal(formatSize(300 * 1000 * 1000), '286.1 MB');
});

test('unit: a command\'s duration is short and readable', () => {
  assert.equal(formatDuration(0), '0 ms');
  assert.equal(formatDuration(42), '42 ms');
  assert.equal(formatDuration(100), '0.1 s');
  assert.equal(formatDuration(412), '0.4 s');
  assert.equal(formatDuration(9949), '9.9 s');
  assert.equal(formatDuration(9950), '10 s');
  assert.equal(formatDuration(59_400), '59 s');
  assert.equal(formatDuration(125_000), '2 min 5 s');
  assert.equal(formatDuration(120_000), '2 min');
  assert.equal(formatDuration(7_200_000), '2 h');
  assert.equal(formatDuration(3_780_000), '1 h 3 min');
  assert.equal(formatDuration(undefined), '');
  assert.equal(formatDuration(-1), '');
});

test('unit: a command\'s row says how it ended', () => {
  assert.deepEqual(commandStatus({ exitCode: 0, timedOut: false, stoppedBy: null }), { kind: 'ok', icon: 'check', text: 'exit 0' });
  assert.deepEqual(commandStatus({ exitCode: 2, timedOut: false, stoppedBy: null }), { kind: 'failed', icon: 'cross', text: 'exit 2' });
  assert.equal(commandStatus({ exitCode: null, timedOut: true, stoppedBy: 'timeout' }).text, 'timed out');
  assert.equal(commandStatus({ exitCode: null, timedOut: true, stoppedBy: null }).text, 'timed out');
  assert.equal(commandStatus({ exitCode: null, timedOut: false, stoppedBy: 'memory' }).text, 'stopped: out of memory');
  assert.equal(commandStatus({ exitCode: null, timedOut: false, stoppedBy: 'disk' }).kind, 'stopped');
  assert.equal(commandStatus({ exitCode: null, timedOut: false, stoppedBy: 'something new' }).text, 'stopped: something new');
  assert.deepEqual(commandStatus({ exitCode: null, timedOut: false, stoppedBy: null }), { kind: 'failed', icon: 'stop', text: 'ended by a signal' });
  assert.equal(commandSummary('echo hi; exit 3'), 'echo hi; exit 3');
  assert.equal(commandSummary('\n  \ncd /tmp && \\\n  make all\n'), 'cd /tmp && \\ …');
  assert.equal(commandSummary('ls   \n\n'), 'ls');
  assert.equal(commandSummary(''), '');
});

test('unit: a command\'s output is shown as a terminal leaves it, as text', () => {
  assert.equal(terminalText('\x1b[1;31merror\x1b[0m: no such file\n'), 'error: no such file\n');
  assert.equal(terminalText('a\r\nb\r\n'), 'a\nb\n');
  assert.equal(terminalText(' 10%\r 50%\r100%\ndone'), '100%\ndone');
  assert.equal(terminalText('abcdef\rXY'), 'XYcdef');
  assert.equal(terminalText('\x1b]0;title\x07ok\x1b(B\x1b[m'), 'ok');
  assert.equal(terminalText('bell\x07 and tab\tkept'), 'bell and tab\tkept');
  assert.equal(terminalText('<b>not markup</b> & é 😀'), '<b>not markup</b> & é 😀');
  assert.equal(terminalText(null), '');
});

test('unit: a thread is titled from its first message as chat apps do', () => {
  assert.equal(titleFromMessage('Summarise the Q3 numbers'), 'Summarise the Q3 numbers');
  assert.equal(titleFromMessage('\n\n## **Plan** for   `today`\nmore'), 'Plan for today');
  assert.equal(titleFromMessage('- first item\n- second'), 'first item');
  const long = 'Please read the attached spreadsheet and tell me which regions grew fastest this year';
  const title = titleFromMessage(long);
  assert.ok(title.endsWith('…') && title.length <= 61, title);
  assert.ok(long.startsWith(title.slice(0, -1)), 'cut at a word, nothing changed before it');
  assert.ok(!title.slice(0, -1).endsWith(' '));
  assert.equal(titleFromMessage('   \n  '), '');
  assert.equal(titleFromMessage(''), '');
});

test('unit: the thread list keeps the most recently active thread on top', () => {
  const a = { id: 'a', createdAt: '2026-11-01T00:00:00.000Z', lastActivityAt: '2026-11-03T00:00:00.000Z' };
  const b = { id: 'b', createdAt: '2026-11-02T00:00:00.000Z', lastActivityAt: '2026-11-02T00:00:00.000Z' };
  const c = { id: 'c', createdAt: '2026-11-02T00:00:00.000Z', lastActivityAt: '2026-11-02T00:00:00.000Z' };
  assert.deepEqual([b, a, c].sort(byActivity).map((t) => t.id), ['a', 'c', 'b'], 'ids break ties, as the server does');
  const busier = { ...b, lastActivityAt: '2026-11-04T00:00:00.000Z', title: 'now busy' };
  assert.deepEqual(withThread([a, c, b], busier).map((t) => t.id), ['b', 'a', 'c']);
  assert.equal(withThread([a, c, b], busier)[0].title, 'now busy');
  assert.equal(fold('Résumé ÅRHUS'), 'resume arhus');
});
