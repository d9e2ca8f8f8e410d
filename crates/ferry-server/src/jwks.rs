//! An identity provider's signing keys, read from its JWKS (docs/reference/auth.md, "Identity
//! providers").
//!
//! Supabase projects with asymmetric signing keys, Auth0, Clerk, Keycloak and every OIDC
//! provider publish the public halves of their keys as a JSON Web Key Set. ferry keeps the
//! usable keys by `kid` and fetches the set again
//! - when a token names a `kid` the set does not hold (a key was just rotated in), at most once
//!   per [`MIN_REFRESH_INTERVAL`], so a flood of made-up kids costs one fetch a minute;
//! - when the set is older than [`MAX_AGE`], in the background, so a key the provider removed
//!   stops being honoured.
//!
//! A fetch that fails keeps the keys already held: the provider being briefly unreachable does
//! not sign everybody out.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk, KeyAlgorithm, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey};

/// The shortest time between two fetches of the set.
pub const MIN_REFRESH_INTERVAL: Duration = Duration::from_secs(60);
/// How long a fetched set is used before it is fetched again in the background.
pub const MAX_AGE: Duration = Duration::from_secs(10 * 60);
/// The largest key set read; providers publish a few keys, a few KiB.
const MAX_SET_BYTES: usize = 1 << 20;
/// How long one fetch may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(10);

/// Where the key set is read from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeySource {
    /// An `https://…/jwks.json` URL (Supabase: `https://PROJECT.supabase.co/auth/v1/.well-known/jwks.json`).
    Url(String),
    /// A file holding the set, for a deployment that pins its keys.
    File(PathBuf),
}

impl std::fmt::Display for KeySource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            KeySource::Url(url) => f.write_str(url),
            KeySource::File(path) => write!(f, "{}", path.display()),
        }
    }
}

/// One key of the set that ferry can verify with.
pub struct ProviderKey {
    /// The one algorithm this key verifies: the token's `alg` must be this.
    pub algorithm: Algorithm,
    pub key: DecodingKey,
}

impl std::fmt::Debug for ProviderKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProviderKey")
            .field("algorithm", &self.algorithm)
            .finish_non_exhaustive()
    }
}

impl ProviderKey {
    /// The key's family in words, for a refusal that names it.
    pub fn family(&self) -> &'static str {
        match self.algorithm {
            Algorithm::ES256 => "an EC P-256 key",
            Algorithm::RS256 => "an RSA key",
            Algorithm::EdDSA => "an Ed25519 key",
            _ => "a key",
        }
    }
}

struct KeySet {
    by_kid: HashMap<String, Arc<ProviderKey>>,
    /// When the set was read; `None` before the first successful read.
    read_at: Option<Instant>,
}

/// The provider's keys, kept up to date.
pub struct ProviderKeys {
    source: KeySource,
    /// [`MIN_REFRESH_INTERVAL`] and [`MAX_AGE`]; shorter in tests.
    min_interval: Duration,
    max_age: Duration,
    client: reqwest::Client,
    current: RwLock<Arc<KeySet>>,
    /// Held while a fetch runs; holds when the last fetch began, to space fetches out.
    last_fetch: tokio::sync::Mutex<Option<Instant>>,
}

impl std::fmt::Debug for ProviderKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProviderKeys")
            .field("source", &self.source)
            .finish_non_exhaustive()
    }
}

impl ProviderKeys {
    /// Keys to be read from `source`; none are held until [`ProviderKeys::load`] runs.
    pub fn new(source: KeySource) -> ProviderKeys {
        let client = reqwest::Client::builder()
            .timeout(FETCH_TIMEOUT)
            .build()
            .expect("an HTTP client with a timeout builds");
        ProviderKeys {
            source,
            min_interval: MIN_REFRESH_INTERVAL,
            max_age: MAX_AGE,
            client,
            current: RwLock::new(Arc::new(KeySet {
                by_kid: HashMap::new(),
                read_at: None,
            })),
            last_fetch: tokio::sync::Mutex::new(None),
        }
    }

