//! Bearer-JWT authentication (docs/reference/auth.md).
//!
//! Two kinds of token are accepted:
//! - HS256 JWTs signed with the deployment's secret — the same secret as a Supabase project's
//!   legacy JWT secret, so those Supabase access tokens work unchanged. ferry mints its agent
//!   and service tokens this way.
//! - ES256, RS256 and EdDSA JWTs signed by a configured identity provider, verified with the
//!   public keys of its JWKS ([`crate::jwks`]). These speak for people only.
//!
//! The token's `alg` picks the kind, and a key only ever verifies its own algorithm, so a
//! public key can never be used as an HMAC secret. The caller's identity comes only from the
//! verified claims, never from a body, a query or another header.
//!
//! Why one file: the claims are one grammar, read and written here: what each role carries (`sub`,
//! `aud`, `thread`, `agent`) is minted and verified side by side so that the two agree, and both
//! kinds of token share the algorithm dispatch, the leeway and the refusals' wording; fetching an
//! identity provider's keys is a module of its own.

use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::config::IdentityProvider;
use crate::error::ApiError;
use crate::jwks::ProviderKeys;

/// Clock skew tolerated on `exp` and `nbf`, in seconds (docs/reference/auth.md).
const LEEWAY_SECONDS: u64 = 30;
/// The audience that person and agent tokens must carry (Supabase's).
pub const AUDIENCE: &str = "authenticated";
pub use ferry_app::access::principal::DEFAULT_AGENT_ID;

pub use ferry_app::Principal;

/// A token that verified: whom it speaks for, and when it expires (`exp`, seconds since the
/// epoch).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedToken {
    pub principal: Principal,
    pub expires_at: u64,
}

/// When the request's token expires (seconds since the epoch), for an operation whose result
/// must not outlive it (an agent's S3 key).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TokenExpiry(pub u64);

#[derive(Debug, Deserialize)]
struct Claims {
    /// Required by the validation (which names it when missing); kept to know how long a
    /// verified token may be remembered.
    #[serde(default)]
    exp: u64,
    sub: Option<String>,
    role: Option<String>,
    #[serde(default)]
    aud: Option<Audience>,
    thread: Option<String>,
    agent: Option<String>,
}

#[derive(Debug, Deserialize, Serialize, Clone)]
#[serde(untagged)]
enum Audience {
    One(String),
    Many(Vec<String>),
}

impl Audience {
    fn contains(&self, wanted: &str) -> bool {
        match self {
            Audience::One(one) => one == wanted,
            Audience::Many(many) => many.iter().any(|a| a == wanted),
        }
    }
}

/// The claims ferry writes into the tokens it mints.
#[derive(Debug, Serialize)]
struct MintedClaims<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    sub: Option<&'a str>,
    role: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    aud: Option<&'a str>,
    iat: u64,
    exp: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    thread: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    agent: Option<&'a str>,
}

/// A token ferry minted, and when it expires (seconds since the epoch).
#[derive(Debug, Clone)]
pub struct MintedToken {
    pub token: String,
    pub expires_at: u64,
}

/// Verifies tokens (the secret's and an identity provider's) and mints them with the secret.
#[derive(Clone)]
pub struct Auth {
    decoding: DecodingKey,
    encoding: EncodingKey,
    validation: Validation,
    provider: Option<Arc<Provider>>,
    verified: Arc<Verified>,
}

/// How many verified tokens are remembered at most.
const VERIFIED_KEPT: usize = 4096;

/// Tokens signed with the secret that verified, by their text, with whom they speak for and
/// when they expire. A client sends the same token with every request, and verifying it again
/// costs the HMAC and the parse of its claims each time; a remembered token answers until its
/// `exp` (with the same leeway as the check). Only the secret's tokens are remembered: the
/// secret cannot change while the server runs, whereas a provider may withdraw a key, after
/// which its tokens must stop working at once.
#[derive(Default)]
struct Verified {
    tokens: std::sync::Mutex<std::collections::HashMap<String, (Principal, u64)>>,
}

impl Verified {
    fn get(&self, token: &str, now: u64) -> Option<VerifiedToken> {
        let tokens = self.tokens.lock().ok()?;
        let (principal, exp) = tokens.get(token)?;
        (now <= exp.saturating_add(LEEWAY_SECONDS)).then(|| VerifiedToken {
            principal: principal.clone(),
            expires_at: *exp,
        })
    }

