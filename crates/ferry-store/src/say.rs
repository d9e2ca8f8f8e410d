//! Attachments of say-mode messages, webhook connectors, and their delivery queue.

use ferry_core::Timestamp;
use sqlx::Row;
use sqlx::any::AnyRow;

use crate::Error;
use crate::db::{Db, now_millis};

/// A file attached to an agent message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attachment {
    pub id: String,
    pub thread_id: String,
    pub filename: String,
    pub mime_type: String,
    pub size: u64,
    pub sha256: String,
    /// `document`, `photo` or `video` (never `auto`: it is resolved when attached).
    pub send_as: String,
    pub blob_key: String,
    /// The published file (and revision) the attachment was taken from, if any.
    pub published: Option<(String, u32)>,
    pub created_at: Timestamp,
}

fn attachment_from_row(row: &AnyRow) -> Result<Attachment, sqlx::Error> {
    Ok(Attachment {
        id: row.try_get("id")?,
        thread_id: row.try_get("thread_id")?,
        filename: row.try_get("filename")?,
        mime_type: row.try_get("mime_type")?,
        size: row.try_get::<i64, _>("size")? as u64,
        sha256: row.try_get("sha256")?,
        send_as: row.try_get("send_as")?,
        blob_key: row.try_get("blob_key")?,
        published: match (
            row.try_get::<Option<String>, _>("published_id")?,
            row.try_get::<Option<i64>, _>("published_revision")?,
        ) {
            (Some(id), Some(revision)) => Some((id, revision as u32)),
            _ => None,
        },
        created_at: Timestamp(row.try_get("created_at")?),
    })
}

/// A webhook a thread's messages are delivered to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Connector {
    pub id: String,
    pub thread_id: String,
    pub kind: String,
    pub url: String,
    /// Signs each delivery (`X-Ferry-Signature`), so the receiver can tell it came from ferry.
    pub secret: String,
    pub created_at: Timestamp,
}

fn connector_from_row(row: &AnyRow) -> Result<Connector, sqlx::Error> {
    Ok(Connector {
        id: row.try_get("id")?,
        thread_id: row.try_get("thread_id")?,
        kind: row.try_get("kind")?,
        url: row.try_get("url")?,
        secret: row.try_get("secret")?,
        created_at: Timestamp(row.try_get("created_at")?),
    })
}

/// A delivery claimed for an attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivery {
    pub id: String,
    pub connector_id: String,
    pub thread_id: String,
    pub event_id: i64,
    pub attempts: u32,
}

fn new_id() -> String {
    uuid::Uuid::now_v7().simple().to_string()
}

impl Db {
    pub async fn insert_attachment(&self, a: &Attachment) -> Result<(), Error> {
        sqlx::query(
            "INSERT INTO attachments (id, thread_id, filename, mime_type, size, sha256, send_as, \
             blob_key, published_id, published_revision, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
        )
        .bind(&a.id)
        .bind(&a.thread_id)
        .bind(&a.filename)
        .bind(&a.mime_type)
        .bind(a.size as i64)
        .bind(&a.sha256)
        .bind(&a.send_as)
        .bind(&a.blob_key)
        .bind(a.published.as_ref().map(|(id, _)| id.clone()))
        .bind(
            a.published
                .as_ref()
                .map(|(_, revision)| i64::from(*revision)),
        )
        .bind(a.created_at.millis())
        .execute(self.pool())
        .await?;
        Ok(())
    }

    /// An attachment; with `thread_id`, only if it belongs to that thread.
    pub async fn attachment(
        &self,
        id: &str,
        thread_id: Option<&str>,
    ) -> Result<Option<Attachment>, Error> {
        let row = sqlx::query(
            "SELECT id, thread_id, filename, mime_type, size, sha256, send_as, blob_key, \
             published_id, published_revision, created_at FROM attachments WHERE id = $1",
        )
        .bind(id)
        .fetch_optional(self.pool())
        .await?;
        Ok(row
            .as_ref()
            .map(attachment_from_row)
            .transpose()?
            .filter(|a| thread_id.is_none_or(|t| a.thread_id == t)))
    }

    pub async fn insert_connector(
        &self,
        thread_id: &str,
        kind: &str,
        url: &str,
        secret: &str,
    ) -> Result<Connector, Error> {
        let connector = Connector {
            id: new_id(),
            thread_id: thread_id.to_owned(),
            kind: kind.to_owned(),
            url: url.to_owned(),
            secret: secret.to_owned(),
            created_at: Timestamp(now_millis()),
        };
        sqlx::query(
            "INSERT INTO connectors (id, thread_id, kind, url, secret, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6)",
        )
        .bind(&connector.id)
        .bind(&connector.thread_id)
        .bind(&connector.kind)
        .bind(&connector.url)
        .bind(&connector.secret)
        .bind(connector.created_at.millis())
        .execute(self.pool())
        .await?;
        Ok(connector)
    }

    pub async fn connectors(&self, thread_id: &str) -> Result<Vec<Connector>, Error> {
        let rows = sqlx::query(
            "SELECT id, thread_id, kind, url, secret, created_at FROM connectors \
             WHERE thread_id = $1 ORDER BY created_at, id",
        )
        .bind(thread_id)
        .fetch_all(self.pool())
        .await?;
        Ok(rows
            .iter()
            .map(connector_from_row)
            .collect::<Result<_, _>>()?)
    }