    pub fn source(&self) -> &KeySource {
        &self.source
    }

    /// Reads the set now, whatever the interval, and says how many usable keys it holds.
    pub async fn load(&self) -> Result<usize, String> {
        let mut last = self.last_fetch.lock().await;
        *last = Some(Instant::now());
        let count = self.read_and_keep().await?;
        Ok(count)
    }

    /// The key named `kid`, fetching the set again when it is unknown (at most once a minute).
    pub async fn key(self: &Arc<Self>, kid: &str) -> Option<Arc<ProviderKey>> {
        let set = self.held();
        if let Some(key) = set.by_kid.get(kid) {
            if set.read_at.is_none_or(|at| at.elapsed() >= self.max_age) {
                let keys = Arc::clone(self);
                tokio::spawn(async move { keys.refresh_if_due(false).await });
            }
            return Some(Arc::clone(key));
        }
        self.refresh_if_due(true).await;
        self.held().by_kid.get(kid).cloned()
    }

    fn held(&self) -> Arc<KeySet> {
        Arc::clone(&self.current.read().unwrap_or_else(|e| e.into_inner()))
    }

    /// Fetches the set unless a fetch began less than the minimum interval ago. With
    /// `wait`, waits for a fetch already running (its result is what the caller needs);
    /// without, leaves it to finish alone.
    async fn refresh_if_due(&self, wait: bool) {
        let mut last = if wait {
            self.last_fetch.lock().await
        } else {
            match self.last_fetch.try_lock() {
                Ok(guard) => guard,
                Err(_) => return,
            }
        };
        if last.is_some_and(|at| at.elapsed() < self.min_interval) {
            return;
        }
        *last = Some(Instant::now());
        if let Err(why) = self.read_and_keep().await {
            tracing::warn!(source = %self.source, "the identity provider's keys were not refreshed, the keys held stay in use: {why}");
        }
    }

    /// Reads the set and, when it holds a usable key, makes it the one in use.
    async fn read_and_keep(&self) -> Result<usize, String> {
        let outcome = self.read().await.and_then(|bytes| usable_keys(&bytes));
        metrics::counter!(
            "ferry_jwks_fetches_total",
            "outcome" => if outcome.is_ok() { "ok" } else { "error" }
        )
        .increment(1);
        let by_kid = outcome?;
        let count = by_kid.len();
        let set = Arc::new(KeySet {
            by_kid,
            read_at: Some(Instant::now()),
        });
        *self.current.write().unwrap_or_else(|e| e.into_inner()) = set;
        tracing::debug!(source = %self.source, keys = count, "read the identity provider's keys");
        Ok(count)
    }

    async fn read(&self) -> Result<Vec<u8>, String> {
        match &self.source {
            KeySource::File(path) => {
                let bytes = tokio::fs::read(path)
                    .await
                    .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
                if bytes.len() > MAX_SET_BYTES {
                    return Err(format!("{} is larger than 1 MiB", path.display()));
                }
                Ok(bytes)
            }
            KeySource::Url(url) => {
                let mut response = self
                    .client
                    .get(url)
                    .header(http::header::ACCEPT, "application/json")
                    .send()
                    .await
                    .map_err(|e| format!("cannot fetch {url}: {e}"))?;
                if !response.status().is_success() {
                    return Err(format!("{url} answered {}", response.status()));
                }
                let mut bytes = Vec::new();
                while let Some(chunk) = response
                    .chunk()
                    .await
                    .map_err(|e| format!("cannot fetch {url}: {e}"))?
                {
                    if bytes.len() + chunk.len() > MAX_SET_BYTES {
                        return Err(format!("{url} answered more than 1 MiB"));
                    }
                    bytes.extend_from_slice(&chunk);
                }
                Ok(bytes)
            }
        }
    }
}

