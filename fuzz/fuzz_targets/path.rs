//! The one path validator, the sandbox form, the agent's path space, space names and upload
//! names on arbitrary text.
#![no_main]

use ferry_core::path::upload_file_name;
use ferry_core::{AgentPath, SandboxPath, SpaceName, ValidPath};

/// What every accepted path must be, whichever door it came in by.
fn check(path: &ValidPath) {
    let text = path.as_str();
    assert!(!text.is_empty() && text.len() <= 1024, "{text:?}");
    assert!(!text.starts_with('/') && !text.ends_with('/'), "{text:?}");
    for segment in text.split('/') {
        assert!(
            !segment.is_empty() && segment != "." && segment != "..",
            "{text:?}"
        );
        assert!(segment.len() <= 255, "{text:?}");
    }
    assert!(
        !text
            .chars()
            .any(|c| c.is_control() && (c as u32) < 0x80 || c == '\\'),
        "{text:?}"
    );
    // Accepted once, accepted again unchanged: validation is idempotent.
    assert_eq!(
        ValidPath::parse(text).map(|p| p.into_string()).as_deref(),
        Ok(text)
    );
}

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(path) = ValidPath::parse(text) {
        check(&path);
    }
    if let Ok(path) = ValidPath::from_url(text) {
        check(&path);
    }
    if let Ok(path) = SandboxPath::parse(text) {
        check(path.relative());
    }
    if let Ok(name) = upload_file_name(text) {
        check(&name);
        assert!(
            !name.as_str().contains('/'),
            "an upload name is one segment"
        );
    }
    if let Ok(agent) = AgentPath::parse(text) {
        // Inside the sandbox or the spaces, by the same validator, and shown as it parses.
        if let Some(within) = agent.within() {
            check(within);
        }
        let shown = agent.to_string();
        assert!(
            shown == "/sandbox"
                || shown.starts_with("/sandbox/")
                || shown == "/spaces"
                || shown.starts_with("/spaces/"),
            "{shown:?}"
        );
        assert_eq!(AgentPath::parse(&shown), Ok(agent));
    }
    let _ = SpaceName::parse(text);
});
