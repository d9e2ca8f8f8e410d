//! Webhook deliveries (docs/reference/say.md, connectors).
//!
//! Saying a message queues one delivery per registered webhook (`ferry_app::events::connectors`);
//! this worker posts them in the background with retries and backoff, so a slow or broken
//! receiver never holds up the agent's reply. Each connector has its own queue, worked by its
//! own task, so a slow receiver delays only its own deliveries, never another user's. Where
//! a webhook may point is [`crate::outbound`]'s business.

use hmac::{Hmac, Mac};
use sha2::Sha256;
use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ferry_app::upkeep::Delivery;
use ferry_core::thread_event::{EventKind, ThreadEvent};
use serde::Serialize;

use crate::state::AppState;

/// Attempts before a delivery is given up.
const MAX_ATTEMPTS: u32 = 8;
/// How long a claimed delivery stays with the node that claimed it: longer than one POST may
/// take, so it is not claimed twice.
fn lease(state: &AppState) -> Duration {
    state.config.webhooks.timeout * 2 + Duration::from_secs(30)
}
/// Receivers posted to at once on a node, each by its connector's own task.
const MAX_ACTIVE_CONNECTORS: usize = 64;

/// The wait before attempt `attempts + 1`: 1 s, 2 s, 4 s … at most 5 minutes.
pub fn backoff(attempts: u32) -> Duration {
    Duration::from_secs(1u64 << attempts.saturating_sub(1).min(8)).min(Duration::from_secs(300))
}

/// Runs webhook deliveries until the process ends. It looks for connectors with deliveries
/// due and starts a task for each one not already being worked on this node; that task claims
/// its connector's deliveries one at a time in the database (so with several nodes each
/// attempt is made once) and posts them in order, until none is due.
pub async fn run_delivery_worker(state: AppState) {
    let client = match crate::outbound::webhook_client(
        state.config.webhooks.timeout,
        state.config.webhooks.allow_private,
    ) {
        Ok(client) => client,
        Err(e) => {
            tracing::error!(error = %e, "webhook deliveries are off: no HTTP client");
            return;
        }
    };
    let active: Arc<Mutex<HashSet<String>>> = Arc::default();
    let slots = Arc::new(tokio::sync::Semaphore::new(MAX_ACTIVE_CONNECTORS));
    loop {
        match ferry_app::upkeep::connectors_due(&state.app, MAX_ACTIVE_CONNECTORS as u32 * 2).await
        {
            Ok(due) => {
                for connector_id in due {
                    let newly_active = active
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .insert(connector_id.clone());
                    if !newly_active {
                        continue;
                    }
                    let Ok(slot) = slots.clone().try_acquire_owned() else {
                        active
                            .lock()
                            .unwrap_or_else(|p| p.into_inner())
                            .remove(&connector_id);
                        break;
                    };
                    let (state, client, active) = (state.clone(), client.clone(), active.clone());
                    tokio::spawn(async move {
                        work_connector(&state, &client, &connector_id).await;
                        active
                            .lock()
                            .unwrap_or_else(|p| p.into_inner())
                            .remove(&connector_id);
                        drop(slot);
                    });
                }
            }
            Err(e) => tracing::warn!(error = %e, "could not look for webhook deliveries"),
        }
        // Sleep until a delivery is queued here, or a retry may have come due.
        let _ = tokio::time::timeout(
            Duration::from_millis(500),
            state.app.deliveries_due.notified(),
        )
        .await;
    }
}

/// Posts one connector's due deliveries, oldest first, until none is left.
async fn work_connector(state: &AppState, client: &reqwest::Client, connector_id: &str) {
    let lease = lease(state);
    loop {
        match ferry_app::upkeep::claim_delivery(&state.app, connector_id, lease).await {
            Ok(Some(delivery)) => attempt(state, client, delivery).await,
            Ok(None) => return,
            Err(e) => {
                tracing::warn!(error = %e, connector = %connector_id, "could not claim a webhook delivery");
                return;
            }
        }
    }
}

