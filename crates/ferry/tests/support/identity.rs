//! An identity provider made in the test: fresh ES256, RS256 and EdDSA keys, their public
//! halves as a JWKS, and tokens signed with them.

use std::sync::OnceLock;

use jsonwebtoken::jwk::Jwk;
use jsonwebtoken::{Algorithm, EncodingKey, Header};

/// The `iss` the provider's tokens carry.
pub const ISSUER: &str = "https://project.supabase.test/auth/v1";

/// One signing key of the provider.
pub struct ProviderKey {
    pub kid: String,
    pub algorithm: Algorithm,
    encoding: EncodingKey,
}

impl ProviderKey {
    /// A new key for `algorithm` (ES256, RS256 or EdDSA), named `kid`.
    pub fn generate(algorithm: Algorithm, kid: &str) -> ProviderKey {
        use ed25519_dalek::pkcs8::EncodePrivateKey as _;
        use rsa::pkcs1::EncodeRsaPrivateKey as _;
        let mut rng = rand_core_06::OsRng;
        let encoding = match algorithm {
            Algorithm::ES256 => {
                let key = p256::ecdsa::SigningKey::random(&mut rng);
                EncodingKey::from_ec_der(key.to_pkcs8_der().unwrap().as_bytes())
            }
            Algorithm::EdDSA => {
                // PKCS#8 v1 (the seed alone), the form jsonwebtoken reads the public key from.
                let key = ed25519_dalek::SigningKey::generate(&mut rng);
                let seed = ed25519_dalek::pkcs8::KeypairBytes {
                    secret_key: key.to_bytes(),
                    public_key: None,
                };
                EncodingKey::from_ed_der(seed.to_pkcs8_der().unwrap().as_bytes())
            }
            Algorithm::RS256 => EncodingKey::from_rsa_der(rsa_key().as_bytes()),
            other => panic!("no test keys for {other:?}"),
        };
        ProviderKey {
            kid: kid.to_owned(),
            algorithm,
            encoding,
        }
    }

    /// The public half, as a JWK naming its `kid`.
    pub fn jwk(&self) -> serde_json::Value {
        let mut jwk = Jwk::from_encoding_key(&self.encoding, self.algorithm).unwrap();
        jwk.common.key_id = Some(self.kid.clone());
        serde_json::to_value(jwk).unwrap()
    }

    /// `claims` signed with this key, the header naming its `kid` and algorithm.
    pub fn sign(&self, claims: &serde_json::Value) -> String {
        self.sign_as(self.algorithm, Some(&self.kid), claims)
    }

    /// `claims` signed with this key under a header of the test's choosing.
    pub fn sign_as(
        &self,
        algorithm: Algorithm,
        kid: Option<&str>,
        claims: &serde_json::Value,
    ) -> String {
        let mut header = Header::new(algorithm);
        header.kid = kid.map(str::to_owned);
        jsonwebtoken::encode(&header, claims, &self.encoding).unwrap()
    }
}

/// A 2048-bit RSA key in PKCS#1 DER, generated once per test binary (RSA key generation
/// takes a while in a debug build).
fn rsa_key() -> &'static rsa::pkcs1::der::SecretDocument {
    use rsa::pkcs1::EncodeRsaPrivateKey as _;
    static KEY: OnceLock<rsa::pkcs1::der::SecretDocument> = OnceLock::new();
    KEY.get_or_init(|| {
        rsa::RsaPrivateKey::new(&mut rand_core_06::OsRng, 2048)
            .unwrap()
            .to_pkcs1_der()
            .unwrap()
    })
}

/// The JWKS of `keys`.
pub fn jwks(keys: &[&ProviderKey]) -> serde_json::Value {
    serde_json::json!({ "keys": keys.iter().map(|k| k.jwk()).collect::<Vec<_>>() })
}

/// Claims of a signed-in person, as a Supabase project with asymmetric keys writes them.
pub fn person(sub: &str) -> serde_json::Value {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    serde_json::json!({
        "iss": ISSUER, "sub": sub, "aud": "authenticated", "role": "authenticated",
        "exp": now + 600, "iat": now, "email": "person@example.com", "session_id": "s1",
    })
}
