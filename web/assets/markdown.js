// Agent messages are Markdown. The server renders them as sanitized HTML (POST
// /api/render/markdown, with the renderer the file previews use: no raw HTML, no script, links
// only to http, https and mailto, opening in a new tab), so the page never parses Markdown
// itself. Every text asked for in one turn of the event loop goes in one request, so a thread's
// replay of many messages costs one round trip per 200 of them.
import { route, sendJson } from './api.js';

const MAX_BATCH = 200;
const MAX_KEPT = 1000;
const kept = new Map(); // text → Promise<html>
let waiting = [];
let scheduled = false;

/** The sanitized HTML of a Markdown text; rejects when the server cannot be asked. */
export function renderMarkdown(text) {
  const known = kept.get(text);
  if (known) return known;
  const promise = new Promise((resolve, reject) => waiting.push({ text, resolve, reject }));
  if (kept.size >= MAX_KEPT) kept.clear();
  kept.set(text, promise);
  // A failure is not kept: the next view of the text asks again.
  promise.catch(() => kept.delete(text));
  schedule();
  return promise;
}

function schedule() {
  if (scheduled) return;
  scheduled = true;
  setTimeout(flush, 0);
}

async function flush() {
  scheduled = false;
  const batch = waiting.slice(0, MAX_BATCH);
  waiting = waiting.slice(MAX_BATCH);
  if (waiting.length) schedule();
  try {
    const { html } = await sendJson('POST', route('render', 'markdown'), { texts: batch.map((w) => w.text) });
    batch.forEach((w, i) => w.resolve(html[i]));
  } catch (e) {
    for (const w of batch) w.reject(e);
  }
}
