//! People signed in by an identity provider (Supabase with asymmetric keys, Auth0, Keycloak):
//! its ES256, RS256 and EdDSA tokens, verified with the public keys of its JWKS, beside the
//! tokens ferry's own secret signs.

use jsonwebtoken::Algorithm;

use crate::support::identity::{ISSUER, ProviderKey, jwks, person};
use crate::support::{Reply, TestApp};
use ferry_server::{IdentityProvider, KeySource};

struct Provider {
    app: TestApp,
    es256: ProviderKey,
    rs256: ProviderKey,
    eddsa: ProviderKey,
    _dir: tempfile::TempDir,
}

/// A server that trusts a provider with one key of each kind, its set read from a file.
async fn provider() -> Provider {
    let es256 = ProviderKey::generate(Algorithm::ES256, "es-1");
    let rs256 = ProviderKey::generate(Algorithm::RS256, "rsa-1");
    let eddsa = ProviderKey::generate(Algorithm::EdDSA, "ed-1");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("jwks.json");
    std::fs::write(&path, jwks(&[&es256, &rs256, &eddsa]).to_string()).unwrap();
    let app = TestApp::with(|config| {
        config.identity_provider = Some(IdentityProvider {
            keys: KeySource::File(path),
            issuer: ISSUER.to_owned(),
            audience: "authenticated".to_owned(),
        });
    })
    .await;
    Provider {
        app,
        es256,
        rs256,
        eddsa,
        _dir: dir,
    }
}

async fn write_note(app: &TestApp, token: &str, name: &str) -> Reply {
    app.put(
        &format!("/api/spaces/notes/files/{name}"),
        token,
        "text/markdown",
        b"# signed in elsewhere",
    )
    .await
}

fn refusal(reply: &Reply) -> String {
    reply.expect(401, Some("UNAUTHENTICATED"));
    let challenge = reply.header("www-authenticate").unwrap_or_default();
    assert!(challenge.contains("error=\"invalid_token\""), "{challenge}");
    reply.json()["error"]["message"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[tokio::test]
async fn each_kind_of_provider_key_signs_a_person_in_beside_the_secret() {
    let p = provider().await;
    for (key, name) in [
        (&p.es256, "es.md"),
        (&p.rs256, "rsa.md"),
        (&p.eddsa, "ed.md"),
    ] {
        write_note(&p.app, &key.sign(&person("idp-user")), name)
            .await
            .expect(201, None);
    }
    // The person is the same `sub` whichever way the token was signed: the secret's tokens
    // still work, and see what the provider's tokens wrote.
    let listed = p
        .app
        .get("/api/spaces/notes/files", &p.app.user("idp-user"))
        .await;
    listed.expect(200, None);
    let names: Vec<String> = listed.json()["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(names, ["ed.md", "es.md", "rsa.md"]);

    // The shape of an Auth0 or Keycloak access token: no role, an audience list.
    let mut auth0 = person("auth0|123");
    auth0.as_object_mut().unwrap().remove("role");
    auth0["aud"] = serde_json::json!(["https://api.example.com", "authenticated"]);
    write_note(&p.app, &p.rs256.sign(&auth0), "a.md")
        .await
        .expect(201, None);
}

#[tokio::test]
async fn provider_tokens_are_refused_with_the_reason() {
    let p = provider().await;
    let claims = |edit: &dyn Fn(&mut serde_json::Value)| {
        let mut claims = person("idp-user");
        edit(&mut claims);
        claims
    };
    let refused = async |token: String| refusal(&write_note(&p.app, &token, "x.md").await);

    let why = refused(
        p.es256
            .sign(&claims(&|c| c["iss"] = "https://evil.test/".into())),
    )
    .await;
    assert_eq!(why, format!("the token's 'iss' claim must be '{ISSUER}'"));
    let why = refused(p.es256.sign(&claims(&|c| {
        c.as_object_mut().unwrap().remove("iss");
    })))
    .await;
    assert_eq!(why, "the token has no 'iss' claim");
    let why = refused(p.eddsa.sign(&claims(&|c| c["aud"] = "other-api".into()))).await;
    assert_eq!(why, "the token's 'aud' claim must contain 'authenticated'");
    let why = refused(p.rs256.sign(&claims(&|c| c["exp"] = 1_000.into()))).await;
    assert_eq!(why, "the token has expired");
    let why = refused(p.rs256.sign(&claims(&|c| c["sub"] = "".into()))).await;
    assert_eq!(why, "the token has no 'sub' claim naming the user");
    // Agent and service tokens come from ferry's secret only: a provider cannot mint them.
    for role in ["service_role", "agent", "anon"] {
        let why = refused(p.es256.sign(&claims(&|c| c["role"] = role.into()))).await;
        assert!(
            why.starts_with(&format!("role '{role}' cannot use ferry")),
            "{why}"
        );
    }

    // The key is chosen by `kid`, and only ever verifies its own algorithm.
    let why = refused(p.es256.sign_as(Algorithm::ES256, None, &person("u"))).await;
    assert!(why.contains("no 'kid' header"), "{why}");
    let why = refused(
        p.es256
            .sign_as(Algorithm::ES256, Some("nobody"), &person("u")),
    )
    .await;
    assert_eq!(
        why,
        "the token's key 'nobody' is not one of the identity provider's keys"
    );
    // An EC signature presented as the RSA key's.
    let why = refused(
        p.es256
            .sign_as(Algorithm::ES256, Some("rsa-1"), &person("u")),
    )
    .await;
    assert_eq!(
        why,
        "the token says ES256 but its key 'rsa-1' is an RSA key, which verifies RS256 only"
    );
    // A key of the right kind but not the provider's, claiming the provider's kid.
    let impostor = ProviderKey::generate(Algorithm::EdDSA, "ed-1");
    let why = refused(impostor.sign(&person("u"))).await;
    assert_eq!(why, "the token's signature does not verify");
    // Algorithms ferry does not take at all.
    let hs512 = jsonwebtoken::encode(
        &jsonwebtoken::Header::new(Algorithm::HS512),
        &person("u"),
        &jsonwebtoken::EncodingKey::from_secret(b"whatever"),
    )
    .unwrap();
    let why = refused(hs512).await;
    assert!(
        why.contains("HS256 (ferry's secret) or with ES256, RS256 or EdDSA"),
        "{why}"
    );
}

#[tokio::test]
async fn a_public_key_is_never_taken_for_the_hmac_secret() {
    // The classic confusion: an HS256 token "signed" with the provider's public key as the
    // secret. HS256 tokens are checked against ferry's secret alone, so it fails.
    let p = provider().await;
    let public = p.rs256.jwk().to_string();
    let mut header = jsonwebtoken::Header::new(Algorithm::HS256);
    header.kid = Some("rsa-1".into());
    let forged = jsonwebtoken::encode(
        &header,
        &person("u"),
        &jsonwebtoken::EncodingKey::from_secret(public.as_bytes()),
    )
    .unwrap();
    let why = refusal(&write_note(&p.app, &forged, "x.md").await);
    assert_eq!(why, "the token's signature does not verify");
}

#[tokio::test]
async fn without_a_provider_only_the_secret_signs() {
    let app = TestApp::new().await;
    let key = ProviderKey::generate(Algorithm::ES256, "es-1");
    let why = refusal(&write_note(&app, &key.sign(&person("u")), "x.md").await);
    assert_eq!(why, "the token must be signed with HS256");
}
