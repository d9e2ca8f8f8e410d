-- The checksum each multipart part was verified against (docs/s3.md, checksums), as text only
-- the S3 door reads: an upload that names a checksum algorithm gets its object's checksum from
-- its parts' when it completes. NULL for a part sent without one.
ALTER TABLE s3_parts ADD COLUMN checksum TEXT;
