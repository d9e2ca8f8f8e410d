-- An agent's S3 key ends when the token that made it would have (docs/s3.md, credentials):
-- the token's `exp`, in milliseconds since the epoch; no end for users' and services' keys.
ALTER TABLE s3_keys ADD COLUMN expires_at BIGINT;
-- The keys acting in a user's threads, which that user lists and revokes.
CREATE INDEX s3_keys_by_owner ON s3_keys (kind, sub);
