-- Resumable uploads (docs/reference/resumable-uploads.md, tus 1.0): an upload made of parts,
-- each a blob written by one PATCH, until its length is reached; it then becomes a plain
-- thread upload or space file, and its answer is kept here until it expires.
CREATE TABLE resumable_uploads (
    id            TEXT   NOT NULL PRIMARY KEY,
    -- The identity that created it: it alone continues, inspects or ends it.
    made_by       TEXT   NOT NULL,
    -- What it becomes, as JSON only the application reads.
    target        TEXT   NOT NULL,
    length        BIGINT NOT NULL,
    upload_offset BIGINT NOT NULL DEFAULT 0,
    -- The Upload-Metadata header as it was sent, given back by HEAD.
    metadata      TEXT   NOT NULL,
    created_at    BIGINT NOT NULL,
    expires_at    BIGINT NOT NULL,
    -- 'receiving', then 'finishing' (claimed at finishing_at by one request), then 'finished'.
    state         TEXT   NOT NULL DEFAULT 'receiving',
    finishing_at  BIGINT,
    -- The finished upload's answer: {"status": N, "body": …}.
    result        TEXT
);
CREATE INDEX resumable_uploads_by_maker ON resumable_uploads (made_by, state);
CREATE INDEX resumable_uploads_by_expiry ON resumable_uploads (expires_at);

CREATE TABLE resumable_parts (
    upload_id   TEXT   NOT NULL,
    part_offset BIGINT NOT NULL,
    size        BIGINT NOT NULL,
    blob_key    TEXT   NOT NULL,
    PRIMARY KEY (upload_id, part_offset)
);