    fn put(&self, token: &str, principal: &Principal, exp: u64, now: u64) {
        let Ok(mut tokens) = self.tokens.lock() else {
            return;
        };
        if tokens.len() >= VERIFIED_KEPT {
            tokens.retain(|_, (_, exp)| now <= exp.saturating_add(LEEWAY_SECONDS));
            if tokens.len() >= VERIFIED_KEPT {
                tokens.clear();
            }
        }
        tokens.insert(token.to_owned(), (principal.clone(), exp));
    }
}

fn now_seconds() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// An identity provider's keys and the claims its tokens must carry.
struct Provider {
    keys: Arc<ProviderKeys>,
    issuer: String,
    audience: String,
}

impl std::fmt::Debug for Auth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Auth { .. }")
    }
}

impl Auth {
    pub fn new(secret: &[u8]) -> Auth {
        // Only HS256: `alg: none` and every other algorithm fail before the signature is read.
        let mut validation = Validation::new(Algorithm::HS256);
        validation.leeway = LEEWAY_SECONDS;
        validation.validate_nbf = true;
        // The audience rule depends on the role, so it is checked below instead.
        validation.validate_aud = false;
        validation.set_required_spec_claims(&["exp"]);
        Auth {
            decoding: DecodingKey::from_secret(secret),
            encoding: EncodingKey::from_secret(secret),
            validation,
            provider: None,
            verified: Arc::default(),
        }
    }

    /// Also accepts the tokens `provider` signs. Its keys are read on first use; call
    /// [`Auth::load_provider_keys`] to read them at once.
    pub fn with_provider(mut self, provider: &IdentityProvider) -> Auth {
        self.provider = Some(Arc::new(Provider {
            keys: Arc::new(ProviderKeys::new(provider.keys.clone())),
            issuer: provider.issuer.clone(),
            audience: provider.audience.clone(),
        }));
        self
    }

    /// Reads the identity provider's keys now, saying how many are usable (`None` without a
    /// provider).
    pub async fn load_provider_keys(&self) -> Option<Result<usize, String>> {
        match &self.provider {
            Some(provider) => Some(provider.keys.load().await),
            None => None,
        }
    }

    /// Checks a token and says who it speaks for.
    pub async fn verify(&self, token: &str) -> Result<Principal, ApiError> {
        self.verify_token(token).await.map(|t| t.principal)
    }

    /// Checks a token and says who it speaks for and until when.
    pub async fn verify_token(&self, token: &str) -> Result<VerifiedToken, ApiError> {
        if let Some(verified) = self.verified.get(token, now_seconds()) {
            return Ok(verified);
        }
        let header = jsonwebtoken::decode_header(token).map_err(|e| refusal(&e))?;
        match (header.alg, &self.provider) {
            (Algorithm::HS256, _) => self.verify_signed_with_secret(token),
            (Algorithm::ES256 | Algorithm::RS256 | Algorithm::EdDSA, Some(provider)) => {
                provider
                    .verify(token, header.alg, header.kid.as_deref())
                    .await
            }
            (_, None) => Err(ApiError::invalid_token(
                "the token must be signed with HS256",
            )),
            (_, Some(_)) => Err(ApiError::invalid_token(
                "the token must be signed with HS256 (ferry's secret) or with ES256, RS256 or \
                 EdDSA (the identity provider's keys)",
            )),
        }
    }

    fn verify_signed_with_secret(&self, token: &str) -> Result<VerifiedToken, ApiError> {
        let data = jsonwebtoken::decode::<Claims>(token, &self.decoding, &self.validation)
            .map_err(|e| refusal(&e))?;
        let exp = data.claims.exp;
        let principal = principal_of(data.claims)?;
        self.verified.put(token, &principal, exp, now_seconds());
        Ok(VerifiedToken {
            principal,
            expires_at: exp,
        })
    }
}

/// Whom the verified claims of a secret-signed token speak for.
fn principal_of(claims: Claims) -> Result<Principal, ApiError> {
    let sub = claims.sub.filter(|s| !s.is_empty());
    let audience_ok = claims.aud.as_ref().is_some_and(|a| a.contains(AUDIENCE));
    match claims.role.as_deref() {
        Some("service_role") => Ok(Principal::Service { sub }),
        Some("authenticated") | Some("agent") => {
            let sub = sub.ok_or_else(|| {
                ApiError::invalid_token("the token has no 'sub' claim naming the user")
            })?;
            if !audience_ok {
                return Err(ApiError::invalid_token(
                    "the token's 'aud' claim must contain 'authenticated'",
                ));
            }
            if claims.role.as_deref() == Some("agent") {
                let thread = claims.thread.filter(|t| !t.is_empty()).ok_or_else(|| {
                    ApiError::invalid_token(
                        "an agent token must name its thread in the 'thread' claim",
                    )
                })?;
                let agent_id = claims
                    .agent
                    .filter(|a| !a.is_empty())
                    .unwrap_or_else(|| DEFAULT_AGENT_ID.to_owned());
                Ok(Principal::Agent {
                    sub,
                    thread,
                    agent_id,
                })
            } else {
                Ok(Principal::User { sub })
            }
        }
        Some(other) => Err(ApiError::invalid_token(format!(
            "role '{other}' cannot use ferry: use an authenticated, agent or service_role token"
        ))),
        None => Err(ApiError::invalid_token("the token has no 'role' claim")),
    }
}

