-- Files an agent published to the user (docs/reference/publish.md). A display name is one published file; each
-- publish under it adds a revision, and every revision stays downloadable.
CREATE TABLE published_files (
    id              TEXT   NOT NULL PRIMARY KEY,
    thread_id       TEXT   NOT NULL,
    display_name    TEXT   NOT NULL,
    latest_revision BIGINT NOT NULL,
    created_at      BIGINT NOT NULL,
    UNIQUE (thread_id, display_name)
);

CREATE TABLE published_revisions (
    file_id      TEXT   NOT NULL,
    revision     BIGINT NOT NULL,
    thread_id    TEXT   NOT NULL,
    description  TEXT   NOT NULL,
    filename     TEXT   NOT NULL,
    file_type    TEXT   NOT NULL,
    mime_type    TEXT   NOT NULL,
    file_size    BIGINT NOT NULL,
    sha256       TEXT   NOT NULL,
    storage_path TEXT   NOT NULL,
    sandbox_path TEXT   NOT NULL,
    blob_key     TEXT   NOT NULL,
    preview_kind TEXT   NOT NULL,
    published_at BIGINT NOT NULL,
    PRIMARY KEY (file_id, revision)
);
CREATE INDEX published_revisions_by_thread ON published_revisions (thread_id, published_at);
CREATE INDEX published_revisions_by_sha ON published_revisions (thread_id, sha256);
CREATE INDEX published_revisions_by_storage_path ON published_revisions (storage_path, published_at);
CREATE INDEX published_revisions_by_blob ON published_revisions (blob_key);
