//! Short-lived signed download links, for receivers that hold no ferry token (webhooks).
//!
//! A link names an attachment and an expiry and carries an HMAC-SHA256 of both under a key
//! derived from the deployment's JWT secret, so every node can check links any node made.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use sha2::Sha256;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::error::ApiError;

type HmacSha256 = Hmac<Sha256>;

/// How long a signed link works.
pub const LINK_TTL: Duration = Duration::from_secs(15 * 60);

#[derive(Clone)]
pub struct LinkSigner {
    key: Vec<u8>,
}

impl std::fmt::Debug for LinkSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LinkSigner { .. }")
    }
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs()
}

impl LinkSigner {
    /// A signer whose key is derived from the JWT secret; the derivation's label keeps link
    /// signatures from ever being valid as anything else signed with that secret.
    pub fn new(jwt_secret: &[u8]) -> LinkSigner {
        let mut mac = HmacSha256::new_from_slice(jwt_secret).expect("HMAC takes any key length");
        mac.update(b"ferry signed download links v1");
        LinkSigner {
            key: mac.finalize().into_bytes().to_vec(),
        }
    }

    fn mac(&self, attachment_id: &str, expires: u64) -> HmacSha256 {
        let mut mac = HmacSha256::new_from_slice(&self.key).expect("HMAC takes any key length");
        mac.update(attachment_id.as_bytes());
        mac.update(b"\n");
        mac.update(expires.to_string().as_bytes());
        mac
    }

    /// The query of a link valid for [`LINK_TTL`]: `expires=…&signature=…`, and the expiry.
    pub fn sign(&self, attachment_id: &str) -> (String, u64) {
        let expires = now() + LINK_TTL.as_secs();
        (self.sign_until(attachment_id, expires), expires)
    }

    /// The query of a link that works until `expires` (Unix seconds).
    pub fn sign_until(&self, attachment_id: &str, expires: u64) -> String {
        let signature = hex::encode(self.mac(attachment_id, expires).finalize().into_bytes());
        format!("expires={expires}&signature={signature}")
    }

    /// Checks a link: 403 when the signature does not match (tampered), or it has expired.
    pub fn verify(
        &self,
        attachment_id: &str,
        expires: u64,
        signature: &str,
    ) -> Result<(), ApiError> {
        let bytes = hex::decode(signature)
            .map_err(|_| ApiError::forbidden("the link's signature is not valid"))?;
        self.mac(attachment_id, expires)
            .verify_slice(&bytes)
            .map_err(|_| ApiError::forbidden("the link's signature is not valid"))?;
        if expires < now() {
            return Err(ApiError::forbidden(
                "the link has expired; ask for the message again to get a fresh one",
            ));
        }
        Ok(())
    }
}

/// Seals the grants of `file_url`s: a grant is JSON, carried in the URL as URL-safe base64
/// followed by `.` and an HMAC-SHA256 of it, under a key derived from the JWT secret (so every
/// node checks what any node sealed, and nothing else signed with that secret verifies here).
#[derive(Clone)]
pub struct GrantSealer {
    key: Vec<u8>,
}

impl std::fmt::Debug for GrantSealer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("GrantSealer { .. }")
    }
}

impl GrantSealer {
    pub fn new(jwt_secret: &[u8]) -> GrantSealer {
        let mut mac = HmacSha256::new_from_slice(jwt_secret).expect("HMAC takes any key length");
        mac.update(b"ferry file transfer grants v1");
        GrantSealer {
            key: mac.finalize().into_bytes().to_vec(),
        }
    }

    fn mac(&self, payload: &str) -> HmacSha256 {
        let mut mac = HmacSha256::new_from_slice(&self.key).expect("HMAC takes any key length");
        mac.update(payload.as_bytes());
        mac
    }

    /// `payload` sealed: `<base64url>.<hex HMAC>`, safe in a URL path segment.
    pub fn seal(&self, payload: &[u8]) -> String {
        let encoded = URL_SAFE_NO_PAD.encode(payload);
        let signature = hex::encode(self.mac(&encoded).finalize().into_bytes());
        format!("{encoded}.{signature}")
    }

    /// The payload of a sealed grant, or `None` when it was not sealed here (or was changed).
    pub fn open(&self, sealed: &str) -> Option<Vec<u8>> {
        let (encoded, signature) = sealed.split_once('.')?;
        let signature = hex::decode(signature).ok()?;
        self.mac(encoded).verify_slice(&signature).ok()?;
        URL_SAFE_NO_PAD.decode(encoded).ok()
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_grant_opens_only_as_sealed_here() {
        let sealer = GrantSealer::new(b"secret");
        let sealed = sealer.seal(br#"{"p":"/sandbox/a"}"#);
        assert_eq!(sealer.open(&sealed).unwrap(), br#"{"p":"/sandbox/a"}"#);
        assert_eq!(GrantSealer::new(b"other").open(&sealed), None);
        let (payload, signature) = sealed.split_once('.').unwrap();
        let forged = format!(
            "{}.{signature}",
            URL_SAFE_NO_PAD.encode(br#"{"p":"/sandbox/b"}"#)
        );
        assert_eq!(sealer.open(&forged), None, "{payload}");
        assert_eq!(sealer.open("no-dot"), None);
    }

    #[test]
    fn sign_and_verify() {
        let signer = LinkSigner::new(b"secret");
        let (query, expires) = signer.sign("att1");
        let signature = query.split("signature=").nth(1).unwrap();
        assert!(signer.verify("att1", expires, signature).is_ok());
        assert!(
            signer.verify("att2", expires, signature).is_err(),
            "another attachment"
        );
        assert!(
            signer.verify("att1", expires + 1, signature).is_err(),
            "a changed expiry"
        );
        assert!(signer.verify("att1", expires, "00").is_err());
        assert!(signer.verify("att1", expires, "zz").is_err());
        assert!(
            LinkSigner::new(b"other")
                .verify("att1", expires, signature)
                .is_err()
        );
        // A correctly signed link past its expiry.
        let past = now() - 1;
        let query = signer.sign_until("att1", past);
        let old = query.split("signature=").nth(1).unwrap();
        let err = signer.verify("att1", past, old).unwrap_err();
        assert!(err.message.contains("expired"));
    }

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