/// The keys of a JWKS document ferry can verify with, by `kid`. Keys it cannot use (no `kid`,
/// meant for encryption, another curve or algorithm, malformed) are left out, so one odd key
/// does not cost the rest; a set with no usable key at all is an error.
fn usable_keys(document: &[u8]) -> Result<HashMap<String, Arc<ProviderKey>>, String> {
    #[derive(serde::Deserialize)]
    struct Document {
        keys: Vec<serde_json::Value>,
    }
    let document: Document = serde_json::from_slice(document)
        .map_err(|e| format!("not a JSON Web Key Set ({{\"keys\": [...]}}): {e}"))?;
    let mut by_kid = HashMap::new();
    for value in document.keys {
        let Ok(jwk) = serde_json::from_value::<Jwk>(value) else {
            continue;
        };
        let Some(kid) = jwk.common.key_id.clone() else {
            continue;
        };
        if matches!(jwk.common.public_key_use, Some(PublicKeyUse::Encryption)) {
            continue;
        }
        let Some(algorithm) = algorithm_of(&jwk) else {
            continue;
        };
        let Ok(key) = DecodingKey::from_jwk(&jwk) else {
            continue;
        };
        by_kid.insert(kid, Arc::new(ProviderKey { algorithm, key }));
    }
    if by_kid.is_empty() {
        return Err(
            "the key set holds no ES256 (EC P-256), RS256 (RSA) or EdDSA (Ed25519) \
                    signing key with a 'kid'"
                .to_owned(),
        );
    }
    Ok(by_kid)
}