impl Auth {
    /// A token for a person.
    pub fn mint_user(&self, sub: &str, ttl: Duration) -> MintedToken {
        self.mint("authenticated", Some(sub), Some(AUDIENCE), None, None, ttl)
    }

    /// A token for an agent acting in one thread for the thread's owner.
    pub fn mint_agent(
        &self,
        owner: &str,
        thread: &str,
        agent_id: Option<&str>,
        ttl: Duration,
    ) -> MintedToken {
        self.mint(
            "agent",
            Some(owner),
            Some(AUDIENCE),
            Some(thread),
            agent_id,
            ttl,
        )
    }

    /// A token for a trusted orchestrator, optionally acting as one user.
    pub fn mint_service(&self, sub: Option<&str>, ttl: Duration) -> MintedToken {
        self.mint("service_role", sub, None, None, None, ttl)
    }

    fn mint(
        &self,
        role: &str,
        sub: Option<&str>,
        aud: Option<&str>,
        thread: Option<&str>,
        agent: Option<&str>,
        ttl: Duration,
    ) -> MintedToken {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_secs();
        let expires_at = now + ttl.as_secs();
        let claims = MintedClaims {
            sub,
            role,
            aud,
            iat: now,
            exp: expires_at,
            thread,
            agent,
        };
        let token = jsonwebtoken::encode(&Header::new(Algorithm::HS256), &claims, &self.encoding)
            .expect("HS256 signing of plain claims cannot fail");
        MintedToken { token, expires_at }
    }
}

/// Why a token failed a check every kind of token goes through.
fn refusal(e: &jsonwebtoken::errors::Error) -> ApiError {
    use jsonwebtoken::errors::ErrorKind;
    if let ErrorKind::ExpiredSignature = e.kind() {
        return ApiError::expired_token("the token has expired");
    }
    ApiError::invalid_token(match e.kind() {
        ErrorKind::ImmatureSignature => "the token is not valid yet (nbf)".to_owned(),
        ErrorKind::InvalidSignature => "the token's signature does not verify".to_owned(),
        ErrorKind::InvalidAlgorithm | ErrorKind::InvalidAlgorithmName => {
            "the token must be signed with HS256".to_owned()
        }
        ErrorKind::MissingRequiredClaim(claim) => format!("the token has no '{claim}' claim"),
        _ => "the token is malformed".to_owned(),
    })
}

