//! Bearer-JWT authentication (docs/reference/auth.md).
//!
//! Tokens are HS256 JWTs signed with the deployment's secret — the same secret as a Supabase
//! project's legacy JWT secret, so Supabase access tokens work unchanged. The caller's identity
//! comes only from the verified claims, never from a body, a query or another header.

use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::error::ApiError;

/// Clock skew tolerated on `exp` and `nbf`, in seconds (docs/reference/auth.md).
const LEEWAY_SECONDS: u64 = 30;
/// The audience that person and agent tokens must carry (Supabase's).
pub const AUDIENCE: &str = "authenticated";
pub use ferry_app::events::DEFAULT_AGENT_ID;

pub use ferry_app::Principal;

#[derive(Debug, Deserialize)]
struct Claims {
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

/// Verifies and mints tokens with one secret.
#[derive(Clone)]
pub struct Auth {
    decoding: DecodingKey,
    encoding: EncodingKey,
    validation: Validation,
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
        }
    }

    /// Checks a token and says who it speaks for.
    pub fn verify(&self, token: &str) -> Result<Principal, ApiError> {
        let data = jsonwebtoken::decode::<Claims>(token, &self.decoding, &self.validation)
            .map_err(|e| {
                use jsonwebtoken::errors::ErrorKind;
                let why = match e.kind() {
                    ErrorKind::ExpiredSignature => "the token has expired",
                    ErrorKind::ImmatureSignature => "the token is not valid yet (nbf)",
                    ErrorKind::InvalidSignature => "the token's signature does not verify",
                    ErrorKind::InvalidAlgorithm | ErrorKind::InvalidAlgorithmName => {
                        "the token must be signed with HS256"
                    }
                    ErrorKind::MissingRequiredClaim(_) => "the token has no 'exp' claim",
                    _ => "the token is malformed",
                };
                ApiError::invalid_token(why)
            })?;
        let claims = data.claims;
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

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine as _;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;

    const SECRET: &[u8] = b"super-secret-jwt-token-with-at-least-32-characters-long";

    fn now() -> u64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs()
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
        Auth::new(SECRET).verify(token).unwrap_err().message
    }

    #[test]
    fn minted_tokens_verify() {
        let auth = Auth::new(SECRET);
        let user = auth.mint_user("u1", Duration::from_secs(60));
        assert_eq!(
            auth.verify(&user.token).unwrap(),
            Principal::User { sub: "u1".into() }
        );
        let agent = auth.mint_agent("u1", "t1", None, Duration::from_secs(60));
        assert_eq!(
            auth.verify(&agent.token).unwrap(),
            Principal::Agent {
                sub: "u1".into(),
                thread: "t1".into(),
                agent_id: "agent".into()
            }
        );
        let service = auth.mint_service(None, Duration::from_secs(60));
        assert_eq!(
            auth.verify(&service.token).unwrap(),
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
            Auth::new(SECRET).verify(&token).unwrap(),
            Principal::User {
                sub: "7f9c…-uuid".into()
            }
        );
        // An audience array works too.
        let token = sign(serde_json::json!({
            "aud": ["other", "authenticated"], "exp": now() + 60, "sub": "u", "role": "authenticated"
        }));
        assert!(Auth::new(SECRET).verify(&token).is_ok());
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
        assert!(Auth::new(SECRET).verify(&sign(serde_json::json!({"sub": "u", "role": "authenticated", "aud": "authenticated", "exp": now() - 5}))).is_ok());
        assert!(code(&sign(serde_json::json!({"sub": "u", "role": "authenticated", "aud": "authenticated", "exp": now() - 61}))).contains("expired"));
    }

    #[test]
    fn wrong_signature_and_algorithms() {
        let good = Auth::new(SECRET)
            .mint_user("u", Duration::from_secs(60))
            .token;
        assert!(Auth::new(b"another-secret").verify(&good).is_err());
        // alg: none, with the signature stripped.
        let header = URL_SAFE_NO_PAD.encode(br#"{"alg":"none","typ":"JWT"}"#);
        let payload = URL_SAFE_NO_PAD.encode(
            serde_json::json!({"sub": "u", "role": "authenticated", "aud": "authenticated", "exp": now() + 60})
                .to_string(),
        );
        assert!(
            Auth::new(SECRET)
                .verify(&format!("{header}.{payload}."))
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
