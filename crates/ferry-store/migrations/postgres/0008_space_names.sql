-- The spaces a user has, by name (docs/reference/spaces.md): a space exists from the first file
-- written into it, or from being made empty (the S3 door's CreateBucket), until it is removed
-- while empty (DeleteBucket). Deleting its last file leaves it, empty.
CREATE TABLE spaces (
    owner      TEXT   NOT NULL,
    name       TEXT   NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (owner, name)
);

-- Every space that already holds files exists.
INSERT INTO spaces (owner, name, created_at)
SELECT owner, space, MIN(updated_at) FROM space_files GROUP BY owner, space;
