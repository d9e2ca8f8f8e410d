//! Unicode maps for PDF fonts written without one.
//!
//! A composite (Type0) font with the `Identity-H` or `Identity-V` encoding shows glyphs by
//! number; the text behind them is known only from its `/ToUnicode` map. Some writers leave
//! that map out. Two other sources still say which character each glyph draws:
//! - the embedded TrueType font's own `cmap` table, read backwards;
//! - for a font of one of Adobe's CJK character collections (`/CIDSystemInfo` Adobe-Japan1,
//!   -GB1, -CNS1 or -Korea1), often not embedded at all, that collection's published
//!   CID → Unicode table (from the `pdfrum-cmap` crate). Fonts that used a predefined CMap
//!   arrive here as Identity copies ([`crate::pdf_predefined_cmaps`]).
//!
//! This module writes what it finds as a `/ToUnicode` CMap stream and attaches it to the font,
//! so that the text reader decodes those glyphs like any others (as poppler and pdfminer do).

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;

use pdf_extract::{Dictionary, Document, Object, ObjectId, Stream};
use pdfrum_cmap::CidSet;

/// Gives every Identity-encoded Type0 font that has no `/ToUnicode` a map made from its
/// embedded TrueType font or its character collection. Fonts it cannot help are left as they
/// are.
pub(crate) fn add_missing_unicode_maps(doc: &mut Document) {
    let fonts: Vec<ObjectId> = doc
        .objects
        .iter()
        .filter(|(_, object)| {
            object
                .as_dict()
                .is_ok_and(|font| lacks_unicode_map(doc, font))
        })
        .map(|(id, _)| *id)
        .collect();
    // Fonts of one character collection share one map, made once.
    let mut collections: HashMap<CidSet, ObjectId> = HashMap::new();
    for id in fonts {
        let Some(source) = doc
            .get_dictionary(id)
            .ok()
            .and_then(|font| map_source(doc, font))
        else {
            continue;
        };
        let cmap = match source {
            MapSource::Embedded(map) => {
                doc.add_object(Stream::new(Dictionary::new(), to_unicode_cmap(&map)))
            }
            MapSource::Collection(set) => match collections.get(&set) {
                Some(cmap) => *cmap,
                None => {
                    let Some(map) = collection_map(set) else {
                        continue;
                    };
                    let cmap =
                        doc.add_object(Stream::new(Dictionary::new(), to_unicode_cmap(&map)));
                    collections.insert(set, cmap);
                    cmap
                }
            },
        };
        // Replaces a /ToUnicode that is not a map, if there was one.
        if let Ok(font) = doc.get_dictionary_mut(id) {
            font.set("ToUnicode", Object::Reference(cmap));
        }
    }
}

/// Whether `font` is an Identity-encoded Type0 font without a usable `/ToUnicode` stream (some
/// writers put a name there, `/ToUnicode /Identity-H`, which is no map at all).
fn lacks_unicode_map(doc: &Document, font: &Dictionary) -> bool {
    let name = |key: &[u8]| font.get(key).and_then(Object::as_name).ok();
    let has_map = font
        .get(b"ToUnicode")
        .ok()
        .and_then(|value| follow(doc, value))
        .is_some_and(|map| map.as_stream().is_ok());
    name(b"Subtype") == Some(b"Type0")
        && matches!(name(b"Encoding"), Some(b"Identity-H" | b"Identity-V"))
        && !has_map
}

/// Where a font's missing map comes from.
enum MapSource {
    /// Its embedded TrueType font's `cmap`, read backwards.
    Embedded(BTreeMap<u16, char>),
    /// The published table of the Adobe CJK character collection it names.
    Collection(CidSet),
}

/// Which character each CID of `font` draws: from its embedded TrueType font when that says,
/// else from its character collection's table.
fn map_source(doc: &Document, font: &Dictionary) -> Option<MapSource> {
    let descendants = follow(doc, font.get(b"DescendantFonts").ok()?)?
        .as_array()
        .ok()?;
    let descendant = follow(doc, descendants.first()?)?.as_dict().ok()?;
    embedded_font_map(doc, descendant)
        .map(MapSource::Embedded)
        .or_else(|| collection_of(doc, descendant).map(MapSource::Collection))
}

