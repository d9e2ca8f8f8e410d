// The names the web UI's modules use in their JSDoc for what the server sends. Each is a
// schema of the OpenAPI document (api.d.ts, generated from docs/openapi.json by `check
// --write`), so a field the UI reads that the server does not send fails the type check.
import type { components } from './api';

type Schemas = components['schemas'];

declare global {
  /** An event of a thread's channel (docs/reference/events.md). */
  type ThreadEvent = Schemas['ThreadEvent'];
  /** The thread event whose `type` is `K`. */
  type ThreadEventOf<K extends ThreadEvent['type']> = Extract<ThreadEvent, { type: K }>;
  /** An event of a space's change feed. */
  type SpaceEvent = Schemas['SpaceEvent'];
  /** A thread, as the thread routes answer it. */
  type Thread = Schemas['ThreadView'];
  /** An event of the live thread list (GET /api/threads/live). */
  type ThreadListEvent = Schemas['ThreadListEvent'];
  /** An upload, as the upload routes and `upload` events carry it. */
  type Upload = Schemas['UploadView'];
  /** A file attached to a say-mode message. */
  type Attachment = Schemas['AttachmentView'];
  /** A published revision. */
  type PublishedFile = Schemas['PublishedView'];
  /** The file a `file_send` event carries. */
  type SentFile = Schemas['FileContents'];
  /** Opens a file in the preview panel; `opener` gets the focus back when it closes. */
  type OpenPreview = (file: any, opener: HTMLElement) => void;

  interface Window {
    /** What tests and the console reach: the thread's event stream, to drop it on purpose. */
    ferryDebug?: { stream?: unknown };
  }
}

export {};
