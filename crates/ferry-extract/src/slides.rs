//! A presentation's slides drawn as the pages of a PDF, by LibreOffice.
//!
//! No maintained Rust library draws PowerPoint slides (their layouts, themes, pictures and
//! charts), so a deck is handed to LibreOffice's `soffice`, installed from the system's
//! packages, which exports it as a PDF; the PDF's pages are then drawn as any PDF's are
//! ([`crate::pdf_page`]). This runs inside the extraction worker after the worker has limited
//! itself: `soffice` inherits the worker's address-space, CPU-time and file-size limits, and
//! its process group, which the parent kills at the worker's timeout. It sees none of the
//! server's environment, and writes only in the deck's own scratch folder (its profile there
//! too, so conversions never share state or wait for each other's lock).

use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, percent_encode};

use crate::error::ExtractError;

/// The bytes of a path kept as they are in a `file://` URL; every other byte is escaped.
const URL_PATH: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'/')
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

/// Exports the deck at `deck` as a PDF with `program` (LibreOffice's `soffice`) and answers the
/// PDF's path, beside the deck. The deck's folder is the conversion's own: the caller makes it
/// for this deck alone and removes it afterwards.
pub fn slides_pdf(deck: &Path, program: &Path) -> Result<PathBuf, ExtractError> {
    let (Some(folder), Some(stem)) = (deck.parent(), deck.file_stem()) else {
        return Err(ExtractError::Worker(
            "the deck to draw is not a file in a folder".to_owned(),
        ));
    };
    let pdf = folder.join(stem).with_extension("pdf");
    let profile = folder.join("profile");
    let status = Command::new(program)
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
        .arg(deck)
        .env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("HOME", folder)
        .current_dir(folder)
        // The worker's standard output is its answer to the parent: nothing else may write there.
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map_err(|e| {
            ExtractError::Worker(format!(
                "the office renderer '{}' could not be started ({e})",
                program.display()
            ))
        })?;
    // soffice may exit 0 without writing anything (a file it could not load): the PDF decides.
    let written = std::fs::metadata(&pdf).is_ok_and(|m| m.is_file() && m.len() > 0);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_profile_path_is_written_as_a_file_url_path() {
        let encoded = percent_encode(b"/data/cache/My Deck #1/profile", URL_PATH).to_string();
        assert_eq!(encoded, "/data/cache/My%20Deck%20%231/profile");
    }

    #[test]
    fn a_renderer_that_cannot_be_started_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let deck = dir.path().join("deck.pptx");
        std::fs::write(&deck, b"not a deck").unwrap();
        let err = slides_pdf(&deck, Path::new("/nonexistent/soffice")).unwrap_err();
        assert!(
            matches!(&err, ExtractError::Worker(m) if m.contains("/nonexistent/soffice")),
            "{err:?}"
        );
    }

    #[test]
    fn a_renderer_that_writes_nothing_leaves_the_deck_undrawn() {
        let dir = tempfile::tempdir().unwrap();
        let deck = dir.path().join("deck.pptx");
        std::fs::write(&deck, b"not a deck").unwrap();
        // `true` exits 0 and writes no PDF, as soffice does with a file it cannot load.
        let err = slides_pdf(&deck, Path::new("/bin/true")).unwrap_err();
        assert!(
            matches!(&err, ExtractError::Invalid { detail, .. } if detail.contains("exit status 0")),
            "{err:?}"
        );
    }
}
