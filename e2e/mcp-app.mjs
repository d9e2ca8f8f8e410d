// ferry's file card as an MCP App, inside a host page driven by the official MCP Apps host
// bridge (AppBridge of @modelcontextprotocol/ext-apps), in Debian's Chromium: an agent
// publishes over /mcp, the host fetches the card the tool names, frames it sandboxed as hosts
// do, and hands it the tool's result; the card's reads go back through the host to /mcp with
// the host's token, as a real host's MCP client would send them.
//
//   FERRY_BIN=target/debug/ferry node e2e/mcp-app.mjs
//
// FERRY_CHROMIUM overrides /usr/bin/chromium; FERRY_E2E_ARTIFACTS the screenshot folder.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';
import { chromium } from 'playwright-core';
import { startFerry, client, drawsSlides } from './lib/server.mjs';
import { makePng, MARKDOWN, sha256, fixture } from './lib/fixtures.mjs';

const HERE = dirname(fileURLToPath(import.meta.url));
const REPO = resolve(HERE, '..');
const BIN = process.env.FERRY_BIN || join(REPO, 'target', 'debug', 'ferry');
const CHROMIUM = process.env.FERRY_CHROMIUM || '/usr/bin/chromium';
const ARTIFACTS = process.env.FERRY_E2E_ARTIFACTS || join(REPO, 'target', 'e2e-artifacts');
const CARD_URI = 'ui://ferry/file-card.html';

const S = {};
const problems = []; // console errors and page errors, in the host or the card

// The host page: the bridge, a frame for the card, and a theme it can change.
const HOST_PAGE = `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>MCP Apps host</title>
<style>body { margin: 0; padding: 16px; background: #0b0b0c; } iframe { width: 560px; border: 0; display: block; }</style>
<script src="/bridge.js"></script></head>
<body><div id="slot"></div></body></html>`;

// Runs in the host page: shows one tool result in a fresh card frame.
async function showCard({ html, toolInput, toolResult, hostContext }) {
  const { AppBridge, PostMessageTransport } = window.ExtApps;
  window.hostLog = [];
  window.savedFiles = null;
  const slot = document.getElementById('slot');
  slot.replaceChildren();
  const frame = document.createElement('iframe');
  frame.setAttribute('sandbox', 'allow-scripts');
  frame.title = 'ferry file card';
  slot.append(frame);
  const bridge = new AppBridge(null, { name: 'ferry-test-host', version: '1' }, { downloadFile: {}, openLinks: {} }, { hostContext });
  // The host's MCP client forwards the card's reads to the server (here: through the test).
  bridge.onreadresource = async ({ uri }) => {
    window.hostLog.push(['resources/read', uri]);
    return window.readThroughServer(uri);
  };
  bridge.ondownloadfile = async ({ contents }) => {
    window.hostLog.push(['download-file', contents]);
    const saved = await Promise.all(contents.map((link) => window.readThroughServer(link.uri)));
    window.savedFiles = saved;
    return {};
  };
  bridge.onopenlink = async ({ url }) => {
    window.hostLog.push(['open-link', url]);
    return {};
  };
  bridge.addEventListener('sizechange', ({ height }) => {
    if (height) frame.style.height = `${height}px`;
  });
  const initialized = new Promise((done) => bridge.addEventListener('initialized', done));
  await bridge.connect(new PostMessageTransport(frame.contentWindow, frame.contentWindow));
  frame.srcdoc = html;
  await initialized;
  await bridge.sendToolInput({ arguments: toolInput });
  await bridge.sendToolResult(toolResult);
  window.bridge = bridge;
}

