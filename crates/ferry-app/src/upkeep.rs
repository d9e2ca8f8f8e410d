//! What keeps a node running, beside the requests: its health, the sweep of unreferenced
//! bytes, the webhook queue, events stored by other nodes, and closing the stores at the end.
//! The server schedules these; what each one does to the stores is decided here, so no door
//! reaches into the store itself.

use std::time::Duration;

use ferry_core::thread_event::ThreadEvent;
use ferry_store::say::Connector as ConnectorRow;
pub use ferry_store::say::Delivery;

use crate::app::App;
use crate::error::{Error, Result};

/// Whether the metadata database answers.
pub async fn healthy(app: &App) -> Result<()> {
    Ok(app.db.ping().await?)
}

/// Webhook deliveries waiting to be posted, across every node.
pub async fn pending_deliveries(app: &App) -> Result<u64> {
    Ok(app.db.pending_deliveries().await?)
}

/// Connectors with deliveries due now, at most `limit` of them.
pub async fn connectors_due(app: &App, limit: u32) -> Result<Vec<String>> {
    Ok(app.db.connectors_due(limit).await?)
}

/// The message a delivery carries, as its event was stored; `None` when it no longer is.
pub async fn delivered_event(app: &App, delivery: &Delivery) -> Result<Option<ThreadEvent>> {
    let Some(stored) = app.db.event(&delivery.thread_id, delivery.event_id).await? else {
        return Ok(None);
    };
    serde_json::from_str(&stored.json).map(Some).map_err(|e| {
        Error::internal(format!(
            "event {} of thread {} cannot be read: {e}",
            delivery.event_id, delivery.thread_id
        ))
    })
}

/// The connector a delivery is for, if it was not removed since.
pub async fn connector(app: &App, connector_id: &str) -> Result<Option<ConnectorRow>> {
    Ok(app.db.connector(connector_id).await?)
}

/// Takes the connector's oldest due delivery for `lease` (another node takes it again only
/// once the lease has passed), if it has one.
pub async fn claim_delivery(
    app: &App,
    connector_id: &str,
    lease: Duration,
) -> Result<Option<Delivery>> {
    let lease = i64::try_from(lease.as_millis()).unwrap_or(i64::MAX);
    Ok(app.db.claim_delivery(connector_id, lease).await?)
}

/// Records how a delivery attempt ended: delivered, to be tried again at a time (Unix
/// milliseconds), or failed for good (`None`).
pub async fn finish_delivery(
    app: &App,
    delivery_id: &str,
    outcome: std::result::Result<(), (&str, Option<i64>)>,
) -> Result<()> {
    Ok(app.db.finish_delivery(delivery_id, outcome).await?)
}

/// Removes resumable uploads whose time ran out (their parts with them), blobs nothing points
/// at and spools left by interrupted uploads, older than `grace`, then the temporary files of
/// interrupted sandbox writes, and logs what each did (one failing does not keep the others
/// from running).
pub async fn sweep(app: &App, grace: Duration) {
    match crate::transfers::resumable::sweep_expired(app).await {
        Ok(0) => {}
        Ok(removed) => tracing::info!(removed, "removed expired resumable uploads"),
        Err(e) => tracing::warn!(error = %e, "sweep of expired resumable uploads failed"),
    }
    match ferry_store::sweep::sweep(&app.db, &app.blobs, grace).await {
        Ok(report) => tracing::info!(?report, "sweep done"),
        Err(e) => tracing::warn!(error = %e, "sweep failed"),
    }
    match app.sandboxes.sweep_temporary_files(grace).await {
        Ok(0) => {}
        Ok(removed) => tracing::info!(removed, "swept sandbox files of interrupted writes"),
        Err(e) => tracing::warn!(error = %e, "sandbox sweep failed"),
    }
}

/// Follows the events other nodes store (Postgres deployments) and wakes this node's
/// subscribers of each: a thread's event is read and handed on when someone here listens to
/// that thread, and its owner's thread list is told it moved; a space's feed, and a thread
/// list that changed, are told to catch up. Answers when the database is gone or
/// never had other nodes (SQLite), and `Err` when the notifications broke off (listen again).
pub async fn relay_other_nodes(app: &App, database_url: &str) -> Result<()> {
    use futures::StreamExt;
    let Some(mut notifications) = app.db.listen_events(database_url).await? else {
        return Ok(());
    };
    while let Some(notification) = notifications.next().await {
        let (key, id) = notification?;
        if ferry_store::space_events::is_space_key(&key) || ferry_store::threads::is_list_key(&key)
        {
            app.events.poke(&key);
            continue;
        }
        app.nudge_thread_list_of(&key);
        if !app.events.wants(&key, id) {
            continue;
        }
        match app.db.event(&key, id).await {
            Ok(Some(event)) => app.events.publish(event),
            Ok(None) => {}
            Err(e) => tracing::warn!(error = %e, "cannot read a notified event"),
        }
    }
    Err(crate::error::Error::internal("event notifications ended"))
}

/// Closes the stores (the last thing a node does).
pub async fn close(app: &App) {
    app.db.close().await;
}
