//! Making the events of a thread's channel (docs/reference/events.md). Their type is
//! `ferry_core::thread_event`, shared with the clients that read them back; every event the
//! server stores gets its head here, from who spoke ([`head`]), and is kept in the form the
//! store takes ([`rendered`]).

use ferry_core::Timestamp;
use ferry_core::thread_event::{EventHead, EventRole, ThreadEvent};
use ferry_store::events::Rendered;

use crate::access::principal::DEFAULT_AGENT_ID;
use crate::events::Role;

/// The head of event `id`, stored at `at` in `thread_id`, spoken by `role`. A user's event
/// names the thread's agent.
pub fn head(
    id: i64,
    at: Timestamp,
    role: Role<'_>,
    thread_id: &str,
    content: Option<&str>,
) -> EventHead {
    let (role, agent_id) = match role {
        Role::User => (EventRole::User, DEFAULT_AGENT_ID),
        Role::Agent(agent) => (EventRole::Agent, agent),
    };
    EventHead {
        id,
        role,
        agent_id: agent_id.to_owned(),
        session_id: thread_id.to_owned(),
        content: content.map(str::to_owned),
        timestamp: at.rfc3339(),
    }
}

/// The event as the store keeps it: its type and its JSON, both from this one value.
pub fn rendered(event: &ThreadEvent) -> Rendered {
    Rendered {
        kind: event.type_name(),
        json: event.to_json(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ferry_core::thread_event::EventKind;

    #[test]
    fn a_user_event_names_the_threads_agent() {
        let head = head(1, Timestamp(0), Role::User, "t1", Some("hi"));
        assert_eq!(head.role, EventRole::User);
        assert_eq!(head.agent_id, DEFAULT_AGENT_ID);
        assert_eq!(head.timestamp, "1970-01-01T00:00:00.000Z");
    }

    #[test]
    fn the_stored_type_is_the_events_type() {
        let event = ThreadEvent {
            head: head(2, Timestamp(0), Role::Agent("bot"), "t1", None),
            kind: EventKind::Message {
                uploads: Vec::new(),
                files: Vec::new(),
            },
        };
        let kept = rendered(&event);
        let sent: serde_json::Value = serde_json::from_str(&kept.json).unwrap();
        assert_eq!((kept.kind, &sent["type"]), ("message", &"message".into()));
        assert_eq!(sent["agentId"], "bot");
    }
}
