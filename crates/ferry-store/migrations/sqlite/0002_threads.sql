-- Threads, their stored event channel, and user uploads (docs/reference/threads-and-sandbox.md, events.md, uploads.md).
CREATE TABLE threads (
    id         TEXT   NOT NULL PRIMARY KEY,
    owner      TEXT   NOT NULL,
    title      TEXT,
    created_at BIGINT NOT NULL,
    -- The id of the thread's newest event; events take the next one under the row's lock,
    -- so ids are gap-free and in commit order.
    last_event BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX threads_by_owner ON threads (owner, created_at);

CREATE TABLE events (
    thread_id  TEXT   NOT NULL,
    id         BIGINT NOT NULL,
    kind       TEXT   NOT NULL,
    body       TEXT   NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (thread_id, id)
);

CREATE TABLE uploads (
    id            TEXT   NOT NULL PRIMARY KEY,
    thread_id     TEXT   NOT NULL,
    owner         TEXT   NOT NULL,
    file_name     TEXT   NOT NULL,
    file_type     TEXT   NOT NULL,
    size          BIGINT NOT NULL,
    sha256        TEXT   NOT NULL,
    kind          TEXT   NOT NULL,
    storage_path  TEXT   NOT NULL,
    sandbox_path  TEXT   NOT NULL,
    preview       TEXT,
    preview_error TEXT,
    width         BIGINT,
    height        BIGINT,
    blob_key      TEXT   NOT NULL,
    created_at    BIGINT NOT NULL
);
CREATE INDEX uploads_by_thread ON uploads (thread_id, created_at);
CREATE INDEX uploads_by_blob ON uploads (blob_key);
CREATE INDEX space_files_by_blob ON space_files (blob_key);