    pub async fn connector(&self, id: &str) -> Result<Option<Connector>, Error> {
        let row = sqlx::query(
            "SELECT id, thread_id, kind, url, secret, created_at FROM connectors WHERE id = $1",
        )
        .bind(id)
        .fetch_optional(self.pool())
        .await?;
        Ok(row.as_ref().map(connector_from_row).transpose()?)
    }

    /// Removes a connector and its pending deliveries; `false` when there was none.
    pub async fn delete_connector(&self, thread_id: &str, id: &str) -> Result<bool, Error> {
        let mut tx = self.begin_write().await?;
        let removed = sqlx::query("DELETE FROM connectors WHERE id = $1 AND thread_id = $2")
            .bind(id)
            .bind(thread_id)
            .execute(&mut *tx)
            .await?
            .rows_affected();
        sqlx::query("DELETE FROM webhook_deliveries WHERE connector_id = $1 AND state = 'pending'")
            .bind(id)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(removed > 0)
    }

    /// Queues a delivery of one event to one connector, due now.
    pub async fn queue_delivery(
        &self,
        connector_id: &str,
        thread_id: &str,
        event_id: i64,
    ) -> Result<(), Error> {
        let now = now_millis();
        sqlx::query(
            "INSERT INTO webhook_deliveries (id, connector_id, thread_id, event_id, state, \
             attempts, next_at, created_at) VALUES ($1, $2, $3, $4, 'pending', 0, $5, $5)",
        )
        .bind(new_id())
        .bind(connector_id)
        .bind(thread_id)
        .bind(event_id)
        .bind(now)
        .execute(self.pool())
        .await?;
        Ok(())
    }

    /// How many deliveries wait to be made (due now or retrying later), on every node.
    pub async fn pending_deliveries(&self) -> Result<u64, Error> {
        let count: i64 =
            sqlx::query_scalar("SELECT COUNT(*) FROM webhook_deliveries WHERE state = 'pending'")
                .fetch_one(self.pool())
                .await?;
        Ok(u64::try_from(count).unwrap_or_default())
    }

    /// Up to `limit` connectors that have a delivery due and not claimed, oldest due first.
    pub async fn connectors_due(&self, limit: u32) -> Result<Vec<String>, Error> {
        let now = now_millis();
        let rows: Vec<String> = sqlx::query_scalar(
            "SELECT connector_id FROM webhook_deliveries WHERE state = 'pending' \
             AND next_at <= $1 AND (locked_until IS NULL OR locked_until < $1) \
             GROUP BY connector_id ORDER BY MIN(next_at) LIMIT $2",
        )
        .bind(now)
        .bind(i64::from(limit))
        .fetch_all(self.pool())
        .await?;
        Ok(rows)
    }

    /// Claims the next due delivery of one connector for `lease_ms`. The conditions are
    /// repeated in the outer `WHERE` so that, on Postgres, a node that loses the race for the
    /// row re-checks them against the winner's update and skips it: each attempt is made by
    /// one node.
    pub async fn claim_delivery(
        &self,
        connector_id: &str,
        lease_ms: i64,
    ) -> Result<Option<Delivery>, Error> {
        let now = now_millis();
        let row = sqlx::query(
            "UPDATE webhook_deliveries SET locked_until = $2, attempts = attempts + 1 \
             WHERE id IN (SELECT id FROM webhook_deliveries WHERE connector_id = $3 \
                          AND state = 'pending' AND next_at <= $1 \
                          AND (locked_until IS NULL OR locked_until < $1) \
                          ORDER BY next_at, created_at LIMIT 1) \
             AND state = 'pending' AND (locked_until IS NULL OR locked_until < $1) \
             RETURNING id, connector_id, thread_id, event_id, attempts",
        )
        .bind(now)
        .bind(now + lease_ms)
        .bind(connector_id)
        .fetch_optional(self.pool())
        .await?;
        let Some(row) = row else {
            return Ok(None);
        };
        Ok(Some(Delivery {
            id: row.try_get("id")?,
            connector_id: row.try_get("connector_id")?,
            thread_id: row.try_get("thread_id")?,
            event_id: row.try_get("event_id")?,
            attempts: row.try_get::<i64, _>("attempts")? as u32,
        }))
    }

    /// Records an attempt: delivered, retried at `retry_at`, or (without one) given up.
    pub async fn finish_delivery(
        &self,
        id: &str,
        outcome: Result<(), (&str, Option<i64>)>,
    ) -> Result<(), Error> {
        let (state, next_at, error) = match outcome {
            Ok(()) => ("delivered", None, None),
            Err((error, Some(retry_at))) => ("pending", Some(retry_at), Some(error)),
            Err((error, None)) => ("failed", None, Some(error)),
        };
        sqlx::query(
            "UPDATE webhook_deliveries SET state = $2, next_at = COALESCE($3, next_at), \
             locked_until = NULL, last_error = $4 WHERE id = $1",
        )
        .bind(id)
        .bind(state)
        .bind(next_at)
        .bind(error)
        .execute(self.pool())
        .await?;
        Ok(())
    }

    /// The newest published revision of a thread stored under a sandbox path or a storage path.
    pub async fn published_by_path(
        &self,
        thread_id: &str,
        path: &str,
    ) -> Result<Option<crate::published::Revision>, Error> {
        let revisions = self.published(thread_id, true).await?;
        Ok(revisions
            .into_iter()
            .filter(|r| r.sandbox_path == path || r.storage_path == path)
            .max_by_key(|r| (r.published_at, r.revision)))
    }
}
