-- Say mode (docs/reference/say.md): files attached to agent messages, the connectors a thread delivers
-- to besides its event channel, and the durable queue of webhook deliveries.
CREATE TABLE attachments (
    id         TEXT   NOT NULL PRIMARY KEY,
    thread_id  TEXT   NOT NULL,
    filename   TEXT   NOT NULL,
    mime_type  TEXT   NOT NULL,
    size       BIGINT NOT NULL,
    sha256     TEXT   NOT NULL,
    send_as    TEXT   NOT NULL,
    blob_key   TEXT   NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE INDEX attachments_by_thread ON attachments (thread_id);
CREATE INDEX attachments_by_blob ON attachments (blob_key);

CREATE TABLE connectors (
    id         TEXT   NOT NULL PRIMARY KEY,
    thread_id  TEXT   NOT NULL,
    kind       TEXT   NOT NULL,
    url        TEXT   NOT NULL,
    secret     TEXT   NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE INDEX connectors_by_thread ON connectors (thread_id);

CREATE TABLE webhook_deliveries (
    id           TEXT   NOT NULL PRIMARY KEY,
    connector_id TEXT   NOT NULL,
    thread_id    TEXT   NOT NULL,
    event_id     BIGINT NOT NULL,
    state        TEXT   NOT NULL,
    attempts     BIGINT NOT NULL DEFAULT 0,
    next_at      BIGINT NOT NULL,
    locked_until BIGINT,
    last_error   TEXT,
    created_at   BIGINT NOT NULL
);
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (state, next_at);