async fn attempt(state: &AppState, client: &reqwest::Client, delivery: Delivery) {
    let outcome = post(state, client, &delivery).await;
    let result = match &outcome {
        Ok(()) => {
            delivered("ok");
            Ok(())
        }
        Err(why) if delivery.attempts < MAX_ATTEMPTS => {
            delivered("retry");
            let retry_at = now_millis() + backoff(delivery.attempts).as_millis() as i64;
            tracing::info!(delivery = %delivery.id, attempt = delivery.attempts, %why, "webhook delivery failed; will retry");
            Err((why.as_str(), Some(retry_at)))
        }
        Err(why) => {
            delivered("failed");
            tracing::warn!(delivery = %delivery.id, %why, "webhook delivery failed for good");
            Err((why.as_str(), None))
        }
    };
    if let Err(e) = ferry_app::upkeep::finish_delivery(&state.app, &delivery.id, result).await {
        tracing::warn!(error = %e, "could not record a webhook delivery");
    }
}

/// Counts one delivery attempt by how it ended: `ok`, `retry` (failed, to be tried again) or
/// `failed` (failed for good).
fn delivered(outcome: &'static str) {
    metrics::counter!("ferry_webhook_deliveries_total", "outcome" => outcome).increment(1);
}

fn now_millis() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or_default()
}

/// What a webhook receives (docs/reference/say.md, connectors).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Payload {
    /// Always `message`.
    #[serde(rename = "type")]
    kind: &'static str,
    thread_id: String,
    delivery_id: String,
    /// The message event, with each attachment's `url` a short-lived signed link that needs
    /// no token, and its `expiresAt`.
    message: ThreadEvent,
}

/// The payload of `delivery`, from its stored message event.
async fn payload(state: &AppState, delivery: &Delivery) -> Result<Payload, String> {
    let mut message = ferry_app::upkeep::delivered_event(&state.app, delivery)
        .await
        .map_err(|e| e.to_string())?
        .ok_or("the event no longer exists")?;
    if let EventKind::Message { files, .. } = &mut message.kind {
        for file in files {
            let (url, expires) = state.signed_attachment_url(&file.id);
            file.url = url;
            file.expires_at = Some(ferry_core::Timestamp(expires as i64 * 1000).rfc3339());
        }
    }
    Ok(Payload {
        kind: "message",
        thread_id: delivery.thread_id.clone(),
        delivery_id: delivery.id.clone(),
        message,
    })
}

async fn post(
    state: &AppState,
    client: &reqwest::Client,
    delivery: &Delivery,
) -> Result<(), String> {
    let connector = ferry_app::upkeep::connector(&state.app, &delivery.connector_id)
        .await
        .map_err(|e| e.to_string())?
        .ok_or("the connector was removed")?;
    // Registered before the rules were tightened, or under FERRY_WEBHOOK_ALLOW_PRIVATE since
    // turned off: the URL is checked again before every attempt.
    let url =
        reqwest::Url::parse(&connector.url).map_err(|e| format!("the URL is invalid: {e}"))?;
    crate::outbound::check_webhook_url(&url, state.config.webhooks.allow_private)?;
    let body = serde_json::to_vec(&payload(state, delivery).await?).map_err(|e| e.to_string())?;
    let mut mac = Hmac::<Sha256>::new_from_slice(connector.secret.as_bytes())
        .expect("HMAC takes any key length");
    mac.update(&body);
    let signature = format!("sha256={}", hex::encode(mac.finalize().into_bytes()));
    let response = client
        .post(url)
        .header("content-type", "application/json")
        .header("x-ferry-signature", signature)
        .header("x-ferry-delivery", &delivery.id)
        .body(body)
        .send()
        .await
        .map_err(|e| format!("the receiver could not be reached: {e}"))?;
    if response.status().is_success() {
        Ok(())
    } else if response.status().is_redirection() {
        Err(format!(
            "the receiver answered {} (redirects are not followed)",
            response.status()
        ))
    } else {
        Err(format!("the receiver answered {}", response.status()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_and_is_capped() {
        assert_eq!(backoff(1), Duration::from_secs(1));
        assert_eq!(backoff(2), Duration::from_secs(2));
        assert_eq!(backoff(4), Duration::from_secs(8));
        assert_eq!(backoff(20), Duration::from_secs(256));
    }
}
