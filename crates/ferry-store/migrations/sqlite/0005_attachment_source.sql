-- A say-mode attachment that names a published file remembers which one (and which revision),
-- so the user's preview panel can open it.
ALTER TABLE attachments ADD COLUMN published_id TEXT;
ALTER TABLE attachments ADD COLUMN published_revision BIGINT;
