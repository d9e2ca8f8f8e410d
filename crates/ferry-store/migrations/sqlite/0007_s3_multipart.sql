-- S3 multipart uploads (docs/s3.md, multipart): an upload in progress and its parts. Each
-- part's bytes are a blob of their own (so the sweep keeps them while a row names them); the
-- finished object is written from them through the ordinary write, and the rows go.
CREATE TABLE s3_uploads (
    upload_id    TEXT   NOT NULL PRIMARY KEY,
    -- The identity that started the upload; it alone adds parts, completes or aborts it.
    made_by      TEXT   NOT NULL,
    bucket       TEXT   NOT NULL,
    object_path   TEXT   NOT NULL,
    content_type TEXT   NOT NULL,
    created_at   BIGINT NOT NULL
);
CREATE INDEX s3_uploads_by_bucket ON s3_uploads (made_by, bucket, object_path, upload_id);

CREATE TABLE s3_parts (
    upload_id   TEXT   NOT NULL,
    part_number BIGINT NOT NULL,
    blob_key    TEXT   NOT NULL,
    size        BIGINT NOT NULL,
    sha256      TEXT   NOT NULL,
    created_at  BIGINT NOT NULL,
    PRIMARY KEY (upload_id, part_number)
);