/// The Adobe CJK character collection a descendant font's `/CIDSystemInfo` names
/// (`Registry (Adobe)`, `Ordering (Japan1)` and the like), if its table is known.
fn collection_of(doc: &Document, descendant: &Dictionary) -> Option<CidSet> {
    let info = follow(doc, descendant.get(b"CIDSystemInfo").ok()?)?
        .as_dict()
        .ok()?;
    let text = |key: &[u8]| follow(doc, info.get(key).ok()?)?.as_str().ok();
    if text(b"Registry")? != b"Adobe" {
        return None;
    }
    let set = pdfrum_cmap::charset_from_ordering(text(b"Ordering")?);
    pdfrum_cmap::has_cid2unicode(set).then_some(set)
}

/// The characters of a character collection by CID.
fn collection_map(set: CidSet) -> Option<BTreeMap<u16, char>> {
    use pdfrum_cmap::{Cid, unicode_from_cid};
    // CID 0 is .notdef, which the tables give as U+FFFD: no character at all.
    let map: BTreeMap<u16, char> = (1..=u16::MAX)
        .filter_map(|cid| {
            let ch = unicode_from_cid(set, Cid(cid))?;
            (ch != '\u{FFFD}').then_some((cid, ch))
        })
        .collect();
    (!map.is_empty()).then_some(map)
}

/// Which character each CID of a descendant font draws, from its embedded TrueType font.
fn embedded_font_map(doc: &Document, descendant: &Dictionary) -> Option<BTreeMap<u16, char>> {
    let follow = |object| follow(doc, object);
    let descriptor = follow(descendant.get(b"FontDescriptor").ok()?)?
        .as_dict()
        .ok()?;
    let file = follow(descriptor.get(b"FontFile2").ok()?)?
        .as_stream()
        .ok()?;
    let bytes = file.get_plain_content().ok()?;
    let by_glyph = glyph_to_unicode(&bytes)?;

    // CIDs are glyph numbers unless a /CIDToGIDMap stream says otherwise.
    let cid_to_gid = descendant
        .get(b"CIDToGIDMap")
        .ok()
        .and_then(&follow)
        .and_then(|o| o.as_stream().ok())
        .and_then(|s| s.get_plain_content().ok());
    let map: BTreeMap<u16, char> = match cid_to_gid {
        Some(table) => table
            .chunks_exact(2)
            .enumerate()
            .filter_map(|(cid, gid)| {
                let ch = by_glyph.get(&u16::from_be_bytes([gid[0], gid[1]]))?;
                Some((u16::try_from(cid).ok()?, *ch))
            })
            .collect(),
        None => by_glyph,
    };
    (!map.is_empty()).then_some(map)
}

/// `object`, or the object it refers to.
fn follow<'a>(doc: &'a Document, object: &'a Object) -> Option<&'a Object> {
    doc.dereference(object).ok().map(|(_, target)| target)
}

/// The TrueType font's Unicode `cmap` subtables read backwards: glyph → character. Where
/// several characters share a glyph, the smallest is kept.
fn glyph_to_unicode(font: &[u8]) -> Option<BTreeMap<u16, char>> {
    let face = ttf_parser::Face::parse(font, 0).ok()?;
    let cmap = face.tables().cmap?;
    let mut map = BTreeMap::new();
    for subtable in cmap.subtables.into_iter().filter(|s| s.is_unicode()) {
        subtable.codepoints(|code| {
            if let (Some(glyph), Some(ch)) = (subtable.glyph_index(code), char::from_u32(code)) {
                let kept = map.entry(glyph.0).or_insert(ch);
                if ch < *kept {
                    *kept = ch;
                }
            }
        });
    }
    Some(map)
}

