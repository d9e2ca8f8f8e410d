//! Tokens signed elsewhere with the same secret: by PyJWT, as Supabase's own servers and most
//! Python services sign them.

use crate::support::{SECRET, TestApp};

/// Signs `claims` (a Python dict literal) with PyJWT, or `None` when PyJWT is missing.
fn pyjwt(claims: &str, algorithm: &str) -> Option<String> {
    let python = std::env::var("FERRY_PYTHON").unwrap_or_else(|_| "python3".into());
    // PyJWT signs `alg: none` only with no key.
    let key = if algorithm == "none" {
        "None".to_owned()
    } else {
        format!("{SECRET:?}")
    };
    let script = format!(
        "import jwt, time, sys\nnow = int(time.time())\n\
         sys.stdout.write(jwt.encode({claims}, {key}, algorithm={algorithm:?}))"
    );
    let out = std::process::Command::new(python)
        .args(["-c", &script])
        .output()
        .ok()?;
    if !out.status.success() {
        let message = "\n=== SKIPPED: PyJWT tokens need `pip install PyJWT` ===\n";
        if std::env::var("FERRY_CI").is_ok_and(|v| v == "1") {
            panic!("{message}{}", String::from_utf8_lossy(&out.stderr));
        }
        eprintln!("{message}");
        return None;
    }
    Some(String::from_utf8(out.stdout).unwrap())
}

#[tokio::test]
async fn pyjwt_tokens_work_and_bad_ones_are_refused() {
    let app = TestApp::new().await;
    let Some(good) = pyjwt(
        "{'sub': 'py-user', 'role': 'authenticated', 'aud': 'authenticated', 'exp': now + 600, 'iat': now}",
        "HS256",
    ) else {
        return;
    };
    app.put(
        "/api/spaces/s/files/a.md",
        &good,
        "text/markdown",
        b"from python",
    )
    .await
    .expect(201, None);
    assert_eq!(
        app.get("/api/spaces/s/files/a.md", &app.user("py-user"))
            .await
            .body,
        b"from python"
    );

    // A Supabase-shaped access token (extra claims, an audience list) works too.
    let supabase = pyjwt(
        "{'sub': 'py-user', 'role': 'authenticated', 'aud': ['authenticated'], 'exp': now + 600, \
          'iss': 'https://x.supabase.co/auth/v1', 'email': 'a@example.com', 'aal': 'aal1', \
          'session_id': 's', 'is_anonymous': False, 'app_metadata': {'provider': 'email'}}",
        "HS256",
    )
    .unwrap();
    app.get("/api/spaces/s/files", &supabase)
        .await
        .expect(200, None);

    for (claims, algorithm) in [
        (
            "{'sub': 'u', 'role': 'authenticated', 'aud': 'authenticated', 'exp': now - 120}",
            "HS256",
        ),
        (
            "{'sub': 'u', 'role': 'authenticated', 'aud': 'other', 'exp': now + 600}",
            "HS256",
        ),
        (
            "{'role': 'authenticated', 'aud': 'authenticated', 'exp': now + 600}",
            "HS256",
        ),
        (
            "{'sub': 'u', 'role': 'anon', 'aud': 'authenticated', 'exp': now + 600}",
            "HS256",
        ),
    ] {
        let token = pyjwt(claims, algorithm).unwrap();
        app.get("/api/spaces/s/files", &token)
            .await
            .expect(401, Some("UNAUTHENTICATED"));
    }
    // `alg: none` with the signature stripped.
    let none = pyjwt(
        "{'sub': 'u', 'role': 'authenticated', 'aud': 'authenticated', 'exp': now + 600}",
        "none",
    )
    .unwrap();
    app.get("/api/spaces/s/files", &none)
        .await
        .expect(401, Some("UNAUTHENTICATED"));
}
