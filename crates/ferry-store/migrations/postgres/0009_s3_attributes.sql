-- What the S3 door keeps of an object beyond its bytes and type (docs/s3.md, metadata): user
-- metadata, content headers and the checksum it was written with, as JSON only the S3 door
-- reads. Empty (NULL) for files written through the other doors; a multipart upload holds
-- what its object will be written with.
ALTER TABLE space_files ADD COLUMN attributes TEXT;
ALTER TABLE s3_uploads ADD COLUMN attributes TEXT;
