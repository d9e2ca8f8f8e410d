// Agent messages are Markdown. The server renders them as sanitized HTML (POST
// /api/render/markdown, with the renderer the file previews use: no raw HTML, no script, links
// only to http, https and mailto, opening in a new tab), so the page never parses Markdown
// itself. Every text asked for in one turn of the event loop goes in one request, so a thread's
// replay of many messages costs one round trip per 200 of them.
import { route, sendJson } from './api.js';
import { h } from './dom.js';

const MAX_BATCH = 200;
const MAX_KEPT = 1000;
/** @type {Map<string, Promise<string>>} */
const kept = new Map(); // text → Promise<html>
/** @type {{ text: string, resolve: (html: string) => void, reject: (error: unknown) => void }[]} */
let waiting = [];
let scheduled = false;

/**
 * The sanitized HTML of a Markdown text; rejects when the server cannot be asked.
 * @param {string} text
 * @returns {Promise<string>}
 */
export function renderMarkdown(text) {
  const known = kept.get(text);
  if (known) return known;
  /** @type {Promise<string>} */
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
    /** @type {RenderedHtml} */
    const { html } = await sendJson('POST', route('render', 'markdown'), { texts: batch.map((w) => w.text) });
    batch.forEach((w, i) => w.resolve(html[i]));
  } catch (e) {
    for (const w of batch) w.reject(e);
  }
}

/**
 * Heads each code block of rendered Markdown in `root` with its language (the `language-NAME`
 * class the server keeps) and a Copy button that copies the code as it is written. A block
 * scrolls sideways rather than wrap or be cut.
 * @param {Element} root
 */
export function decorateCode(root) {
  for (const pre of root.querySelectorAll('pre')) {
    if (pre.parentElement?.classList.contains('code-block')) continue;
    const code = pre.querySelector('code');
    const language = /(?:^|\s)language-(\S+)/.exec(code?.className || '')?.[1] || '';
    const copy = h('button', { type: 'button', class: 'code-copy', text: 'Copy', 'aria-label': `Copy the ${language || 'code'}` });
    copy.addEventListener('click', async () => {
      try {
        await navigator.clipboard.writeText((code || pre).textContent || '');
        copy.textContent = 'Copied';
      } catch {
        copy.textContent = 'Copy failed';
      }
      setTimeout(() => { copy.textContent = 'Copy'; }, 1500);
    });
    const block = h('div', { class: 'code-block' },
      h('div', { class: 'code-head' }, h('span', { class: 'code-lang', text: language || 'code' }), copy));
    pre.replaceWith(block);
    block.append(pre);
  }
}