/// A `/ToUnicode` CMap listing each CID (two bytes) with its character as UTF-16BE.
fn to_unicode_cmap(map: &BTreeMap<u16, char>) -> Vec<u8> {
    let mut out = String::from(
        "/CIDInit /ProcSet findresource begin\n12 dict begin\nbegincmap\n\
         /CIDSystemInfo << /Registry (Adobe) /Ordering (UCS) /Supplement 0 >> def\n\
         /CMapName /Adobe-Identity-UCS def\n/CMapType 2 def\n\
         1 begincodespacerange\n<0000> <FFFF>\nendcodespacerange\n",
    );
    let entries: Vec<(&u16, &char)> = map.iter().collect();
    // A CMap section holds at most 100 entries.
    for chunk in entries.chunks(100) {
        let _ = writeln!(out, "{} beginbfchar", chunk.len());
        for (cid, ch) in chunk {
            let mut units = [0u16; 2];
            let utf16: String = ch
                .encode_utf16(&mut units)
                .iter()
                .map(|u| format!("{u:04X}"))
                .collect();
            let _ = writeln!(out, "<{cid:04X}> <{utf16}>");
        }
        out.push_str("endbfchar\n");
    }
    out.push_str("endcmap\nCMapName currentdict /CMap defineresource pop\nend\nend\n");
    out.into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cmap_lists_each_cid_with_its_utf16() {
        let map = BTreeMap::from([(3, 'A'), (0x1F, 'ż'), (0x200, '😀')]);
        let text = String::from_utf8(to_unicode_cmap(&map)).unwrap();
        assert!(
            text.contains(
                "3 beginbfchar\n<0003> <0041>\n<001F> <017C>\n<0200> <D83DDE00>\nendbfchar"
            ),
            "{text}"
        );
        assert!(text.starts_with("/CIDInit"));
        assert!(text.ends_with("end\nend\n"));
    }

    #[test]
    fn sections_hold_at_most_100_entries() {
        let map: BTreeMap<u16, char> = (0..250u16).map(|i| (i, 'x')).collect();
        let text = String::from_utf8(to_unicode_cmap(&map)).unwrap();
        assert_eq!(text.matches("100 beginbfchar").count(), 2);
        assert_eq!(text.matches("50 beginbfchar").count(), 1);
    }

    #[test]
    fn only_identity_type0_fonts_without_a_map_are_touched() {
        let mut doc = Document::new();
        let map = doc.add_object(Stream::new(Dictionary::new(), b"a map".to_vec()));
        let font = |encoding: &str, to_unicode: Option<Object>| {
            let mut d = Dictionary::new();
            d.set("Type", Object::Name(b"Font".to_vec()));
            d.set("Subtype", Object::Name(b"Type0".to_vec()));
            d.set("Encoding", Object::Name(encoding.as_bytes().to_vec()));
            if let Some(value) = to_unicode {
                d.set("ToUnicode", value);
            }
            d
        };
        let name = Object::Name(b"Identity-H".to_vec());
        assert!(lacks_unicode_map(&doc, &font("Identity-H", None)));
        assert!(lacks_unicode_map(&doc, &font("Identity-V", None)));
        assert!(lacks_unicode_map(&doc, &font("Identity-H", Some(name))));
        assert!(!lacks_unicode_map(
            &doc,
            &font("Identity-H", Some(Object::Reference(map)))
        ));
        assert!(!lacks_unicode_map(&doc, &font("UniJIS-UCS2-H", None)));
    }

    /// A descendant font naming its character collection, the way `/CIDSystemInfo` does.
    fn descendant(registry: &str, ordering: &str) -> Dictionary {
        let mut info = Dictionary::new();
        info.set("Registry", Object::string_literal(registry));
        info.set("Ordering", Object::string_literal(ordering));
        info.set("Supplement", Object::Integer(6));
        let mut d = Dictionary::new();
        d.set("Subtype", Object::Name(b"CIDFontType0".to_vec()));
        d.set("CIDSystemInfo", Object::Dictionary(info));
        d
    }

    #[test]
    fn an_adobe_collection_gives_its_characters_by_cid() {
        let doc = Document::new();
        let of = |registry, ordering| {
            collection_of(&doc, &descendant(registry, ordering)).and_then(collection_map)
        };
        let japan = of("Adobe", "Japan1").unwrap();
        // CID 34 is the Latin A in every Adobe CJK collection; the thousands above are kana
        // and kanji.
        assert_eq!(japan.get(&34), Some(&'A'));
        assert_eq!(
            japan.get(&3_350).copied().map(char::is_alphabetic),
            Some(true)
        );
        assert!(japan.len() > 10_000, "{}", japan.len());
        assert!(!japan.contains_key(&0), "CID 0 is .notdef, no character");
        let korea = of("Adobe", "Korea1").unwrap();
        assert_eq!(korea.get(&34), Some(&'A'));
        // Another registry, or an ordering without a table, gives nothing to guess with.
        assert!(of("Acme", "Japan1").is_none());
        assert!(of("Adobe", "Identity").is_none());
        assert!(collection_of(&doc, &Dictionary::new()).is_none());
    }
}
