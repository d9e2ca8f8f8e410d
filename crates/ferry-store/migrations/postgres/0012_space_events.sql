-- A space's change feed (docs/agent-files.md, "Watching a space"): every write, removal and
-- move of a file, numbered per space without gaps, stored in the transaction that made it.
ALTER TABLE spaces ADD COLUMN last_event BIGINT NOT NULL DEFAULT 0;
CREATE TABLE space_events (
    owner       TEXT   NOT NULL,
    space       TEXT   NOT NULL,
    id          BIGINT NOT NULL,
    kind        TEXT   NOT NULL,
    path        TEXT   NOT NULL,
    destination TEXT,
    etag        TEXT,
    size        BIGINT,
    door        TEXT   NOT NULL,
    created_at  BIGINT NOT NULL,
    PRIMARY KEY (owner, space, id)
);
