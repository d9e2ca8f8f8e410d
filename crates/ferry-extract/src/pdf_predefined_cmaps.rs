//! Text shown in a composite font whose `/Encoding` is one of the CJK CMaps the PDF standard
//! predefines (`90ms-RKSJ-H`, `UniGB-UCS2-H`, `H`, `V`, …) rather than `Identity-H`/`-V`.
//!
//! The text reader takes composite fonts through the Identity encodings only, where a string's
//! bytes are its CIDs, two by two. A predefined CMap instead says how to cut the bytes into
//! character codes (one to four bytes each) and which CID each code selects; `pdfrum-cmap`
//! ships those tables. So this pass rewrites, page by page, every string shown in such a font
//! as the CIDs it selects, and has it shown in a copy of the font set to the Identity encoding
//! of the same writing direction — without the font's `/ToUnicode`, which spoke of the old
//! codes. The copy then gets its Unicode map like any Identity font ([`crate::pdf_unicode`]),
//! from its character collection. Pages are rewritten, and so are form XObjects (content
//! drawn by `Do`, at any depth) with fonts of their own. A page or form whose content cannot
//! be read is left as it was.

use std::collections::{BTreeMap, HashMap};

use pdf_extract::content::{Content, Operation};
use pdf_extract::{Dictionary, Document, Object, ObjectId};
use pdfrum_cmap::CMap;

/// Appended to a font's resource name to name its Identity copy.
const COPY_SUFFIX: &[u8] = b"-ferry-cid";

/// Rewrites the text of every page and form XObject that shows a font with a predefined
/// CMap. A font object shared by many pages and forms gets one Identity copy, which they all
/// share too (and so one Unicode map, made once).
pub(crate) fn transcode_predefined_cmaps(doc: &mut Document) {
    let mut copies = HashMap::new();
    let pages: Vec<ObjectId> = doc.get_pages().into_values().collect();
    for page in pages {
        transcode_page(doc, page, &mut copies);
    }
    let forms: Vec<ObjectId> = doc
        .objects
        .iter()
        .filter(|(_, object)| is_form(object))
        .map(|(id, _)| *id)
        .collect();
    for form in forms {
        transcode_form(doc, form, &mut copies);
    }
}

/// Rewrites one page; `copies` holds the Identity copy already made of each font object.
fn transcode_page(
    doc: &mut Document,
    page: ObjectId,
    copies: &mut HashMap<ObjectId, ObjectId>,
) -> Option<()> {
    let mut resources = effective_resources(doc, page);
    let mut font_names = dictionary(doc, resources.get(b"Font").ok()?)?;
    let mut content = doc.get_and_decode_page_content(page).ok()?;
    let cmaps = add_identity_copies(doc, &mut font_names, copies)?;
    rewrite(&mut content.operations, &cmaps);
    let bytes = content.encode().ok()?;
    resources.set("Font", Object::Dictionary(font_names));
    doc.change_page_content(page, bytes).ok()?;
    doc.get_dictionary_mut(page)
        .ok()?
        .set("Resources", Object::Dictionary(resources));
    Some(())
}

/// Rewrites one form XObject that has fonts of its own.
fn transcode_form(
    doc: &mut Document,
    form: ObjectId,
    copies: &mut HashMap<ObjectId, ObjectId>,
) -> Option<()> {
    let stream = doc.get_object(form).ok()?.as_stream().ok()?;
    let mut resources = dictionary(doc, stream.dict.get(b"Resources").ok()?)?;
    let mut font_names = dictionary(doc, resources.get(b"Font").ok()?)?;
    let mut content = Content::decode(&stream.get_plain_content().ok()?).ok()?;
    let cmaps = add_identity_copies(doc, &mut font_names, copies)?;
    rewrite(&mut content.operations, &cmaps);
    let bytes = content.encode().ok()?;
    resources.set("Font", Object::Dictionary(font_names));
    let stream = doc.get_object_mut(form).ok()?.as_stream_mut().ok()?;
    stream.set_plain_content(bytes);
    stream.dict.set("Resources", Object::Dictionary(resources));
    Some(())
}

fn is_form(object: &Object) -> bool {
    object.as_stream().is_ok_and(|stream| {
        stream
            .dict
            .get(b"Subtype")
            .and_then(Object::as_name)
            .is_ok_and(|subtype| subtype == b"Form")
    })
}

/// A dictionary written in place, or the one a reference names (copied).
fn dictionary(doc: &Document, value: &Object) -> Option<Dictionary> {
    match value {
        Object::Reference(id) => doc.get_dictionary(*id).ok().cloned(),
        Object::Dictionary(d) => Some(d.clone()),
        _ => None,
    }
}

