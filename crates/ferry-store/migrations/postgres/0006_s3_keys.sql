-- S3 access keys (docs/s3.md). A key acts as the principal that made it: a user, an agent bound
-- to one thread, or a service token (with or without a user). No secret is stored: a key's
-- secret is derived from the server's secret and the key id, so this table alone lets nobody
-- sign a request. Revoking a key deletes its row; every node looks the key up on every request.
CREATE TABLE s3_keys (
    access_key_id TEXT   NOT NULL PRIMARY KEY,
    -- The identity that made the key (a user, an agent of one thread, a service token): it
    -- alone lists and revokes the key.
    made_by       TEXT   NOT NULL,
    kind          TEXT   NOT NULL,
    sub           TEXT,
    thread_id     TEXT,
    agent_id      TEXT,
    created_at    BIGINT NOT NULL
);
CREATE INDEX s3_keys_by_maker ON s3_keys (made_by, created_at);
