//! A presentation's slides drawn as the pages of a PDF, by LibreOffice.
//!
//! No maintained Rust library draws PowerPoint slides (their layouts, themes, pictures and
//! charts), so a deck is handed to LibreOffice's `soffice`, installed from the system's
//! packages, which exports it as a PDF; the PDF's pages are then drawn as any PDF's are
//! ([`crate::pdf_page`]).
//!
//! LibreOffice is a large program reading a hostile file, and a deck can link pictures by URL
//! or by path (`file:///…`), which it would fetch while drawing. So it runs confined twice
//! over: inside the extraction worker, after the worker has limited itself (it inherits the
//! address-space, CPU-time and file-size limits, and the worker's process group, which the
//! parent kills at the worker's timeout); and inside bubblewrap (`bwrap`), in namespaces of
//! its own with no network, seeing only the system's programs and fonts (read-only) and the
//! deck's own scratch folder, the one place it can write (its profile and temporary files
//! too, so conversions never share state or wait for each other's lock). It sees none of the
//! server's environment and none of its data.

use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, percent_encode};
use serde::{Deserialize, Serialize};

use crate::error::ExtractError;

/// The bytes of a path kept as they are in a `file://` URL; every other byte is escaped.
const URL_PATH: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'/')
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

/// The folders the confined renderer sees, read-only, when the system has them: programs and
/// libraries, fonts and their cache, LibreOffice's own settings.
const SYSTEM: [&str; 5] = [
    "/usr",
    "/opt",
    "/etc/fonts",
    "/etc/libreoffice",
    "/var/cache/fontconfig",
];

/// The office renderer: LibreOffice's `soffice`, run inside bubblewrap.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OfficeRenderer {
    /// LibreOffice's `soffice`, an absolute path under `/usr` or `/opt` (the confined renderer
    /// sees nothing else of the system).
    pub program: PathBuf,
    /// bubblewrap's `bwrap`, an absolute path.
    pub sandbox: PathBuf,
}

/// Exports the deck at `deck` as a PDF with `renderer` and answers the PDF's path, beside the
/// deck. The deck's folder is the conversion's own: the caller makes it for this deck alone
/// and removes it afterwards.
pub fn slides_pdf(deck: &Path, renderer: &OfficeRenderer) -> Result<PathBuf, ExtractError> {
    let Some(folder) = deck.parent() else {
        return Err(ExtractError::Worker(
            "the deck to draw is not a file in a folder".to_owned(),
        ));
    };
    let pdf = deck.with_extension("pdf");
    let profile = folder.join("profile");
    let mut confined = Command::new(&renderer.sandbox);
    confined.args(["--unshare-all", "--die-with-parent"]);
    for shared in SYSTEM.iter().filter(|p| Path::new(p).exists()) {
        confined.args(["--ro-bind", shared, shared]);
    }
    confined
        .args([
            "--symlink",
            "usr/bin",
            "/bin",
            "--symlink",
            "usr/lib",
            "/lib",
        ])
        .args([
            "--symlink",
            "usr/lib64",
            "/lib64",
            "--symlink",
            "usr/sbin",
            "/sbin",
        ])
        .args(["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"])
        .arg("--bind")
        .args([folder, folder])
        .arg("--chdir")
        .arg(folder)
        .args([
            "--clearenv",
            "--setenv",
            "PATH",
            "/usr/local/bin:/usr/bin:/bin",
        ])
        .args(["--setenv", "HOME"])
        .arg(folder)
        .args(["--setenv", "TMPDIR"])
        .arg(folder)
        .arg("--")
        .arg(&renderer.program)
        .arg(format!(
            "-env:UserInstallation=file://{}",
            percent_encode(profile.as_os_str().as_bytes(), URL_PATH)
        ))
        .args([
            "--headless",
            "--invisible",
            "--norestore",
            "--nolockcheck",
            "--nologo",
            "--nodefault",
            "--convert-to",
            "pdf",
            "--outdir",
        ])
        .arg(folder)
        .arg(deck);
    let status = confined
        .env_clear()
        .current_dir(folder)
        // The worker's standard output is its answer to the parent: nothing else may write there.
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map_err(|e| {
            ExtractError::Worker(format!(
                "the office renderer's sandbox '{}' could not be started ({e})",
                renderer.sandbox.display()
            ))
        })?;
    // soffice may exit 0 without writing anything (a file it could not load): the PDF decides,
    // and only a regular file the renderer wrote there counts.
    let written = std::fs::symlink_metadata(&pdf).is_ok_and(|m| m.is_file() && m.len() > 0);
    if !written {
        let how = match status.code() {
            Some(code) => format!("exit status {code}"),
            None => "stopped by a signal, perhaps a resource limit".to_owned(),
        };
        return Err(ExtractError::invalid(
            "PowerPoint presentation",
            format!("LibreOffice could not draw its slides ({how})"),
        ));
    }
    Ok(pdf)
}

/// What is said when slides are asked of a server without an office renderer.
pub(crate) fn no_renderer() -> ExtractError {
    ExtractError::Unsupported(
        "this server has no office renderer (LibreOffice and bubblewrap; FERRY_OFFICE_RENDERER) \
         to draw slides with"
            .to_owned(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn renderer(sandbox: &str) -> OfficeRenderer {
        OfficeRenderer {
            program: "/usr/bin/soffice".into(),
            sandbox: sandbox.into(),
        }
    }

    #[test]
    fn a_profile_path_is_written_as_a_file_url_path() {
        let encoded = percent_encode(b"/data/cache/My Deck #1/profile", URL_PATH).to_string();
        assert_eq!(encoded, "/data/cache/My%20Deck%20%231/profile");
    }

    #[test]
    fn a_sandbox_that_cannot_be_started_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let deck = dir.path().join("deck.pptx");
        std::fs::write(&deck, b"not a deck").unwrap();
        let err = slides_pdf(&deck, &renderer("/nonexistent/bwrap")).unwrap_err();
        assert!(
            matches!(&err, ExtractError::Worker(m) if m.contains("/nonexistent/bwrap")),
            "{err:?}"
        );
    }

    #[test]
    fn a_renderer_that_writes_nothing_leaves_the_deck_undrawn() {
        let dir = tempfile::tempdir().unwrap();
        let deck = dir.path().join("my.deck.pptx");
        std::fs::write(&deck, b"not a deck").unwrap();
        // `true` exits 0 and writes no PDF, as soffice does with a file it cannot load.
        let err = slides_pdf(&deck, &renderer("/bin/true")).unwrap_err();
        assert!(
            matches!(&err, ExtractError::Invalid { detail, .. } if detail.contains("exit status 0")),
            "{err:?}"
        );
        // A link where the PDF should be is not the renderer's PDF.
        std::os::unix::fs::symlink("/etc/hostname", dir.path().join("my.deck.pdf")).unwrap();
        assert!(slides_pdf(&deck, &renderer("/bin/true")).is_err());
    }
}