/// Finds the fonts of `font_names` (a `/Font` resource dictionary) whose encoding is a
/// predefined CMap, and adds each one's Identity copy beside it, under its name with
/// [`COPY_SUFFIX`]. Answers their CMaps by resource name; `None` when there is no such font.
fn add_identity_copies(
    doc: &mut Document,
    font_names: &mut Dictionary,
    copies: &mut HashMap<ObjectId, ObjectId>,
) -> Option<BTreeMap<Vec<u8>, CMap>> {
    let mut cmaps = BTreeMap::new();
    let mut fonts = Vec::new();
    for (name, value) in font_names.iter() {
        let font = match value {
            Object::Reference(id) => doc.get_dictionary(*id).ok(),
            Object::Dictionary(d) => Some(d),
            _ => None,
        };
        if let Some(cmap) = font.and_then(predefined_cmap) {
            fonts.push((name.clone(), cmap.is_vertical(), value.clone()));
            cmaps.insert(name.clone(), cmap);
        }
    }
    if cmaps.is_empty() {
        return None;
    }
    for (name, vertical, value) in fonts {
        let copy = match value {
            Object::Reference(id) => match copies.get(&id) {
                Some(copy) => *copy,
                None => {
                    let font = doc.get_dictionary(id).ok()?.clone();
                    let copy = identity_copy(doc, font, vertical);
                    copies.insert(id, copy);
                    copy
                }
            },
            Object::Dictionary(font) => identity_copy(doc, font, vertical),
            _ => continue,
        };
        font_names.set(
            [name.as_slice(), COPY_SUFFIX].concat(),
            Object::Reference(copy),
        );
    }
    Some(cmaps)
}

/// A copy of `font` set to the Identity encoding of its writing direction, without the
/// `/ToUnicode` that spoke of its old codes; answers the copy's object id.
fn identity_copy(doc: &mut Document, mut font: Dictionary, vertical: bool) -> ObjectId {
    let identity: &[u8] = if vertical {
        b"Identity-V"
    } else {
        b"Identity-H"
    };
    font.set("Encoding", Object::Name(identity.to_vec()));
    font.remove(b"ToUnicode");
    give_descriptor(doc, &mut font);
    doc.add_object(Object::Dictionary(font))
}

/// Gives the copy's CIDFont a `/FontDescriptor` when it has none. ISO 32000 requires one, and
/// the reader cannot go on without it, but writers leave it out for the fonts every reader is
/// expected to have (Ryumin-Light, say). The one given names the font and says nothing else
/// that matters for reading text.
fn give_descriptor(doc: &mut Document, font: &mut Dictionary) -> Option<()> {
    let descendants = match font.get(b"DescendantFonts").ok()? {
        Object::Reference(id) => doc.get_object(*id).ok()?.as_array().ok()?.clone(),
        Object::Array(items) => items.clone(),
        _ => return None,
    };
    let mut descendant = match descendants.first()? {
        Object::Reference(id) => doc.get_dictionary(*id).ok()?.clone(),
        Object::Dictionary(d) => d.clone(),
        _ => return None,
    };
    if descendant.has(b"FontDescriptor") {
        return Some(());
    }
    let name = descendant
        .get(b"BaseFont")
        .and_then(Object::as_name)
        .map(<[u8]>::to_vec)
        .unwrap_or_else(|_| b"Unnamed".to_vec());
    let mut descriptor = Dictionary::new();
    descriptor.set("Type", Object::Name(b"FontDescriptor".to_vec()));
    descriptor.set("FontName", Object::Name(name));
    descriptor.set("Flags", Object::Integer(4));
    descendant.set("FontDescriptor", Object::Dictionary(descriptor));
    let id = doc.add_object(Object::Dictionary(descendant));
    font.set(
        "DescendantFonts",
        Object::Array(vec![Object::Reference(id)]),
    );
    Some(())
}

/// The predefined CMap a composite font names as its `/Encoding`, if it names one other than
/// the Identity ones.
fn predefined_cmap(font: &Dictionary) -> Option<CMap> {
    let name = |key: &[u8]| font.get(key).and_then(Object::as_name).ok();
    if name(b"Subtype")? != b"Type0" {
        return None;
    }
    let encoding = name(b"Encoding")?;
    if matches!(encoding, b"Identity-H" | b"Identity-V") {
        return None;
    }
    let encoding = std::str::from_utf8(encoding).ok()?;
    pdfrum_cmap::predefined(&pdfrum_object::Name::from(encoding))
}

/// Points every `Tf` that selects one of the fonts in `cmaps` (by resource name) at its
/// Identity copy, and writes each string shown while one is selected as its CIDs.
fn rewrite(operations: &mut [Operation], cmaps: &BTreeMap<Vec<u8>, CMap>) {
    let mut current: Option<&CMap> = None;
    for operation in operations {
        match operation.operator.as_str() {
            "Tf" => {
                current = None;
                if let Some(Object::Name(name)) = operation.operands.first_mut()
                    && let Some(cmap) = cmaps.get(name.as_slice())
                {
                    current = Some(cmap);
                    name.extend_from_slice(COPY_SUFFIX);
                }
            }
            "Tj" | "'" | "\"" | "TJ" => {
                if let Some(cmap) = current {
                    operation
                        .operands
                        .iter_mut()
                        .for_each(|operand| as_cids(cmap, operand));
                }
            }
            _ => {}
        }
    }
}

