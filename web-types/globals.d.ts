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
  /** The JSON of a failed request: `{ error: { code, message } }`. */
  type ErrorEnvelope = Schemas['Error'];
  /** The server's size limits (GET /api/limits). */
  type Limits = Schemas['LimitsView'];
  /** A list of threads (GET /api/threads). */
  type ThreadList = Schemas['ThreadList'];
  /** A thread's published files (GET /api/threads/{id}/published). */
  type PublishedList = Schemas['PublishedList'];
  /** A list of uploads, as the upload routes answer it. */
  type UploadList = Schemas['UploadList'];
  /** An agent token minted for a thread (POST /api/threads/{id}/agent-token). */
  type AgentToken = Schemas['AgentToken'];
  /** Markdown rendered as sanitized HTML (POST /api/render/markdown). */
  type RenderedHtml = Schemas['RenderedHtml'];
  /** A space, as the list of the person's spaces has it. */
  type Space = Schemas['SpaceView'];
  /** The person's spaces (GET /api/spaces). */
  type SpaceList = Schemas['SpaceList'];
  /** A file or folder of a space's listing. */
  type FileEntry = Schemas['FileEntry'];
  /** A page of a space's listing (GET /api/spaces/{space}/files); not the DOM's FileList. */
  type SpaceFileList = Schemas['FileList'];
  /** A folder made in a space (POST /api/spaces/{space}/folders). */
  type Folder = Schemas['Folder'];
  /** What `read_file` answers (POST /api/fs/read_file). */
  type ReadOutput = Schemas['ReadOutput'];
  /** An S3 access key (its secret only in the answer that makes it). */
  type AccessKey = Schemas['AccessKeyView'];
  /** The person's S3 access keys (GET /api/s3/keys). */
  type AccessKeyList = Schemas['AccessKeyList'];
  /**
   * Opens `file` (what a card or chip shows: a published file, an upload, a photo) in the preview
   * panel; `opener` gets the focus back when it closes.
   */
  type OpenPreview<F> = (file: F, opener: HTMLElement) => void;

  // WebIDL reads the id of clearTimeout and clearInterval as a long, null as 0 (none): the page
  // clears a timer it holds as null when there is none.
  function clearTimeout(id: number | null | undefined): void;
  function clearInterval(id: number | null | undefined): void;

  interface Window {
    /** What tests and the console reach: the thread's event stream, to drop it on purpose. */
    ferryDebug?: { stream?: unknown };
  }
}

export {};