/// The one algorithm a key verifies, from its kind and curve; a key whose own `alg` says
/// otherwise (RS512, ES384, …) is not one ferry uses.
fn algorithm_of(jwk: &Jwk) -> Option<Algorithm> {
    let (algorithm, named) = match &jwk.algorithm {
        AlgorithmParameters::EllipticCurve(ec) if ec.curve == EllipticCurve::P256 => {
            (Algorithm::ES256, KeyAlgorithm::ES256)
        }
        AlgorithmParameters::RSA(_) => (Algorithm::RS256, KeyAlgorithm::RS256),
        AlgorithmParameters::OctetKeyPair(okp) if okp.curve == EllipticCurve::Ed25519 => {
            (Algorithm::EdDSA, KeyAlgorithm::EdDSA)
        }
        _ => return None,
    };
    match jwk.common.key_algorithm {
        None => Some(algorithm),
        Some(stated) if stated == named => Some(algorithm),
        Some(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // The public halves of RFC 7515's and RFC 8037's example keys.
    const EC: &str = r#"{"kty":"EC","crv":"P-256","kid":"ec","x":"f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU","y":"x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"}"#;
    const ED: &str = r#"{"kty":"OKP","crv":"Ed25519","kid":"ed","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}"#;
    const RSA: &str = r#"{"kty":"RSA","kid":"rsa","alg":"RS256","use":"sig","e":"AQAB","n":"ofgWCuLjybRlzo0tZWJjNiuSfb4p4fAkd_wWJcyQoTbji9k0l8W26mPddxHmfHQp-Vaw-4qPCJrcS2mJPMEzP1Pt0Bm4d4QlL-yRT-SFd2lZS-pCgNMsD1W_YpRPEwOWvG6b32690r2jZ47soMZo9wGzjb_7OMg0LOL-bSf63kpaSHSXndS5z5rexMdbBYUsLA9e-KXBdQOS-UTo7WTBEMa2R2CapHg665xsmtdVMTBQY4uDZlxvb3qCo5ZwKh9kG4LT6_I5IhlJH7aGhyxXFvUK-DWNmoudF8NAco9_h9iaGNj8q2ethFkMLs91kzk2PAcDTW9gb54h4FRWyuXpoQ"}"#;

    fn set(keys: &[&str]) -> Vec<u8> {
        format!(r#"{{"keys":[{}]}}"#, keys.join(",")).into_bytes()
    }

    #[test]
    fn each_kind_of_key_verifies_its_one_algorithm() {
        let keys = usable_keys(&set(&[EC, ED, RSA])).unwrap();
        assert_eq!(keys["ec"].algorithm, Algorithm::ES256);
        assert_eq!(keys["ed"].algorithm, Algorithm::EdDSA);
        assert_eq!(keys["rsa"].algorithm, Algorithm::RS256);
    }

    #[test]
    fn keys_ferry_cannot_use_are_left_out_and_the_rest_kept() {
        let no_kid =
            r#"{"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}"#;
        let encryption = RSA
            .replace(r#""kid":"rsa""#, r#""kid":"enc""#)
            .replace(r#""use":"sig""#, r#""use":"enc""#);
        let rs512 = RSA
            .replace(r#""kid":"rsa""#, r#""kid":"rs512""#)
            .replace("RS256", "RS512");
        let p384 = r#"{"kty":"EC","crv":"P-384","kid":"p384","x":"AAAA","y":"AAAA"}"#;
        let hmac = r#"{"kty":"oct","kid":"oct","k":"c2VjcmV0"}"#;
        let broken = r#"{"kty":"EC","crv":"P-256","kid":"broken"}"#;
        let keys = usable_keys(&set(&[
            no_kid,
            &encryption,
            &rs512,
            p384,
            hmac,
            broken,
            r#"{"kty":"unknown","kid":"u"}"#,
            ED,
        ]))
        .unwrap();
        assert_eq!(keys.keys().collect::<Vec<_>>(), vec!["ed"]);
    }

    /// A JWKS endpoint whose document the test changes, counting the fetches.
    struct Endpoint {
        url: String,
        document: Arc<std::sync::Mutex<Vec<u8>>>,
        fetches: Arc<std::sync::atomic::AtomicUsize>,
    }

    impl Endpoint {
        async fn start(document: Vec<u8>) -> Endpoint {
            use std::sync::atomic::Ordering;
            let document = Arc::new(std::sync::Mutex::new(document));
            let fetches = Arc::new(std::sync::atomic::AtomicUsize::new(0));
            let (served, counted) = (document.clone(), fetches.clone());
            let app = axum::Router::new().route(
                "/jwks.json",
                axum::routing::get(move || {
                    let (served, counted) = (served.clone(), counted.clone());
                    async move {
                        counted.fetch_add(1, Ordering::SeqCst);
                        // A fetch takes a moment, as over a network, so requests pile up.
                        tokio::time::sleep(Duration::from_millis(20)).await;
                        served.lock().unwrap().clone()
                    }
                }),
            );
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            let url = format!("http://{}/jwks.json", listener.local_addr().unwrap());
            tokio::spawn(async move { axum::serve(listener, app).await });
            Endpoint {
                url,
                document,
                fetches,
            }
        }

        fn fetches(&self) -> usize {
            self.fetches.load(std::sync::atomic::Ordering::SeqCst)
        }

        fn publish(&self, keys: &[&str]) {
            *self.document.lock().unwrap() = set(keys);
        }
    }

    fn keys_at(url: &str, min_interval: Duration, max_age: Duration) -> Arc<ProviderKeys> {
        let mut keys = ProviderKeys::new(KeySource::Url(url.to_owned()));
        keys.min_interval = min_interval;
        keys.max_age = max_age;
        Arc::new(keys)
    }

    #[tokio::test]
    async fn a_flood_of_unknown_kids_costs_one_fetch_and_a_rotated_key_is_found() {
        let endpoint = Endpoint::start(set(&[EC])).await;
        let keys = keys_at(&endpoint.url, Duration::from_millis(500), MAX_AGE);
        assert_eq!(keys.load().await, Ok(1));
        assert_eq!(endpoint.fetches(), 1);

        // Fifty requests at once naming kids the set lacks: one fetch between them (the
        // first load was long enough ago), none found.
        tokio::time::sleep(Duration::from_millis(600)).await;
        let lookups = (0..50).map(|i| {
            let keys = keys.clone();
            async move { keys.key(&format!("made-up-{i}")).await.is_none() }
        });
        assert!(
            futures::future::join_all(lookups)
                .await
                .into_iter()
                .all(|none| none)
        );
        assert_eq!(endpoint.fetches(), 2);
        // Within the interval, more unknown kids fetch nothing.
        assert!(keys.key("made-up-again").await.is_none());
        assert_eq!(endpoint.fetches(), 2);

        // The provider rotates in a new key: the first token naming it, after the interval,
        // fetches the set and is verified; the old key is honoured while it is in the set.
        endpoint.publish(&[EC, ED]);
        tokio::time::sleep(Duration::from_millis(600)).await;
        assert_eq!(keys.key("ed").await.unwrap().algorithm, Algorithm::EdDSA);
        assert_eq!(endpoint.fetches(), 3);
        assert!(keys.key("ec").await.is_some());

        // The old key leaves the set: once the set is read again, it is refused.
        endpoint.publish(&[ED]);
        tokio::time::sleep(Duration::from_millis(600)).await;
        assert!(keys.key("another-unknown").await.is_none());
        assert!(keys.key("ec").await.is_none());
        assert!(keys.key("ed").await.is_some());
    }

    #[tokio::test]
    async fn an_old_set_is_read_again_in_the_background_and_a_failed_read_keeps_the_keys() {
        let endpoint = Endpoint::start(set(&[EC])).await;
        let keys = keys_at(&endpoint.url, Duration::ZERO, Duration::from_millis(200));
        keys.load().await.unwrap();
        // The provider answers garbage for a while: a read that fails keeps the keys held.
        *endpoint.document.lock().unwrap() = b"<html>maintenance</html>".to_vec();
        assert!(keys.key("unknown").await.is_none());
        assert!(
            keys.key("ec").await.is_some(),
            "the held keys survive a bad read"
        );

        // The key is removed; a known kid is still answered at once, and the stale set is
        // read again behind it, after which the removed key is gone.
        endpoint.publish(&[ED]);
        tokio::time::sleep(Duration::from_millis(250)).await;
        let before = endpoint.fetches();
        assert!(keys.key("ec").await.is_some());
        for _ in 0..100 {
            if endpoint.fetches() > before && keys.key("ec").await.is_none() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!("the stale set was not read again in the background");
    }

    #[tokio::test]
    async fn keys_from_a_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("jwks.json");
        std::fs::write(&path, set(&[RSA])).unwrap();
        let keys = Arc::new(ProviderKeys::new(KeySource::File(path.clone())));
        assert_eq!(keys.load().await, Ok(1));
        assert_eq!(keys.key("rsa").await.unwrap().algorithm, Algorithm::RS256);
        let missing = ProviderKeys::new(KeySource::File(dir.path().join("none.json")));
        assert!(missing.load().await.unwrap_err().contains("cannot read"));
    }

    #[tokio::test]
    async fn an_unreachable_or_failing_endpoint_is_an_error_that_says_where() {
        let endpoint = Endpoint::start(set(&[EC])).await;
        let wrong = endpoint.url.replace("jwks.json", "nothing-here");
        let err = keys_at(&wrong, MIN_REFRESH_INTERVAL, MAX_AGE)
            .load()
            .await
            .unwrap_err();
        assert!(err.contains("404"), "{err}");
        assert!(err.contains(&wrong), "{err}");
    }

    #[test]
    fn a_set_without_a_usable_key_is_an_error() {
        assert!(
            usable_keys(b"{\"keys\":[]}")
                .unwrap_err()
                .contains("no ES256")
        );
        assert!(
            usable_keys(b"[]")
                .unwrap_err()
                .contains("not a JSON Web Key Set")
        );
        assert!(usable_keys(b"<html>").is_err());
    }
}
