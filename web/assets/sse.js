// The server's event streams over fetch() (a thread's events, the thread list): EventSource
// cannot send an Authorization header, so the stream is read and parsed here. The client
// remembers the last event id it saw and resumes after a drop with `Last-Event-ID`, backing off
// between attempts; the view dedupes by id, so a replayed event is never shown twice.
import { authHeaders, errorFrom, route, serverAnswered } from './api.js';

/**
 * A message of an event stream: its id (the last one the stream set), its event type
 * (`message` unless named) and its data lines, joined.
 * @typedef {{ id: string, event: string, data: string }} SseMessage
 */

/** Parses `text/event-stream` incrementally (the WHATWG rules for fields and lines). */
export class SseParser {
  /** @param {(message: SseMessage) => void} onMessage */
  constructor(onMessage) {
    this.onMessage = onMessage;
    this.buffer = '';
    /** @type {string[]} */
    this.data = [];
    this.eventType = '';
    this.lastEventId = '';
    /** @type {number | null} The reconnection time the stream asked for, until read. */
    this.retry = null;
  }

  /** @param {string} text The next piece of the stream, decoded. */
  push(text) {
    this.buffer += text;
    let start = 0;
    for (;;) {
      let end = -1;
      let next = -1;
      for (let i = start; i < this.buffer.length; i++) {
        const c = this.buffer.charCodeAt(i);
        if (c === 10) { end = i; next = i + 1; break; }
        if (c === 13) {
          // A CR at the very end may be the first half of a CRLF: wait for more.
          if (i + 1 === this.buffer.length) break;
          end = i;
          next = this.buffer.charCodeAt(i + 1) === 10 ? i + 2 : i + 1;
          break;
        }
      }
      if (end < 0) break;
      this.line(this.buffer.slice(start, end));
      start = next;
    }
    this.buffer = this.buffer.slice(start);
  }

  /** @param {string} line */
  line(line) {
    if (line === '') {
      this.dispatch();
      return;
    }
    if (line.startsWith(':')) return; // a comment: the server's keep-alive
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    switch (field) {
      case 'data': this.data.push(value); break;
      case 'event': this.eventType = value; break;
      case 'id': if (!value.includes('\0')) this.lastEventId = value; break;
      case 'retry': if (/^\d+$/.test(value)) this.retry = Number(value); break;
      default: break;
    }
  }

  dispatch() {
    if (this.data.length === 0) {
      this.eventType = '';
      return;
    }
    const message = { id: this.lastEventId, event: this.eventType || 'message', data: this.data.join('\n') };
    this.data = [];
    this.eventType = '';
    this.onMessage(message);
  }
}

const MIN_DELAY = 500;
const MAX_DELAY = 15000;
/** With a keep-alive every 15 s from the server, this much silence means the link is dead. */
const SILENCE_LIMIT = 45000;

/**
 * @template E
 * @typedef {{ onEvent: (event: E) => void, onStatus?: (status: 'connecting' | 'live' | 'reconnecting' | 'stopped') => void, onFatal?: (error: import('./api.js').ApiError) => void, after?: number }} StreamHooks
 */

/**
 * Follows one of the server's event streams at `url`, reconnecting after a drop. `onEvent(event)`
 * gets each parsed event object; `onStatus` gets 'connecting' | 'live' | 'reconnecting' |
 * 'stopped'; `onFatal(ApiError)` is called when the server refuses the stream for good (401,
 * 403, 404). A stream whose events have ids resumes after the last one seen.
 * @template E
 */
export class LiveStream {
  /**
   * @param {string} url
   * @param {StreamHooks<E>} hooks
   */
  constructor(url, { onEvent, onStatus, onFatal, after = 0 }) {
    this.url = url;
    this.onEvent = onEvent;
    this.onStatus = onStatus || (() => {});
    this.onFatal = onFatal || (() => {});
    this.lastId = after;
    this.stopped = false;
    /** @type {AbortController | null} */
    this.controller = null;
    this.delay = MIN_DELAY;
    /** @type {(() => void) | null} Ends the wait between attempts early. */
    this.wake = null;
    this.onOnline = () => this.reconnectNow();
    window.addEventListener('online', this.onOnline);
  }

