//! Where a thread's agent messages go (docs/reference/say.md, connectors): the thread's own
//! event channel, then each registered webhook. Delivering to a webhook only queues the
//! message; the door that speaks HTTP posts it, and owns the rule on which addresses a
//! webhook may reach (it checks the URL before registering, and every address it connects to).

use ferry_store::events::StoredEvent;
use ferry_store::say::Connector as ConnectorRow;

use crate::access::principal::Principal;
use crate::access::{self, Action};
use crate::app::App;
use crate::error::{Error, Result};

/// The one kind of connector a caller registers.
pub const WEBHOOK: &str = "webhook";

/// The door's rule on where a webhook may point: the URL to store, or why `url` is refused
/// (in words for the caller).
pub type UrlPolicy<'a> = &'a (dyn Fn(&str) -> std::result::Result<String, String> + Sync);

/// Registers a webhook (the thread's owner, or service_role) at `url`, as `policy` allows.
/// The answer carries the new signing secret, the only time it is shown.
pub async fn register(
    app: &App,
    principal: &Principal,
    thread_id: &str,
    kind: &str,
    url: &str,
    policy: UrlPolicy<'_>,
) -> Result<ConnectorRow> {
    let thread = access::thread(app, principal, thread_id, Action::Manage).await?;
    if kind != WEBHOOK {
        return Err(Error::invalid_request(format!(
            "connector type '{kind}' is not known: use '{WEBHOOK}'"
        )));
    }
    let url = policy(url).map_err(Error::InvalidRequest)?;
    let secret = hex::encode(rand::random::<[u8; 32]>());
    Ok(app
        .db
        .insert_connector(&thread.id, WEBHOOK, &url, &secret)
        .await?)
}

/// The thread's registered connectors (the owner, or service_role).
pub async fn list(app: &App, principal: &Principal, thread_id: &str) -> Result<Vec<ConnectorRow>> {
    let thread = access::thread(app, principal, thread_id, Action::Manage).await?;
    Ok(app.db.connectors(&thread.id).await?)
}

/// Removes a connector; its pending deliveries go with it.
pub async fn remove(
    app: &App,
    principal: &Principal,
    thread_id: &str,
    connector_id: &str,
) -> Result<()> {
    let thread = access::thread(app, principal, thread_id, Action::Manage).await?;
    if app.db.delete_connector(&thread.id, connector_id).await? {
        Ok(())
    } else {
        Err(Error::not_found(format!(
            "no connector '{connector_id}' in this thread"
        )))
    }
}

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
        if row.kind == WEBHOOK {
            all.push(Connector::Webhook(row));
        }
    }
    Ok(all)
}
