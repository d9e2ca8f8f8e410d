//! Who signed a request (docs/s3.md, credentials).
//!
//! Two kinds of credentials sign S3 requests:
//! - an access key made with `POST /api/s3/keys`: its secret is derived from the server's
//!   secret and the key id (so the database holds no secret), and the key acts as the
//!   principal that made it, looked up on every request so that a revoked key is refused at
//!   once on every node (once per request: the lookup that finds the secret for the signature
//!   check also settles the principal the operation acts as, see [`one_lookup`]);
//! - a bearer token sent as the session token (`X-Amz-Security-Token`), signed with the
//!   access key id and secret `ferry`: the token's principal, for an agent that holds only a
//!   token.

use std::cell::RefCell;
use std::future::Future;
use std::sync::Arc;

use ferry_app::{App, Principal};
use s3s::auth::{S3Auth, SecretKey};
use s3s::{S3Result, s3_error};

/// The access key id (and [`SESSION_SECRET`] the secret) that says "the session token is the
/// credential".
pub const SESSION_ACCESS_KEY: &str = "ferry";
pub const SESSION_SECRET: &str = "ferry";

/// Why a session token was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TokenRefusal {
    Expired(String),
    Invalid(String),
}

tokio::task_local! {
    /// The access key whose secret the signature check asked for in this request, with the
    /// principal found with it.
    static FOUND: RefCell<Option<(String, Principal)>>;
}

/// Runs one request (its signature check, then its operation) so that an access key is looked
/// up once: [`Keys`] keeps the principal it found, and [`principal`] takes it instead of asking
/// the database again.
pub(crate) fn one_lookup<F: Future>(request: F) -> impl Future<Output = F::Output> {
    FOUND.scope(RefCell::new(None), request)
}

/// Keeps the principal found for `access_key` for the rest of this request. Outside
/// [`one_lookup`] there is nowhere to keep it, and [`principal`] then looks the key up itself.
fn remember(access_key: &str, principal: Principal) {
    let _ = FOUND.try_with(|found| {
        found.replace(Some((access_key.to_owned(), principal)));
    });
}

/// The principal this request's signature check found for `access_key`, taken (a request
/// asks once), if it found one for that key.
fn recall(access_key: &str) -> Option<Principal> {
    FOUND
        .try_with(|found| found.take())
        .ok()
        .flatten()
        .filter(|(key, _)| key == access_key)
        .map(|(_, principal)| principal)
}

/// What the door needs from the server's own credentials.
#[async_trait::async_trait]
pub trait Identities: Send + Sync + 'static {
    /// The secret of access key `access_key_id`, derived from the server's secret.
    fn secret_of(&self, access_key_id: &str) -> String;
    /// The principal a bearer token speaks for.
    async fn session(&self, token: &str) -> Result<Principal, TokenRefusal>;
}

/// Hands `s3s` the secret to check a signature with.
pub(crate) struct Keys {
    app: App,
    identities: Arc<dyn Identities>,
}

impl Keys {
    pub(crate) fn new(app: App, identities: Arc<dyn Identities>) -> Keys {
        Keys { app, identities }
    }
}

#[async_trait::async_trait]
impl S3Auth for Keys {
    async fn get_secret_key(&self, access_key: &str) -> S3Result<SecretKey> {
        if access_key == SESSION_ACCESS_KEY {
            return Ok(SecretKey::from(SESSION_SECRET));
        }
        // A key never made or revoked is refused before its signature is looked at, so the
        // answer says which (S3's InvalidAccessKeyId rather than SignatureDoesNotMatch).
        match ferry_app::access::keys::principal_of(&self.app, access_key).await {
            Ok(Some(principal)) => {
                remember(access_key, principal);
                Ok(SecretKey::from(self.identities.secret_of(access_key)))
            }
            Ok(None) => Err(s3_error!(
                InvalidAccessKeyId,
                "the access key '{access_key}' does not exist or was revoked"
            )),
            Err(e) => Err(crate::errors::to_s3(e)),
        }
    }
}

/// The principal a verified request acts as, while it still stands for something (an
/// agent's token and keys end with its thread).
pub(crate) async fn principal(
    app: &App,
    identities: &dyn Identities,
    access_key: &str,
    session_token: Option<&str>,
) -> S3Result<Principal> {
    let principal = identify(app, identities, access_key, session_token).await?;
    match ferry_app::access::is_live(app, &principal).await {
        Ok(true) => Ok(principal),
        Ok(false) if access_key == SESSION_ACCESS_KEY => Err(s3_error!(
            InvalidToken,
            "{}",
            ferry_app::access::THREAD_GONE
        )),
        Ok(false) => Err(s3_error!(
            InvalidAccessKeyId,
            "the access key '{access_key}' was made by the agent of a thread since deleted"
        )),
        Err(e) => Err(crate::errors::to_s3(e)),
    }
}

async fn identify(
    app: &App,
    identities: &dyn Identities,
    access_key: &str,
    session_token: Option<&str>,
) -> S3Result<Principal> {
    if access_key == SESSION_ACCESS_KEY {
        let token = session_token.ok_or_else(|| {
            s3_error!(
                InvalidToken,
                "the access key 'ferry' needs a bearer token as X-Amz-Security-Token"
            )
        })?;
        return identities
            .session(token)
            .await
            .map_err(|refusal| match refusal {
                TokenRefusal::Expired(why) => s3_error!(ExpiredToken, "{why}"),
                TokenRefusal::Invalid(why) => s3_error!(InvalidToken, "{why}"),
            });
    }
    if let Some(principal) = recall(access_key) {
        return Ok(principal);
    }
    match ferry_app::access::keys::principal_of(app, access_key).await {
        Ok(Some(principal)) => Ok(principal),
        Ok(None) => Err(s3_error!(
            InvalidAccessKeyId,
            "the access key '{access_key}' does not exist or was revoked"
        )),
        Err(e) => Err(crate::errors::to_s3(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alice() -> Principal {
        Principal::User {
            sub: "alice".into(),
        }
    }

    #[tokio::test]
    async fn a_request_recalls_the_principal_found_for_its_own_key_once() {
        one_lookup(async {
            remember("AKALICE", alice());
            assert_eq!(recall("AKALICE"), Some(alice()));
            // Taken: a second ask looks the key up again.
            assert_eq!(recall("AKALICE"), None);
            remember("AKALICE", alice());
            assert_eq!(
                recall("AKBOB"),
                None,
                "another key never gets alice's principal"
            );
        })
        .await;
    }

    #[tokio::test]
    async fn requests_do_not_share_what_they_found() {
        one_lookup(async { remember("AKALICE", alice()) }).await;
        one_lookup(async { assert_eq!(recall("AKALICE"), None) }).await;
        // Outside a request's scope nothing is kept, and nothing fails.
        remember("AKALICE", alice());
        assert_eq!(recall("AKALICE"), None);
    }
}
