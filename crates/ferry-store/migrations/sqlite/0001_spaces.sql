-- Per-user spaces (docs/reference/spaces.md). Paths compare byte-wise (SQLite's BINARY collation), which
-- keeps listings sorted the same way on every engine and makes prefix ranges exact.
CREATE TABLE space_files (
    owner        TEXT    NOT NULL,
    space        TEXT    NOT NULL,
    path         TEXT    NOT NULL,
    parent       TEXT    NOT NULL,
    blob_key     TEXT    NOT NULL,
    size         BIGINT  NOT NULL,
    content_type TEXT    NOT NULL,
    sha256       TEXT    NOT NULL,
    version      BIGINT  NOT NULL,
    updated_at   BIGINT  NOT NULL,
    PRIMARY KEY (owner, space, path)
);
CREATE INDEX space_files_by_parent ON space_files (owner, space, parent, path);

-- Every folder that holds a file, directly or below, so a non-recursive listing can name the
-- folders of a directory without scanning every path beneath it.
CREATE TABLE space_dirs (
    owner  TEXT NOT NULL,
    space  TEXT NOT NULL,
    path   TEXT NOT NULL,
    parent TEXT NOT NULL,
    PRIMARY KEY (owner, space, path)
);
CREATE INDEX space_dirs_by_parent ON space_dirs (owner, space, parent, path);
