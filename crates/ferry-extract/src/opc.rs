//! Open Packaging Conventions: relationship parts and part-name resolution,
//! shared by the DOCX and PPTX readers.

use std::io::{Read, Seek};

use crate::error::ExtractError;
use crate::package::Package;
use crate::xml::{Ev, Xml, attr, local};

/// One `<Relationship>` of a `.rels` part.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Rel {
    pub(crate) id: String,
    pub(crate) rel_type: String,
    /// The target resolved to a part name inside the package (no leading
    /// slash), or the raw target for external relationships.
    pub(crate) target: String,
    pub(crate) external: bool,
}

/// The relationships of `part` (e.g. `word/document.xml` →
/// `word/_rels/document.xml.rels`; `""` for the package itself). A missing
/// relationship part means no relationships.
pub(crate) fn rels_of<R: Read + Seek>(
    pkg: &mut Package<R>,
    part: &str,
    max_depth: usize,
) -> Result<Vec<Rel>, ExtractError> {
    let (dir, file) = split_part(part);
    let rels_name = if dir.is_empty() {
        format!("_rels/{file}.rels")
    } else {
        format!("{dir}/_rels/{file}.rels")
    };
    let what = pkg.what();
    let Some(bytes) = pkg.read(&rels_name)? else {
        return Ok(Vec::new());
    };
    let mut xml = Xml::new(bytes.as_slice(), what, max_depth);
    let mut rels = Vec::new();
    loop {
        match xml.next()? {
            Ev::Start(e) | Ev::Empty(e) if local(&e) == b"Relationship" => {
                let external = attr(&e, b"TargetMode").is_some_and(|m| m == "External");
                let raw = attr(&e, b"Target").unwrap_or_default();
                rels.push(Rel {
                    id: attr(&e, b"Id").unwrap_or_default(),
                    rel_type: attr(&e, b"Type").unwrap_or_default(),
                    target: if external { raw } else { resolve(dir, &raw) },
                    external,
                });
            }
            Ev::Eof => return Ok(rels),
            _ => {}
        }
    }
}

/// The main part the package-level relationships point to with a type
/// ending in `/officeDocument`, or `fallback`.
pub(crate) fn main_part<R: Read + Seek>(
    pkg: &mut Package<R>,
    fallback: &str,
    max_depth: usize,
) -> Result<String, ExtractError> {
    let rels = rels_of(pkg, "", max_depth)?;
    Ok(rels
        .into_iter()
        .find(|r| !r.external && r.rel_type.ends_with("/officeDocument") && !r.target.is_empty())
        .map(|r| r.target)
        .unwrap_or_else(|| fallback.to_owned()))
}

fn split_part(part: &str) -> (&str, &str) {
    match part.rsplit_once('/') {
        Some((dir, file)) => (dir, file),
        None => ("", part),
    }
}

/// Resolves a relationship target against the directory of its source part,
/// following `.` and `..` but never above the package root.
pub(crate) fn resolve(base_dir: &str, target: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    let (start, rest) = match target.strip_prefix('/') {
        Some(abs) => ("", abs),
        None => (base_dir, target),
    };
    for seg in start.split('/').chain(rest.split('/')) {
        match seg {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            s => parts.push(s),
        }
    }
    parts.join("/")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits::Limits;
    use crate::package::tests::zip_of;
    use std::io::Cursor;

    #[test]
    fn targets_resolve_against_the_source_directory() {
        assert_eq!(resolve("ppt", "slides/slide1.xml"), "ppt/slides/slide1.xml");
        assert_eq!(
            resolve("ppt/slides", "../slideLayouts/l1.xml"),
            "ppt/slideLayouts/l1.xml"
        );
        assert_eq!(resolve("ppt", "/ppt/slides/s.xml"), "ppt/slides/s.xml");
        assert_eq!(resolve("", "word/document.xml"), "word/document.xml");
        assert_eq!(resolve("a", "../../../x"), "x");
    }

    #[test]
    fn reads_package_and_part_relationships() {
        let bytes = zip_of(&[
            (
                "_rels/.rels",
                br#"<Relationships><Relationship Id="rId1" Type="http://x/officeDocument" Target="word/main.xml"/></Relationships>"#,
            ),
            (
                "word/_rels/main.xml.rels",
                br#"<Relationships><Relationship Id="rId5" Type="t" Target="https://example.com" TargetMode="External"/><Relationship Id="rId6" Type="s" Target="styles.xml"/></Relationships>"#,
            ),
        ]);
        let mut pkg =
            Package::open(Cursor::new(bytes), "test package", &Limits::default()).unwrap();
        assert_eq!(
            main_part(&mut pkg, "word/document.xml", 64).unwrap(),
            "word/main.xml"
        );
        let rels = rels_of(&mut pkg, "word/main.xml", 64).unwrap();
        assert_eq!(rels.len(), 2);
        assert!(rels[0].external);
        assert_eq!(rels[0].target, "https://example.com");
        assert_eq!(rels[1].target, "word/styles.xml");
        assert!(rels_of(&mut pkg, "word/other.xml", 64).unwrap().is_empty());
    }
}