impl Provider {
    /// Checks a token the provider signed: its key by `kid`, the algorithm that key verifies,
    /// the times, `iss`, `aud`, then `role` and `sub`.
    async fn verify(
        &self,
        token: &str,
        alg: Algorithm,
        kid: Option<&str>,
    ) -> Result<VerifiedToken, ApiError> {
        let kid = kid.ok_or_else(|| {
            ApiError::invalid_token(
                "the token has no 'kid' header naming the identity provider's key that signed it",
            )
        })?;
        let key = self.keys.key(kid).await.ok_or_else(|| {
            ApiError::invalid_token(format!(
                "the token's key '{kid}' is not one of the identity provider's keys"
            ))
        })?;
        if key.algorithm != alg {
            return Err(ApiError::invalid_token(format!(
                "the token says {alg:?} but its key '{kid}' is {}, which verifies {:?} only",
                key.family(),
                key.algorithm
            )));
        }
        let mut validation = Validation::new(key.algorithm);
        validation.leeway = LEEWAY_SECONDS;
        validation.validate_nbf = true;
        validation.set_issuer(&[&self.issuer]);
        validation.set_audience(&[&self.audience]);
        validation.set_required_spec_claims(&["exp", "iss", "aud"]);
        let claims = jsonwebtoken::decode::<Claims>(token, &key.key, &validation)
            .map_err(|e| {
                use jsonwebtoken::errors::ErrorKind;
                match e.kind() {
                    ErrorKind::InvalidIssuer => ApiError::invalid_token(format!(
                        "the token's 'iss' claim must be '{}'",
                        self.issuer
                    )),
                    ErrorKind::InvalidAudience => ApiError::invalid_token(format!(
                        "the token's 'aud' claim must contain '{}'",
                        self.audience
                    )),
                    _ => refusal(&e),
                }
            })?
            .claims;
        match claims.role.as_deref() {
            None | Some("authenticated") => {}
            Some(other) => {
                return Err(ApiError::invalid_token(format!(
                    "role '{other}' cannot use ferry with an identity provider's token: those \
                     speak for people (role 'authenticated' or none); agent and service_role \
                     tokens are signed with ferry's secret"
                )));
            }
        }
        let sub = claims.sub.filter(|s| !s.is_empty()).ok_or_else(|| {
            ApiError::invalid_token("the token has no 'sub' claim naming the user")
        })?;
        Ok(VerifiedToken {
            principal: Principal::User { sub },
            expires_at: claims.exp,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine as _;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;

    const SECRET: &[u8] = b"super-secret-jwt-token-with-at-least-32-characters-long";

    /// `verify` run to completion: a token signed with the secret never waits on anything.
    trait VerifyNow {
        fn verify_now(&self, token: &str) -> Result<Principal, ApiError>;
    }

    impl VerifyNow for Auth {
        fn verify_now(&self, token: &str) -> Result<Principal, ApiError> {
            tokio::runtime::Builder::new_current_thread()
                .build()
                .unwrap()
                .block_on(self.verify(token))
        }
    }

    fn now() -> u64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs()
    }

    #[test]
    fn a_verified_token_is_remembered_until_it_expires_and_no_longer() {
        let verified = Verified::default();
        let alice = Principal::User {
            sub: "alice".into(),
        };
        verified.put("t", &alice, 1_000, 900);
        assert_eq!(
            verified.get("t", 1_000).map(|v| v.principal),
            Some(alice.clone())
        );
        assert_eq!(
            verified
                .get("t", 1_000 + LEEWAY_SECONDS)
                .map(|v| (v.principal, v.expires_at)),
            Some((alice.clone(), 1_000))
        );
        assert_eq!(verified.get("t", 1_001 + LEEWAY_SECONDS), None);
        assert_eq!(verified.get("other", 900), None);
        // Full: the expired go first, then everything if that is not enough.
        for i in 0..VERIFIED_KEPT {
            verified.put(&format!("k{i}"), &alice, 950, 900);
        }
        verified.put("fresh", &alice, 5_000, 2_000);
        assert!(verified.tokens.lock().unwrap().len() <= VERIFIED_KEPT);
        assert_eq!(
            verified.get("fresh", 2_000).map(|v| v.principal),
            Some(alice)
        );
    }

    #[test]
    fn only_the_secrets_tokens_are_remembered_and_a_refused_one_never() {
        let auth = Auth::new(SECRET);
        let token = auth.mint_user("alice", Duration::from_secs(60)).token;
        assert!(auth.verify_now(&token).is_ok());
        assert!(auth.verified.tokens.lock().unwrap().contains_key(&token));
        // A character inside the signature, changed (the last one may carry unused bits).
        let mut bytes = token.clone().into_bytes();
        let i = bytes.len() - 10;
        bytes[i] = if bytes[i] == b'A' { b'B' } else { b'A' };
        let forged = String::from_utf8(bytes).unwrap();
        assert!(auth.verify_now(&forged).is_err());
        assert!(!auth.verified.tokens.lock().unwrap().contains_key(&forged));
    }

    fn sign(claims: serde_json::Value) -> String {
        jsonwebtoken::encode(
            &Header::new(Algorithm::HS256),
            &claims,
            &EncodingKey::from_secret(SECRET),
        )
        .unwrap()
    }

    fn code(token: &str) -> String {
        Auth::new(SECRET).verify_now(token).unwrap_err().message
    }

    #[test]
    fn minted_tokens_verify() {
        let auth = Auth::new(SECRET);
        let user = auth.mint_user("u1", Duration::from_secs(60));
        assert_eq!(
            auth.verify_now(&user.token).unwrap(),
            Principal::User { sub: "u1".into() }
        );
        let agent = auth.mint_agent("u1", "t1", None, Duration::from_secs(60));
        assert_eq!(
            auth.verify_now(&agent.token).unwrap(),
            Principal::Agent {
                sub: "u1".into(),
                thread: "t1".into(),
                agent_id: "agent".into()
            }
        );
        let service = auth.mint_service(None, Duration::from_secs(60));
        assert_eq!(
            auth.verify_now(&service.token).unwrap(),
            Principal::Service { sub: None }
        );
    }

    #[test]
    fn supabase_access_token_shape_is_accepted() {
        // The claims a Supabase project puts into a signed-in user's access token.
        let token = sign(serde_json::json!({
            "aud": "authenticated", "exp": now() + 3600, "iat": now(),
            "iss": "https://project.supabase.co/auth/v1", "sub": "7f9c…-uuid",
            "email": "a@example.com", "phone": "", "app_metadata": {"provider": "email"},
            "user_metadata": {}, "role": "authenticated", "aal": "aal1",
            "amr": [{"method": "password", "timestamp": 1}], "session_id": "s", "is_anonymous": false
        }));
        assert_eq!(
            Auth::new(SECRET).verify_now(&token).unwrap(),
            Principal::User {
                sub: "7f9c…-uuid".into()
            }
        );
        // An audience array works too.
        let token = sign(serde_json::json!({
            "aud": ["other", "authenticated"], "exp": now() + 60, "sub": "u", "role": "authenticated"
        }));
        assert!(Auth::new(SECRET).verify_now(&token).is_ok());
    }

    #[test]
    fn an_expired_token_is_told_apart_from_an_invalid_one() {
        use crate::error::TokenFault;
        let fault = |claims| {
            Auth::new(SECRET)
                .verify_now(&sign(claims))
                .unwrap_err()
                .token_fault()
        };
        let expired = serde_json::json!({"sub": "u", "role": "authenticated", "aud": "authenticated", "exp": now() - 120});
        assert_eq!(fault(expired), Some(TokenFault::Expired));
        let no_sub =
            serde_json::json!({"role": "authenticated", "aud": "authenticated", "exp": now() + 60});
        assert_eq!(fault(no_sub), Some(TokenFault::Invalid));
    }

    #[test]
    fn refusals() {
        let exp = now() + 60;
        assert!(code(&sign(serde_json::json!({"sub": "u", "role": "authenticated", "aud": "authenticated", "exp": now() - 120}))).contains("expired"));
        assert!(
            code(&sign(
                serde_json::json!({"role": "authenticated", "aud": "authenticated", "exp": exp})
            ))
            .contains("'sub'")
        );
        assert!(code(&sign(serde_json::json!({"sub": "", "role": "authenticated", "aud": "authenticated", "exp": exp}))).contains("'sub'"));
        assert!(
            code(&sign(
                serde_json::json!({"sub": "u", "role": "authenticated", "aud": "other", "exp": exp})
            ))
            .contains("'aud'")
        );
        assert!(
            code(&sign(
                serde_json::json!({"sub": "u", "role": "authenticated", "exp": exp})
            ))
            .contains("'aud'")
        );
        assert!(
            code(&sign(
                serde_json::json!({"sub": "u", "role": "authenticated", "aud": "authenticated"})
            ))
            .contains("'exp'")
        );
        assert!(
            code(&sign(
                serde_json::json!({"sub": "u", "role": "anon", "aud": "authenticated", "exp": exp})
            ))
            .contains("anon")
        );
        assert!(
            code(&sign(
                serde_json::json!({"sub": "u", "role": "agent", "aud": "authenticated", "exp": exp})
            ))
            .contains("thread")
        );
        // Within the leeway an expired token still passes; past it, not.
        assert!(Auth::new(SECRET).verify_now(&sign(serde_json::json!({"sub": "u", "role": "authenticated", "aud": "authenticated", "exp": now() - 5}))).is_ok());
        assert!(code(&sign(serde_json::json!({"sub": "u", "role": "authenticated", "aud": "authenticated", "exp": now() - 61}))).contains("expired"));
    }

    #[test]
    fn wrong_signature_and_algorithms() {
        let good = Auth::new(SECRET)
            .mint_user("u", Duration::from_secs(60))
            .token;
        assert!(Auth::new(b"another-secret").verify_now(&good).is_err());
        // alg: none, with the signature stripped.
        let header = URL_SAFE_NO_PAD.encode(br#"{"alg":"none","typ":"JWT"}"#);
        let payload = URL_SAFE_NO_PAD.encode(
            serde_json::json!({"sub": "u", "role": "authenticated", "aud": "authenticated", "exp": now() + 60})
                .to_string(),
        );
        assert!(
            Auth::new(SECRET)
                .verify_now(&format!("{header}.{payload}."))
                .is_err()
        );
        // HS512 with the right secret is still refused: only HS256 is configured.
        let hs512 = jsonwebtoken::encode(
            &Header::new(Algorithm::HS512),
            &serde_json::json!({"sub": "u", "role": "authenticated", "aud": "authenticated", "exp": now() + 60}),
            &EncodingKey::from_secret(SECRET),
        )
        .unwrap();
        assert!(code(&hs512).contains("HS256"));
        assert!(code("not-a-jwt").contains("malformed"));
    }
}
