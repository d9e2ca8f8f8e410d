//! Who may do what in a thread (docs/reference/auth.md, who may do what): decided here, once,
//! for every door.
//!
//! A thread the caller may not see is "not found", never "forbidden", so that its existence
//! does not leak; a caller who may see it but whose role may not perform the action is
//! refused as forbidden.
//!
//! The room of access and principals: who is asking ([`principal`]), the rule of who may do
//! what (here), and the S3 access keys that act as their makers ([`keys`]).

pub mod keys;
pub mod principal;

use ferry_store::threads::Thread;

use crate::access::principal::Principal;
use crate::app::App;
use crate::error::{Error, Result};

/// What the caller wants to do in the thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Read the thread, its uploads, published files, previews, events and sandbox.
    Read,
    /// Upload, or post a message as the user.
    ActAsUser,
    /// Write the sandbox, publish, send a file, speak: the agent's side.
    ActAsAgent,
    /// Mint an agent token, manage connectors, rename or delete the thread.
    Manage,
}

/// Whether a verified principal still stands for something. An agent's token is bound to its
/// thread: once the thread is deleted, the token, and all that was made with it (its S3 keys,
/// its file URLs), reaches nothing through any door, spaces included. Every door asks this
/// after it has verified who is calling, and refuses the caller as unauthenticated when not.
pub async fn is_live(app: &App, principal: &Principal) -> Result<bool> {
    match principal {
        Principal::Agent { thread, sub, .. } => Ok(app
            .db
            .thread(thread)
            .await?
            .is_some_and(|t| t.owner == *sub)),
        Principal::User { .. } | Principal::Service { .. } => Ok(true),
    }
}

/// What a door tells a caller whose principal is no longer live.
pub const THREAD_GONE: &str = "this agent token's thread does not exist (deleted, or never made): \
     the token reaches nothing; use a token of an existing thread";

/// Loads the thread if `principal` may perform `action` in it.
pub async fn thread(
    app: &App,
    principal: &Principal,
    thread_id: &str,
    action: Action,
) -> Result<Thread> {
    let missing = || Error::not_found(format!("no thread '{thread_id}'"));
    let thread = app.db.thread(thread_id).await?.ok_or_else(missing)?;
    let (visible, role_may) = match principal {
        Principal::User { sub } => (
            *sub == thread.owner,
            matches!(action, Action::Read | Action::ActAsUser | Action::Manage),
        ),
        Principal::Agent {
            thread: bound, sub, ..
        } => (
            *bound == thread.id && *sub == thread.owner,
            matches!(action, Action::Read | Action::ActAsAgent),
        ),
        Principal::Service { .. } => (true, true),
    };
    if !visible {
        return Err(missing());
    }
    if !role_may {
        return Err(Error::forbidden(match action {
            Action::ActAsUser => {
                "only the thread's owner (or service_role) may do this; agents publish, send files or speak instead"
            }
            Action::ActAsAgent => {
                "only the thread's agent (or service_role) may do this; use an agent token from POST /api/threads/{id}/agent-token"
            }
            Action::Manage => {
                "only the thread's owner (or service_role) may do this: mint agent tokens, manage connectors, rename or delete the thread"
            }
            Action::Read => "not allowed",
        }));
    }
    Ok(thread)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;

    const ACTIONS: [Action; 4] = [
        Action::Read,
        Action::ActAsUser,
        Action::ActAsAgent,
        Action::Manage,
    ];

    /// What the rule answers, in a word: `ok`, `forbidden` or `missing`.
    async fn answer(
        app: &App,
        principal: &Principal,
        thread: &str,
        action: Action,
    ) -> &'static str {
        match super::thread(app, principal, thread, action).await {
            Ok(t) => {
                assert_eq!(t.id, thread);
                "ok"
            }
            Err(Error::Forbidden(_)) => "forbidden",
            Err(Error::NotFound(message)) => {
                assert_eq!(
                    message,
                    format!("no thread '{thread}'"),
                    "nothing of it leaks"
                );
                "missing"
            }
            Err(other) => panic!("unexpected {other:?}"),
        }
    }

    fn agent(thread: &str, sub: &str) -> Principal {
        Principal::Agent {
            thread: thread.into(),
            sub: sub.into(),
            agent_id: "agent".into(),
        }
    }

    #[tokio::test]
    async fn every_principal_meets_the_rule_for_every_action() {
        let (app, _dir) = crate::testing::app().await;
        let mine = app.db.create_thread("alice", None).await.unwrap();
        let other = app.db.create_thread("alice", None).await.unwrap();
        let (t, o) = (mine.id.as_str(), other.id.as_str());
        let user = |sub: &str| Principal::User { sub: sub.into() };
        let service = |sub: Option<&str>| Principal::Service {
            sub: sub.map(Into::into),
        };
        // Each row: who, then the answer for Read, ActAsUser, ActAsAgent and Manage.
        let table: Vec<(&str, Principal, [&str; 4])> = vec![
            ("the owner", user("alice"), ["ok", "ok", "forbidden", "ok"]),
            ("another user", user("bob"), ["missing"; 4]),
            (
                "the thread's agent",
                agent(t, "alice"),
                ["ok", "forbidden", "ok", "forbidden"],
            ),
            (
                "an agent of another thread",
                agent(o, "alice"),
                ["missing"; 4],
            ),
            // A token naming the thread but another owner is no agent of it.
            ("a forged agent", agent(t, "bob"), ["missing"; 4]),
            ("service_role", service(None), ["ok"; 4]),
            (
                "service_role for another user",
                service(Some("bob")),
                ["ok"; 4],
            ),
        ];
        for (who, principal, expected) in table {
            for (action, want) in ACTIONS.into_iter().zip(expected) {
                assert_eq!(
                    answer(&app, &principal, t, action).await,
                    want,
                    "{who}, {action:?}"
                );
            }
        }
        // A thread that does not exist is missing for everyone, service_role included.
        for principal in [user("alice"), agent(t, "alice"), service(None)] {
            for action in ACTIONS {
                assert_eq!(
                    answer(&app, &principal, "no-such-thread", action).await,
                    "missing"
                );
            }
        }
    }

    #[tokio::test]
    async fn an_agent_token_dies_with_its_thread() {
        let (app, _dir) = crate::testing::app().await;
        let t = app.db.create_thread("alice", None).await.unwrap();
        let bound = agent(&t.id, "alice");
        assert!(is_live(&app, &bound).await.unwrap());
        assert!(
            !is_live(&app, &agent(&t.id, "bob")).await.unwrap(),
            "another owner's claim"
        );
        assert!(app.db.delete_thread(&t.id).await.unwrap());
        assert!(!is_live(&app, &bound).await.unwrap());
        // People and service_role do not hang on a thread.
        for principal in [
            Principal::User {
                sub: "alice".into(),
            },
            Principal::Service { sub: None },
        ] {
            assert!(is_live(&app, &principal).await.unwrap());
        }
    }
}
