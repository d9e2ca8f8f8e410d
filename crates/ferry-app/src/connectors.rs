//! Where a thread's agent messages go (docs/reference/say.md, connectors): the thread's own
//! event channel, then each registered webhook. Delivering to a webhook only queues the
//! message; the door that speaks HTTP posts it.

use ferry_store::events::StoredEvent;
use ferry_store::say::Connector as ConnectorRow;

use crate::App;
use crate::error::Result;

/// Somewhere a thread's messages are delivered.
#[derive(Debug, Clone)]
pub enum Connector {
    /// The thread's event channel: the message is already stored, so delivering it means
    /// waking the subscribers.
    EventChannel,
    /// A registered webhook: delivering queues the message for the delivery worker.
    Webhook(ConnectorRow),
}

impl Connector {
    pub async fn deliver(&self, app: &App, thread_id: &str, event: &StoredEvent) -> Result<()> {
        match self {
            Connector::EventChannel => app.announce(event.clone()),
            Connector::Webhook(row) => {
                app.db.queue_delivery(&row.id, thread_id, event.id).await?;
                app.deliveries_due.notify_one();
            }
        }
        Ok(())
    }
}

/// The connectors of a thread: its event channel, then its webhooks.
pub async fn of_thread(app: &App, thread_id: &str) -> Result<Vec<Connector>> {
    let mut all = vec![Connector::EventChannel];
    for row in app.db.connectors(thread_id).await? {
        if row.kind == "webhook" {
            all.push(Connector::Webhook(row));
        }
    }
    Ok(all)
}
