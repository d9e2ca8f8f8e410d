//! The room of events: the heads of a thread's events and the form the store keeps them in
//! ([`thread_event`]; their type is `ferry_core::thread_event`), the views of files they carry
//! ([`views`], made here, below every use case that emits them, so no use case and the events
//! import each other), the channels a subscriber may follow and read back ([`Source`], here;
//! the live wake-ups are [`crate::hub`]'s) and where an agent's messages go besides the
//! channel ([`connectors`]).

pub mod connectors;
pub mod thread_event;
pub mod views;

use ferry_store::events::StoredEvent;

/// A stored channel of events a subscriber follows: a thread's, or a space's change feed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    Thread(String),
    Space {
        owner: String,
        space: ferry_core::SpaceName,
    },
}

impl Source {
    /// A thread's channel, if the caller may read the thread.
    pub async fn of_thread(
        app: &crate::app::App,
        principal: &crate::access::principal::Principal,
        thread_id: &str,
    ) -> crate::error::Result<Source> {
        let thread =
            crate::access::thread(app, principal, thread_id, crate::access::Action::Read).await?;
        Ok(Source::Thread(thread.id))
    }

    /// The change feed of one of the caller's spaces (one that does not exist yet has an
    /// empty feed, which its first file starts).
    pub fn of_space(
        principal: &crate::access::principal::Principal,
        space: &ferry_core::SpaceName,
    ) -> crate::error::Result<Source> {
        Ok(Source::Space {
            owner: principal.space_owner()?.to_owned(),
            space: space.clone(),
        })
    }

    /// The key the hub delivers it under.
    pub fn key(&self) -> String {
        match self {
            Source::Thread(id) => id.clone(),
            Source::Space { owner, space } => ferry_store::space_events::channel_key(owner, space),
        }
    }

    /// Its stored events after `after`, oldest first, at most `limit`.
    pub async fn after(
        &self,
        app: &crate::app::App,
        after: i64,
        limit: u32,
    ) -> crate::error::Result<Vec<StoredEvent>> {
        Ok(match self {
            Source::Thread(id) => app.db.events_after(id, after, limit).await?,
            Source::Space { owner, space } => {
                app.db
                    .space_events_after(owner, space, after, limit)
                    .await?
            }
        })
    }
}

/// The largest serialized event (PubNub's message limit, kept so that events can be bridged
/// to PubNub unchanged).
pub const MAX_EVENT_BYTES: usize = 32 * 1024;

/// Who an event speaks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role<'a> {
    User,
    Agent(&'a str),
}

/// A [`Role`] that owns its agent id: what an event renderer keeps, since it runs where the
/// event is stored, after the request's borrows have ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Speaker {
    User,
    Agent(String),
}

impl Speaker {
    pub fn role(&self) -> Role<'_> {
        match self {
            Speaker::User => Role::User,
            Speaker::Agent(agent) => Role::Agent(agent),
        }
    }
}

impl From<Role<'_>> for Speaker {
    fn from(role: Role<'_>) -> Speaker {
        match role {
            Role::User => Speaker::User,
            Role::Agent(agent) => Speaker::Agent(agent.to_owned()),
        }
    }
}
