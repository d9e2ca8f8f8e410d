-- Per-user spaces (docs/reference/spaces.md). COLLATE "C" makes paths compare byte-wise, as on SQLite, so
-- listings sort identically on both engines and prefix ranges are exact.
CREATE TABLE space_files (
    owner        TEXT COLLATE "C" NOT NULL,
    space        TEXT COLLATE "C" NOT NULL,
    path         TEXT COLLATE "C" NOT NULL,
    parent       TEXT COLLATE "C" NOT NULL,
    blob_key     TEXT    NOT NULL,
    size         BIGINT  NOT NULL,
    content_type TEXT    NOT NULL,
    sha256       TEXT    NOT NULL,
    version      BIGINT  NOT NULL,
    updated_at   BIGINT  NOT NULL,
    PRIMARY KEY (owner, space, path)
);
CREATE INDEX space_files_by_parent ON space_files (owner, space, parent, path);

CREATE TABLE space_dirs (
    owner  TEXT COLLATE "C" NOT NULL,
    space  TEXT COLLATE "C" NOT NULL,
    path   TEXT COLLATE "C" NOT NULL,
    parent TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (owner, space, path)
);
CREATE INDEX space_dirs_by_parent ON space_dirs (owner, space, parent, path);