// One JSON-RPC request to /mcp with `token`; its result (or the JSON-RPC error, thrown).
async function mcp(token, method, params) {
  const response = await fetch(`${S.ferry.base}/mcp`, {
    method: 'POST',
    headers: {
      Authorization: `Bearer ${token}`,
      'Content-Type': 'application/json',
      Accept: 'application/json, text/event-stream',
      'MCP-Protocol-Version': '2025-11-25',
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  const answer = await response.json();
  if (answer.error) throw new Error(`${method}: ${answer.error.message}`);
  return answer.result;
}

const publish = (file_path, display_name, description) => mcp(S.agentToken, 'tools/call', {
  name: 'publish_file_to_user', arguments: { file_path, display_name, description },
});

function frame() {
  return S.page.frameLocator('iframe[title="ferry file card"]');
}

before(async () => {
  assert.ok(existsSync(BIN), `no ferry binary at ${BIN} (set FERRY_BIN)`);
  assert.ok(existsSync(CHROMIUM), `no Chromium at ${CHROMIUM}`);
  mkdirSync(ARTIFACTS, { recursive: true });
  S.tmp = mkdtempSync(join(tmpdir(), 'ferry-mcp-app-'));
  S.ferry = await startFerry(BIN);
  const user = S.ferry.token(['--user', 'card-viewer']);
  S.user = client(S.ferry.base, user);
  S.threadId = (await S.user.post('/api/threads', {})).id;
  S.agentToken = S.ferry.token(['--agent', '--thread', S.threadId, '--user', 'card-viewer']);
  S.agent = client(S.ferry.base, S.agentToken);

  // The official bridge, bundled for the browser, and the host page, served from here.
  const bundle = await build({
    stdin: {
      contents: "import { AppBridge, PostMessageTransport } from '@modelcontextprotocol/ext-apps/app-bridge';\n"
        + 'window.ExtApps = { AppBridge, PostMessageTransport };\n',
      resolveDir: HERE,
    },
    bundle: true, format: 'iife', platform: 'browser', write: false, logLevel: 'silent',
  });
  const bridgeJs = bundle.outputFiles[0].text;
  S.hostServer = createServer((request, response) => {
    const [body, type] = request.url === '/bridge.js' ? [bridgeJs, 'text/javascript'] : [HOST_PAGE, 'text/html'];
    response.writeHead(200, { 'Content-Type': `${type}; charset=utf-8` });
    response.end(body);
  });
  await new Promise((done) => S.hostServer.listen(0, '127.0.0.1', done));

  S.browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-quic', '--no-first-run'],
  });
  S.page = await S.browser.newPage({ viewport: { width: 640, height: 900 } });
  S.page.setDefaultTimeout(15000);
  S.page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  S.page.on('console', (m) => {
    if (m.type() === 'error') problems.push(`console: ${m.text()}`);
  });
  // The card never reaches a network: every request the page makes is the host's own.
  S.requests = [];
  S.page.on('request', (r) => S.requests.push(r.url()));
  await S.page.exposeFunction('readThroughServer', (uri) => mcp(S.agentToken, 'resources/read', { uri }));
  await S.page.goto(`http://127.0.0.1:${S.hostServer.address().port}/`);
});

after(async () => {
  await S.browser?.close();
  S.hostServer?.close();
  await S.ferry?.stop();
  if (S.tmp) rmSync(S.tmp, { recursive: true, force: true });
});

test('publish_file_to_user and read_upload name the card, and the server serves it as an MCP App', async () => {
  const { tools } = await mcp(S.agentToken, 'tools/list', {});
  for (const name of ['publish_file_to_user', 'read_upload']) {
    const tool = tools.find((t) => t.name === name);
    assert.equal(tool._meta.ui.resourceUri, CARD_URI, name);
    assert.equal(tool._meta['ui/resourceUri'], CARD_URI, name);
  }
  assert.equal(tools.filter((t) => t._meta).length, 2, 'no other tool names the card');
  const { resources } = await mcp(S.agentToken, 'resources/list', {});
  assert.ok(resources.some((r) => r.uri === CARD_URI && r.mimeType === 'text/html;profile=mcp-app'));
  const { contents } = await mcp(S.agentToken, 'resources/read', { uri: CARD_URI });
  assert.equal(contents.length, 1);
  assert.equal(contents[0].mimeType, 'text/html;profile=mcp-app');
  assert.equal(contents[0]._meta.ui.prefersBorder, true);
  assert.equal(contents[0]._meta.ui.csp, undefined, 'the card asks for no network origin');
  assert.match(contents[0].text, /^<!DOCTYPE html>/);
  S.cardHtml = contents[0].text;
});

const DARK = { theme: 'dark', displayMode: 'inline', platform: 'web', styles: { variables: { '--color-background-primary': 'rgb(20, 22, 24)', '--color-text-primary': 'rgb(240, 241, 242)' } } };

async function showPublished(result, toolInput) {
  await S.page.evaluate(showCard, { html: S.cardHtml, toolInput, toolResult: result, hostContext: DARK });
}

test('a published image shows as a card with its picture, in the host\'s theme', async () => {
  const png = makePng(120, 80);
  await S.agent.put(`/api/threads/${S.threadId}/sandbox/outputs/chart.png`, png, 'image/png');
  const result = await publish('/sandbox/outputs/chart.png', 'Sales chart', 'Visitors <b>per</b> week & "more"');
  assert.equal(result.isError, false);
  await showPublished(result, { file_path: '/sandbox/outputs/chart.png', display_name: 'Sales chart' });
  const card = frame();
  await card.getByRole('heading', { name: 'Sales chart' }).waitFor();
  const size = png.length < 1024 ? `${png.length} B` : `${(png.length / 1024).toFixed(1)} KB`;
  assert.equal(await card.locator('.facts').textContent(), `chart.png · ${size} · revision 1`);
  // Names and descriptions are text, never markup.
  assert.equal(await card.locator('.description').textContent(), 'Visitors <b>per</b> week & "more"');
  assert.equal(await card.locator('.description b').count(), 0);
  assert.equal(await card.locator('.badge').textContent(), 'PNG');
  const picture = card.locator('.preview img');
  await picture.waitFor();
  // The card's frame is of no origin the host shares: neither can reach into the other.
  assert.equal(await S.page.evaluate(() => document.querySelector('iframe[title="ferry file card"]').contentDocument), null);
  assert.equal(await picture.evaluate((img) => img.complete && img.naturalWidth), 120);
  // The host's theme reaches the card, and a change of theme follows.
  assert.equal(await card.locator('body').evaluate((b) => getComputedStyle(b).backgroundColor), 'rgb(20, 22, 24)');
  await S.page.evaluate(() => window.bridge.setHostContext({ theme: 'light', styles: { variables: { '--color-background-primary': 'rgb(250, 250, 249)', '--color-text-primary': 'rgb(10, 10, 10)' } } }));
  await card.locator('body').evaluate((b) => new Promise((done) => {
    const check = () => (getComputedStyle(b).backgroundColor === 'rgb(250, 250, 249)' ? done() : setTimeout(check, 20));
    check();
  }));
  assert.equal(await card.locator('html').evaluate((h) => h.dataset.theme), 'light');
  // The frame is sized to the card.
  const height = await S.page.locator('iframe[title="ferry file card"]').evaluate((f) => f.getBoundingClientRect().height);
  assert.ok(height > 150, `the host sized the frame to the card (${height}px)`);
  await S.page.screenshot({ path: join(ARTIFACTS, 'mcp-app-01-image-card.png') });

  // Download: the card asks the host to save the revision; the bytes are the published ones.
  await card.getByRole('button', { name: 'Download chart.png' }).click();
  await S.page.waitForFunction(() => window.savedFiles);
  const [link] = await S.page.evaluate(() => window.hostLog.find(([what]) => what === 'download-file')[1]);
  assert.equal(link.type, 'resource_link');
  assert.equal(link.name, 'chart.png');
  assert.equal(link.mimeType, 'image/png');
  assert.match(link.uri, /^ferry:\/\/published\/[^/]+\/revisions\/1$/);
  const [saved] = await S.page.evaluate(() => window.savedFiles);
  assert.equal(sha256(Buffer.from(saved.contents[0].blob, 'base64')), sha256(png));
});

test('a published SVG with a script shows as a picture, and nothing of it runs', async () => {
  const svg = Buffer.from('<svg xmlns="http://www.w3.org/2000/svg" width="80" height="40" onload="parent.postMessage({jsonrpc:\'2.0\',id:98,method:\'ui/open-link\',params:{url:\'https://evil.example\'}},\'*\')"><script>parent.parent.postMessage({jsonrpc:"2.0",id:97,method:"ui/open-link",params:{url:"https://evil.example"}},"*")</script><rect width="80" height="40" fill="teal"/></svg>');
  await S.agent.put(`/api/threads/${S.threadId}/sandbox/outputs/logo.svg`, svg, 'image/svg+xml');
  const result = await publish('/sandbox/outputs/logo.svg', 'Logo', '<script>alert(1)</script>');
  assert.equal(result.structuredContent.preview_kind, 'image');
  await showPublished(result, { file_path: '/sandbox/outputs/logo.svg', display_name: 'Logo' });
  const card = frame();
  const picture = card.locator('.preview img');
  await picture.waitFor();
  assert.equal(await picture.evaluate((img) => img.decode().then(() => img.naturalWidth)), 80);
  assert.equal(await card.locator('.description').textContent(), '<script>alert(1)</script>');
  await new Promise((done) => setTimeout(done, 300));
  const asked = await S.page.evaluate(() => window.hostLog.map(([what]) => what));
  assert.ok(!asked.includes('open-link'), 'nothing of the SVG reached the host');
});

test('a published PDF shows its pages as images', async () => {
  const pdf = fixture(REPO, 'two-pages.pdf');
  await S.agent.put(`/api/threads/${S.threadId}/sandbox/outputs/report.pdf`, pdf, 'application/pdf');
  const result = await publish('/sandbox/outputs/report.pdf', 'Quarterly report', 'Two pages');
  await showPublished(result, { file_path: '/sandbox/outputs/report.pdf', display_name: 'Quarterly report' });
  const card = frame();
  await card.getByRole('heading', { name: 'Quarterly report' }).waitFor();
  await card.locator('figcaption', { hasText: 'Page 2' }).waitFor();
  const pages = card.locator('.preview img');
  assert.equal(await pages.count(), 2, 'both pages, and no third');
  for (const page of await pages.all()) {
    assert.ok(await page.evaluate((img) => img.complete && img.naturalWidth > 100));
  }
  const reads = await S.page.evaluate(() => window.hostLog.filter(([what]) => what === 'resources/read').map(([, uri]) => uri));
  assert.ok(reads.some((uri) => /\/revisions\/1\/pages\/1$/.test(uri)), reads.join('\n'));
  await S.page.screenshot({ path: join(ARTIFACTS, 'mcp-app-02-pdf-card.png') });
});

test('a published deck shows its slides as images (or, without LibreOffice, its HTML)', async () => {
  const deck = fixture(REPO, 'deck.pptx');
  await S.agent.put(`/api/threads/${S.threadId}/sandbox/outputs/deck.pptx`, deck,
    'application/vnd.openxmlformats-officedocument.presentationml.presentation');
  const result = await publish('/sandbox/outputs/deck.pptx', 'Launch deck', 'Four slides');
  await showPublished(result, { file_path: '/sandbox/outputs/deck.pptx', display_name: 'Launch deck' });
  const card = frame();
  await card.getByRole('heading', { name: 'Launch deck' }).waitFor();
  if (drawsSlides()) {
    await card.locator('figcaption', { hasText: 'Slide 3' }).waitFor({ timeout: 60000 });
    const slides = card.locator('.preview img');
    assert.equal(await slides.count(), 3, 'the first three slides');
    assert.equal(await slides.first().getAttribute('alt'), 'Slide 1 of Launch deck');
    for (const slide of await slides.all()) {
      assert.ok(await slide.evaluate((img) => img.complete && img.naturalWidth > 100));
    }
    await S.page.screenshot({ path: join(ARTIFACTS, 'mcp-app-02b-deck-card.png') });
  } else {
    await card.locator('.preview iframe').waitFor();
  }
});

test('a document shows as HTML that cannot run, and a new revision shows as one', async () => {
  const hostile = Buffer.from('<h1>Plan</h1><p id="said">Quarterly</p><script>parent.postMessage({jsonrpc:"2.0",method:"ui/open-link",id:99,params:{url:"https://evil.example"}},"*")</script><img src=x onerror="document.title=\'ran\'">');
  await S.agent.put(`/api/threads/${S.threadId}/sandbox/outputs/plan.html`, hostile, 'text/html');
  let result = await publish('/sandbox/outputs/plan.html', 'Launch plan', '');
  await S.agent.put(`/api/threads/${S.threadId}/sandbox/outputs/plan.md`, Buffer.from(MARKDOWN), 'text/markdown; charset=utf-8');
  result = await publish('/sandbox/outputs/plan.md', 'Launch plan', 'Now as Markdown');
  assert.equal(result.structuredContent.revision, 2);
  await showPublished(result, { file_path: '/sandbox/outputs/plan.md', display_name: 'Launch plan' });
  let card = frame();
  await card.getByRole('heading', { name: 'Launch plan' }).waitFor();
  assert.match(await card.locator('.facts').textContent(), /revision 2$/);
  const preview = card.locator('.preview iframe');
  await preview.waitFor();
  assert.equal(await preview.getAttribute('sandbox'), '', 'the document\'s frame may run nothing');
  await card.frameLocator('.preview iframe').locator('h1').first().waitFor();

  // The first revision, with its script: shown, never run.
  const first = { ...result, structuredContent: { ...result.structuredContent, revision: 1, filename: 'plan.html', file_type: '.html' } };
  await showPublished(first, { file_path: '/sandbox/outputs/plan.html', display_name: 'Launch plan' });
  card = frame();
  // An HTML file's preview is its source, as text: the script is there to read, not to run.
  const source = card.frameLocator('.preview iframe').locator('pre');
  await source.waitFor();
  assert.match(await source.textContent(), /<script>parent\.postMessage/);
  assert.equal(await card.frameLocator('.preview iframe').locator('script, img').count(), 0);
  await new Promise((done) => setTimeout(done, 300));
  const asked = await S.page.evaluate(() => window.hostLog.map(([what]) => what));
  assert.ok(!asked.includes('open-link'), 'no script of the document reached the host');
  await S.page.screenshot({ path: join(ARTIFACTS, 'mcp-app-03-document-card.png') });
});

test('an upload the agent reads shows as the user\'s file, with its pages', async () => {
  const pdf = fixture(REPO, 'two-pages.pdf');
  const sent = await S.user.call('POST', `/api/threads/${S.threadId}/uploads?filename=${encodeURIComponent('brief <v2>.pdf')}`, {
    body: pdf, headers: { 'Content-Type': 'application/pdf' },
  });
  const upload = sent.uploads[0];
  const result = await mcp(S.agentToken, 'tools/call', { name: 'read_upload', arguments: { uploadId: upload.id, pages: '1' } });
  assert.equal(result.isError, false);
  // The model reads the page; the card's copy of the upload is in _meta, which is not the model's.
  assert.ok(result.content.some((block) => block.type === 'image'));
  assert.equal(result._meta['ferry/upload'].id, upload.id);
  assert.equal(result.structuredContent, undefined);
  await showPublished(result, { uploadId: upload.id, pages: '1' });
  const card = frame();
  await card.getByRole('heading', { name: 'brief <v2>.pdf' }).waitFor();
  assert.match(await card.locator('.facts').textContent(), /^Uploaded by the user · /);
  await card.locator('figcaption', { hasText: 'Page 2' }).waitFor();
  assert.equal(await card.locator('.preview img').count(), 2);
  await card.getByRole('button', { name: 'Download brief <v2>.pdf' }).click();
  await S.page.waitForFunction(() => window.savedFiles);
  const [saved] = await S.page.evaluate(() => window.savedFiles);
  assert.equal(sha256(Buffer.from(saved.contents[0].blob, 'base64')), sha256(pdf));
  await S.page.screenshot({ path: join(ARTIFACTS, 'mcp-app-04-upload-card.png') });
});

test('a failed publish shows the server\'s message, not a card', async () => {
  const result = await publish('/sandbox/outputs/missing.pdf', 'Missing', '');
  assert.equal(result.isError, true);
  await showPublished(result, { file_path: '/sandbox/outputs/missing.pdf', display_name: 'Missing' });
  const alert = frame().getByRole('alert');
  await alert.waitFor();
  assert.match(await alert.textContent(), /missing\.pdf/);
  assert.equal(await frame().locator('button').count(), 0);
});

test('the card made no request of its own and raised no error', async () => {
  const host = `http://127.0.0.1:${S.hostServer.address().port}/`;
  const foreign = S.requests.filter((url) => !url.startsWith(host) && !url.startsWith('data:') && url !== 'about:srcdoc');
  assert.deepEqual(foreign, []);
  assert.deepEqual(problems, []);
});
