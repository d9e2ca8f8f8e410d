//! S3 access keys (docs/s3.md): each acts as the principal that made it, with exactly its
//! rights. The maker lists and revokes its keys, and so does the owner of the thread an
//! agent's key acts in (and a service token, for every agent's key); a revoked key is refused
//! on the next request on every node, since every request looks its key up. An agent's key
//! ends when the token that made it would have, and with its thread. The key's secret is the
//! S3 door's business: it is derived, never stored.

use ferry_core::Timestamp;
pub use ferry_store::access_keys::AccessKey;
use ferry_store::access_keys::KeyScope;

use crate::access::principal::{Principal, Recorded};
use crate::app::App;
use crate::error::{Error, Result};

/// Key ids look like AWS's: 20 upper-case letters and digits, here starting with `FERRY`.
const ID_PREFIX: &str = "FERRY";
const ID_ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

fn new_id() -> String {
    let random: [u8; 15] = rand::random();
    let tail: String = random
        .iter()
        .map(|b| ID_ALPHABET[usize::from(*b) % ID_ALPHABET.len()] as char)
        .collect();
    format!("{ID_PREFIX}{tail}")
}

/// Makes a key that acts as `principal`, whose token expires at `token_expires_at`: an
/// agent's key ends then (a person's or a service's key lasts until revoked, as S3 keys do).
pub async fn create(
    app: &App,
    principal: &Principal,
    token_expires_at: Timestamp,
) -> Result<AccessKey> {
    let recorded = principal.recorded();
    let key = AccessKey {
        access_key_id: new_id(),
        made_by: principal.identity_key(),
        kind: recorded.role,
        sub: recorded.sub,
        thread_id: recorded.thread,
        agent_id: recorded.agent,
        created_at: Timestamp::now(),
        expires_at: matches!(principal, Principal::Agent { .. }).then_some(token_expires_at),
    };
    Ok(app.db.insert_access_key(key).await?)
}

/// Which keys besides its own a principal lists and revokes: a person, those acting in its
/// threads; a service token, every agent's; an agent, none.
fn scope(principal: &Principal) -> KeyScope<'_> {
    match principal {
        Principal::User { sub } => KeyScope::AndThreadsOf(sub),
        Principal::Service { .. } => KeyScope::AndEveryAgent,
        Principal::Agent { .. } => KeyScope::Own,
    }
}

/// The keys `principal` made, and those acting in threads it owns, oldest first.
pub async fn list(app: &App, principal: &Principal) -> Result<Vec<AccessKey>> {
    Ok(app
        .db
        .access_keys_of(&principal.identity_key(), scope(principal))
        .await?)
}

/// Revokes a key `principal` made or that acts in a thread it owns.
pub async fn revoke(app: &App, principal: &Principal, access_key_id: &str) -> Result<()> {
    if app
        .db
        .delete_access_key(&principal.identity_key(), scope(principal), access_key_id)
        .await?
    {
        Ok(())
    } else {
        Err(Error::not_found(format!(
            "no access key '{access_key_id}' made by this caller or acting in its threads"
        )))
    }
}

/// The principal a key acts as, or `None` when there is no such key (never made, revoked,
/// past its end, or made by an agent whose thread is gone).
pub async fn principal_of(app: &App, access_key_id: &str) -> Result<Option<Principal>> {
    let Some(key) = app.db.access_key(access_key_id).await? else {
        return Ok(None);
    };
    if key.expires_at.is_some_and(|end| end <= Timestamp::now()) {
        return Ok(None);
    }
    let recorded = Recorded {
        role: key.kind,
        sub: key.sub,
        thread: key.thread_id,
        agent: key.agent_id,
    };
    let principal = recorded.principal().ok_or_else(|| {
        Error::internal(format!(
            "access key '{access_key_id}' has an unreadable principal"
        ))
    })?;
    // An agent's key ends with its thread.
    if !crate::access::is_live(app, &principal).await? {
        return Ok(None);
    }
    Ok(Some(principal))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{self, agent, user};

    fn ids(keys: Vec<AccessKey>) -> Vec<String> {
        // Sorted, so that keys made in the same millisecond compare in one order.
        let mut ids: Vec<String> = keys.into_iter().map(|k| k.access_key_id).collect();
        ids.sort();
        ids
    }

    #[tokio::test]
    async fn an_agents_key_ends_with_its_token_and_with_its_thread() {
        let (app, _dir) = testing::app().await;
        let alice = user("alice");
        let (_, its_agent) = testing::thread_of(&app, "alice").await;
        let later = Timestamp(Timestamp::now().millis() + 60_000);
        let key = create(&app, &its_agent, later).await.unwrap();
        assert_eq!(key.expires_at, Some(later));
        assert_eq!(
            principal_of(&app, &key.access_key_id).await.unwrap(),
            Some(its_agent.clone())
        );
        let past = Timestamp(Timestamp::now().millis() - 1);
        let ended = create(&app, &its_agent, past).await.unwrap();
        assert_eq!(
            principal_of(&app, &ended.access_key_id).await.unwrap(),
            None
        );
        // A person's key does not end with the token that made it.
        let own = create(&app, &alice, past).await.unwrap();
        assert_eq!(own.expires_at, None);
        assert_eq!(
            principal_of(&app, &own.access_key_id).await.unwrap(),
            Some(alice.clone())
        );
        // A key of an agent whose thread is gone is no key.
        let gone = create(&app, &agent("alice", "no-such-thread"), later)
            .await
            .unwrap();
        assert_eq!(principal_of(&app, &gone.access_key_id).await.unwrap(), None);
    }

    #[tokio::test]
    async fn the_thread_owner_lists_and_revokes_its_agents_keys_and_no_one_else_does() {
        let (app, _dir) = testing::app().await;
        let (alice, bob) = (user("alice"), user("bob"));
        let (_, its_agent) = testing::thread_of(&app, "alice").await;
        let later = Timestamp(Timestamp::now().millis() + 60_000);
        let agents = create(&app, &its_agent, later).await.unwrap();
        let alices = create(&app, &alice, later).await.unwrap();
        let bobs = create(&app, &bob, later).await.unwrap();
        let mut both = vec![agents.access_key_id.clone(), alices.access_key_id.clone()];
        both.sort();
        assert_eq!(ids(list(&app, &alice).await.unwrap()), both);
        assert_eq!(
            ids(list(&app, &bob).await.unwrap()),
            [bobs.access_key_id.as_str()]
        );
        assert_eq!(
            ids(list(&app, &its_agent).await.unwrap()),
            [agents.access_key_id.as_str()]
        );
        let service = Principal::Service { sub: None };
        assert_eq!(
            ids(list(&app, &service).await.unwrap()),
            [agents.access_key_id.as_str()]
        );
        let refused = revoke(&app, &bob, &agents.access_key_id).await;
        assert!(matches!(refused, Err(Error::NotFound(_))), "{refused:?}");
        revoke(&app, &alice, &agents.access_key_id).await.unwrap();
        assert_eq!(
            principal_of(&app, &agents.access_key_id).await.unwrap(),
            None
        );
    }
}
