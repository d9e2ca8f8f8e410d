// The sidebar's list of threads: kept in the order of their last activity, current in every tab
// through the server's live thread list (GET /api/threads/live: the whole list at each connect,
// then each thread made, renamed, active or deleted, wherever that happened), and searched by
// content on the server (GET /api/threads?q=: titles, messages and file names).
import { route, getJson } from './api.js';
import { LiveStream } from './sse.js';

/**
 * Most recently active first, as the server sorts; ids break ties.
 * @param {Thread} a
 * @param {Thread} b
 * @returns {number}
 */
export function byActivity(a, b) {
  const at = (/** @type {Thread} */ t) => t.lastActivityAt || t.createdAt || '';
  if (at(a) !== at(b)) return at(a) < at(b) ? 1 : -1;
  return a.id < b.id ? 1 : a.id > b.id ? -1 : 0;
}

/**
 * `threads` with `thread` put in (or in place of the one with its id), in activity order.
 * @param {Thread[]} threads
 * @param {Thread} thread
 * @returns {Thread[]}
 */
export function withThread(threads, thread) {
  return [thread, ...threads.filter((t) => t.id !== thread.id)].sort(byActivity);
}

/**
 * Folds case and accents away, so that a search for "resume" finds "Résumé".
 * @param {string} text
 * @returns {string}
 */
export function fold(text) {
  return String(text).normalize('NFD').replace(/\p{M}/gu, '').toLowerCase();
}

/**
 * Follows the person's thread list. `onList(threads)` gets the whole list at each (re)connect,
 * `onThread(thread)` each thread made, renamed or active, `onDeleted(id)` each removed one.
 * @param {{ onList: (threads: Thread[]) => void, onThread: (thread: Thread) => void, onDeleted: (id: string) => void }} hooks
 */
export function followThreadList({ onList, onThread, onDeleted }) {
  /** @type {LiveStream<ThreadListEvent>} */
  const stream = new LiveStream(route('threads', 'live'), {
    onEvent: (event) => {
      if (event.type === 'threads') onList([...event.threads].sort(byActivity));
      else if (event.type === 'thread') onThread(event.thread);
      else if (event.type === 'thread_deleted') onDeleted(event.id);
    },
  });
  return stream.start();
}

/** How long typing must pause before the server is asked. */
const SEARCH_PAUSE_MS = 250;

/**
 * Searches the person's threads on the server as they type: `onResults(query, threads)` gets
 * the answer for the text last asked (an older answer arriving late is dropped), or
 * `onResults(query, null, error)` when it could not be had.
 */
export class ThreadSearch {
  /** @param {(query: string, threads: Thread[] | null, error?: unknown) => void} onResults */
  constructor(onResults) {
    this.onResults = onResults;
    /** @type {number | null} */
    this.timer = null;
    this.asked = '';
  }

  /**
   * Asks for `query` once typing pauses; an empty query cancels what is pending.
   * @param {string} query
   */
  query(query) {
    clearTimeout(this.timer);
    this.asked = query;
    if (!query) return;
    this.timer = setTimeout(async () => {
      try {
        /** @type {ThreadList} */
        const { threads } = await getJson(`${route('threads')}?q=${encodeURIComponent(query)}`);
        if (this.asked === query) this.onResults(query, threads || []);
      } catch (error) {
        if (this.asked === query) this.onResults(query, null, error);
      }
    }, SEARCH_PAUSE_MS);
  }
}