  start() {
    this.run();
    return this;
  }

  stop() {
    this.stopped = true;
    window.removeEventListener('online', this.onOnline);
    this.controller?.abort();
    this.wake?.();
    this.onStatus('stopped');
  }

  /** Drops the current connection and reconnects at once (used by tests and 'online'). */
  reconnectNow() {
    this.delay = MIN_DELAY;
    this.controller?.abort();
    this.wake?.();
  }

  async run() {
    let first = true;
    while (!this.stopped) {
      this.onStatus(first ? 'connecting' : 'reconnecting');
      first = false;
      const controller = new AbortController();
      this.controller = controller;
      const openedAt = Date.now();
      let delivered = 0;
      try {
        const headers = authHeaders({ Accept: 'text/event-stream' });
        if (this.lastId > 0) headers['Last-Event-ID'] = String(this.lastId);
        const response = await fetch(this.url, {
          headers, signal: controller.signal, cache: 'no-store',
        });
        // The stream is often the first to hear the server back: loads that failed try again.
        serverAnswered();
        if (!response.ok) {
          const error = await errorFrom(response);
          if ([401, 403, 404].includes(response.status)) {
            this.stopped = true;
            this.onStatus('stopped');
            this.onFatal(error);
            return;
          }
          throw error;
        }
        this.onStatus('live');
        // An answer that is ok has its stream as its body.
        delivered = await this.read(/** @type {ReadableStream<Uint8Array>} */ (response.body), controller);
      } catch {
        // a drop, an abort for silence, or a refused connection: back off and retry
      }
      if (this.stopped) return;
      if (delivered > 0 || Date.now() - openedAt > 10000) this.delay = MIN_DELAY;
      this.onStatus('reconnecting');
      await this.sleep(this.delay + Math.random() * this.delay * 0.3);
      this.delay = Math.min(this.delay * 2, MAX_DELAY);
    }
  }

  /**
   * Reads the stream's events until it ends (or `controller` aborts it after a silence);
   * answers how many it delivered.
   * @param {ReadableStream<Uint8Array>} body
   * @param {AbortController} controller
   * @returns {Promise<number>}
   */
  async read(body, controller) {
    const reader = body.getReader();
    const decoder = new TextDecoder();
    let delivered = 0;
    const parser = new SseParser((message) => {
      const id = Number(message.id);
      /** @type {E} */
      let event;
      try {
        event = JSON.parse(message.data);
      } catch {
        return; // not an event of ours
      }
      // Parsed from JSON, an event is an object (or null), with its id when it has one.
      const eventId = Number.isFinite(id) && id > 0 ? id : Number(/** @type {{ id?: unknown } | null} */ (event)?.id);
      if (Number.isFinite(eventId) && eventId > this.lastId) this.lastId = eventId;
      delivered += 1;
      this.onEvent(event);
    });
    let silence = setTimeout(() => controller.abort(), SILENCE_LIMIT);
    try {
      for (;;) {
        const { value, done } = await reader.read();
        clearTimeout(silence);
        if (done) break;
        silence = setTimeout(() => controller.abort(), SILENCE_LIMIT);
        parser.push(decoder.decode(value, { stream: true }));
        if (parser.retry !== null) {
          this.delay = Math.max(MIN_DELAY, Math.min(parser.retry, MAX_DELAY));
          parser.retry = null;
        }
      }
    } finally {
      clearTimeout(silence);
    }
    return delivered;
  }

  /**
   * Waits `ms`, or less if `wake` is called.
   * @param {number} ms
   * @returns {Promise<void>}
   */
  sleep(ms) {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.wake = done;
    });
  }
}

/**
 * A thread's events, replayed from the start (or after `hooks.after`) and then live.
 * @extends {LiveStream<ThreadEvent>}
 */
export class ThreadEvents extends LiveStream {
  /**
   * @param {string} threadId
   * @param {StreamHooks<ThreadEvent>} hooks
   */
  constructor(threadId, hooks) {
    super(route('threads', threadId, 'events'), hooks);
    this.threadId = threadId;
  }
}