/// A shown string (or each string of a `TJ` array) rewritten as the CIDs its codes select,
/// two bytes each.
fn as_cids(cmap: &CMap, operand: &mut Object) {
    match operand {
        Object::String(bytes, _) => *bytes = cids(cmap, bytes),
        Object::Array(items) => items.iter_mut().for_each(|item| as_cids(cmap, item)),
        _ => {}
    }
}

fn cids(cmap: &CMap, codes: &[u8]) -> Vec<u8> {
    cmap.decode(codes)
        .flat_map(|(_, cid)| cid.0.to_be_bytes())
        .collect()
}

/// A copy of the resources that apply to the page: its own, or else the nearest ancestor's
/// (resources are inherited whole).
pub(crate) fn effective_resources(doc: &Document, page: ObjectId) -> Dictionary {
    match doc.get_page_resources(page) {
        Ok((Some(own), _)) => own.clone(),
        Ok((None, ids)) => ids
            .first()
            .and_then(|id| doc.get_dictionary(*id).ok())
            .cloned()
            .unwrap_or_default(),
        Err(_) => Dictionary::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jis_codes_become_japan1_cids() {
        // `H` is JIS X 0208 in two bytes, horizontal, over Adobe-Japan1: 0x2422 is あ.
        let h = pdfrum_cmap::predefined(&pdfrum_object::Name::from("H")).unwrap();
        assert!(!h.is_vertical());
        let cids = cids(&h, &[0x24, 0x22, 0x24, 0x24]);
        assert_eq!(cids.len(), 4);
        let first = u16::from_be_bytes([cids[0], cids[1]]);
        let ch =
            pdfrum_cmap::unicode_from_cid(pdfrum_cmap::CidSet::Japan1, pdfrum_cmap::Cid(first));
        assert_eq!(ch, Some('あ'));
        let v = pdfrum_cmap::predefined(&pdfrum_object::Name::from("V")).unwrap();
        assert!(v.is_vertical());
    }

    #[test]
    fn only_composite_fonts_with_a_predefined_cmap_are_rewritten() {
        let font = |subtype: &str, encoding: &str| {
            let mut d = Dictionary::new();
            d.set("Subtype", Object::Name(subtype.as_bytes().to_vec()));
            d.set("Encoding", Object::Name(encoding.as_bytes().to_vec()));
            d
        };
        assert!(predefined_cmap(&font("Type0", "90ms-RKSJ-H")).is_some());
        assert!(predefined_cmap(&font("Type0", "UniGB-UCS2-H")).is_some());
        assert!(predefined_cmap(&font("Type0", "Identity-H")).is_none());
        assert!(predefined_cmap(&font("Type0", "Not-A-CMap")).is_none());
        assert!(predefined_cmap(&font("Type1", "90ms-RKSJ-H")).is_none());
    }

    #[test]
    fn strings_shown_in_such_a_font_are_rewritten_and_others_are_not() {
        let h = pdfrum_cmap::predefined(&pdfrum_object::Name::from("H")).unwrap();
        let fonts = BTreeMap::from([(b"F2".to_vec(), h)]);
        let string = |b: &[u8]| Object::string_literal(b.to_vec());
        let mut ops = vec![
            Operation::new(
                "Tf",
                vec![Object::Name(b"F1".to_vec()), Object::Integer(12)],
            ),
            Operation::new("Tj", vec![string(b"Hello")]),
            Operation::new(
                "Tf",
                vec![Object::Name(b"F2".to_vec()), Object::Integer(12)],
            ),
            Operation::new("Tj", vec![string(&[0x24, 0x22])]),
            Operation::new(
                "TJ",
                vec![Object::Array(vec![
                    string(&[0x24, 0x24]),
                    Object::Integer(-50),
                ])],
            ),
        ];
        rewrite(&mut ops, &fonts);
        assert_eq!(ops[0].operands[0], Object::Name(b"F1".to_vec()));
        assert_eq!(ops[1].operands[0], string(b"Hello"));
        assert_eq!(ops[2].operands[0], Object::Name(b"F2-ferry-cid".to_vec()));
        let Object::String(shown, _) = &ops[3].operands[0] else {
            panic!("a string")
        };
        assert_eq!(shown.len(), 2);
        assert_ne!(shown.as_slice(), &[0x24, 0x22]);
        let Object::Array(items) = &ops[4].operands[0] else {
            panic!("an array")
        };
        assert_eq!(items[1], Object::Integer(-50));
    }
}
