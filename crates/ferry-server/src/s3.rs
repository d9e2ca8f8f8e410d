//! The S3 door on ferry's port (docs/s3.md): the `ferry-s3` service mounted at `/s3`, with
//! the server's credentials — access key secrets derived from the JWT secret, and bearer
//! tokens as session tokens.

use std::convert::Infallible;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::Request;
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ferry_s3::TokenRefusal;
use hmac::{Hmac, Mac};
use sha2::Sha256;
use tower::ServiceExt;

use crate::auth::{Auth, Principal};
use crate::error::ApiError;
use crate::state::AppState;

type HmacSha256 = Hmac<Sha256>;

/// Derives access key secrets: a key's secret is an HMAC of its id under a key derived from
/// the JWT secret, so the database never holds one, and rotating the JWT secret retires
/// every access key at once.
pub struct KeySecrets {
    key: Vec<u8>,
}

impl std::fmt::Debug for KeySecrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("KeySecrets { .. }")
    }
}

impl KeySecrets {
    pub fn new(jwt_secret: &[u8]) -> KeySecrets {
        let mut mac = HmacSha256::new_from_slice(jwt_secret).expect("HMAC takes any key length");
        // The label keeps these secrets from ever equalling anything else signed with it.
        mac.update(b"ferry s3 access key secrets v1");
        KeySecrets {
            key: mac.finalize().into_bytes().to_vec(),
        }
    }

    /// The secret of `access_key_id`: 43 characters of URL-safe base64.
    pub fn secret_of(&self, access_key_id: &str) -> String {
        let mut mac = HmacSha256::new_from_slice(&self.key).expect("HMAC takes any key length");
        mac.update(access_key_id.as_bytes());
        URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes())
    }
}

struct Identities {
    secrets: KeySecrets,
    auth: Auth,
}

impl ferry_s3::Identities for Identities {
    fn secret_of(&self, access_key_id: &str) -> String {
        self.secrets.secret_of(access_key_id)
    }

    fn session(&self, token: &str) -> Result<Principal, TokenRefusal> {
        self.auth.verify(token).map_err(|e| {
            if e.message.contains("expired") {
                TokenRefusal::Expired(e.message)
            } else {
                TokenRefusal::Invalid(e.message)
            }
        })
    }
}

/// The door as a service axum can route to (`/s3` and `/s3/{*rest}`).
pub fn door(
    state: &AppState,
) -> impl tower::Service<Request, Response = Response, Error = Infallible, Future: Send>
+ Clone
+ Send
+ 'static {
    let service = ferry_s3::service(ferry_s3::Setup {
        app: state.app.clone(),
        identities: Arc::new(Identities {
            secrets: KeySecrets::new(&state.config.jwt_secret),
            auth: state.auth.clone(),
        }),
        region: state.config.s3_region.clone(),
    });
    tower::service_fn(move |request: Request| {
        let service = service.clone();
        async move {
            Ok(match service.oneshot(request).await {
                Ok(response) => response.map(Body::new),
                Err(e) => ApiError::internal(format!("the S3 door failed: {e:?}")).into_response(),
            })
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_depend_on_the_key_and_the_server_secret() {
        let a = KeySecrets::new(b"one");
        let b = KeySecrets::new(b"two");
        assert_eq!(a.secret_of("FERRYAAAA"), a.secret_of("FERRYAAAA"));
        assert_ne!(a.secret_of("FERRYAAAA"), a.secret_of("FERRYAAAB"));
        assert_ne!(a.secret_of("FERRYAAAA"), b.secret_of("FERRYAAAA"));
        assert_eq!(a.secret_of("FERRYAAAA").len(), 43);
    }
}
