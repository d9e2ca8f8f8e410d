//! PDF content streams made readable for the text reader (pdf-extract, on lopdf) before it
//! reads them. Three things that PDF allows and other readers read stopped it, each found on
//! pdf.js's public test corpus where poppler's `pdftotext` reads text and ferry read none:
//!
//! - **Comments.** A comment (`%` to the end of its line) may stand wherever whitespace may,
//!   and `%` is a delimiter, so `200 200 re% a square` is a `re` and a comment. lopdf's content
//!   parser reads such an operator as `re%` and stops there, and everything the page draws
//!   after it is lost (`calgray.pdf` and `calrgb.pdf`: poppler reads 800 and 41,000
//!   characters, ferry read none). A stream that holds a comment is rewritten without.
//! - **`ASCIIHexDecode`.** lopdf decodes Flate, LZW and ASCII85 but not hexadecimal, so a
//!   content stream written in hex was no content at all (`issue6108.pdf`). It is decoded
//!   here when it is a stream's outermost filter, as ASCII encodings are.
//! - **The quote operators.** `string '` (next line, then show) and `aw ac string "` (set the
//!   word and character spacing, next line, show) are older spellings of `T* string Tj`; the
//!   text reader knows only the latter, so they are spelled out (`bug1337429.pdf`).

use pdf_extract::content::{Content, Operation};
use pdf_extract::{Document, Object, ObjectId, Stream};

/// Makes every page's content streams, and every form XObject's, readable (see above).
pub(crate) fn make_readable(doc: &mut Document) {
    let mut streams: Vec<ObjectId> = doc
        .get_pages()
        .into_values()
        .flat_map(|page| doc.get_page_contents(page))
        .collect();
    streams.extend(
        doc.objects
            .iter()
            .filter(|(_, object)| is_form(object))
            .map(|(id, _)| *id),
    );
    streams.sort_unstable();
    streams.dedup();
    for id in streams {
        if let Some(Object::Stream(stream)) = doc.objects.get_mut(&id) {
            make_stream_readable(stream);
        }
    }
}

fn make_stream_readable(stream: &mut Stream) {
    decode_outer_hex(stream);
    // A stream that cannot be decoded is left as it is: the text reader says what is wrong
    // with it.
    let Ok(mut content) = stream.get_plain_content() else {
        return;
    };
    let mut changed = false;
    if let Some(stripped) = without_comments(&content) {
        content = stripped;
        changed = true;
    }
    if let Some(spelled) = quotes_spelled_out(&content) {
        content = spelled;
        changed = true;
    }
    if changed {
        stream.set_plain_content(content);
    }
}

/// Decodes the stream's outermost filter when it is `ASCIIHexDecode`, leaving the others.
fn decode_outer_hex(stream: &mut Stream) {
    let filters: Vec<Object> = match stream.dict.get(b"Filter") {
        Ok(Object::Name(name)) => vec![Object::Name(name.clone())],
        Ok(Object::Array(items)) => items.clone(),
        _ => return,
    };
    if !matches!(filters.first(), Some(Object::Name(name)) if name == b"ASCIIHexDecode") {
        return;
    }
    let decoded = from_hex(&stream.content);
    let rest = filters[1..].to_vec();
    stream.set_content(decoded);
    if rest.is_empty() {
        stream.dict.remove(b"Filter");
        stream.dict.remove(b"DecodeParms");
        return;
    }
    stream.dict.set("Filter", Object::Array(rest));
    // Parameters go with their filters, one for each; the hex filter has none.
    if let Ok(Object::Array(params)) = stream.dict.get(b"DecodeParms") {
        let params = params.get(1..).map(<[Object]>::to_vec).unwrap_or_default();
        stream.dict.set("DecodeParms", Object::Array(params));
    }
}

/// Hexadecimal digits to bytes: white space is skipped, `>` ends the data, and a last digit
/// without its pair counts as followed by 0 (as the filter is defined). Anything else is
/// skipped too, as other readers do.
fn from_hex(text: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len() / 2);
    let mut high: Option<u8> = None;
    for &byte in text {
        if byte == b'>' {
            break;
        }
        let Some(digit) = (byte as char).to_digit(16) else {
            continue;
        };
        let digit = digit as u8;
        match high.take() {
            Some(h) => out.push(h << 4 | digit),
            None => high = Some(digit),
        }
    }
    if let Some(h) = high {
        out.push(h << 4);
    }
    out
}

/// `content` with every `'` and `"` operator spelled as the operators it stands for, or `None`
/// when it has none. Only a stream that parses to its end is rewritten: one that does not is
/// left for the text reader, which reads what it can of it.
fn quotes_spelled_out(content: &[u8]) -> Option<Vec<u8>> {
    if !content.iter().any(|&b| b == b'\'' || b == b'"') {
        return None;
    }
    let decoded = Content::decode_strict(content).ok()?;
    if !decoded
        .operations
        .iter()
        .any(|op| op.operator == "'" || op.operator == "\"")
    {
        return None;
    }
    let mut operations = Vec::with_capacity(decoded.operations.len() + 8);
    for op in decoded.operations {
        match (op.operator.as_str(), op.operands.as_slice()) {
            ("'", [text]) => {
                operations.push(Operation::new("T*", Vec::new()));
                operations.push(Operation::new("Tj", vec![text.clone()]));
            }
            ("\"", [word, character, text]) => {
                operations.push(Operation::new("Tw", vec![word.clone()]));
                operations.push(Operation::new("Tc", vec![character.clone()]));
                operations.push(Operation::new("T*", Vec::new()));
                operations.push(Operation::new("Tj", vec![text.clone()]));
            }
            _ => operations.push(op),
        }
    }
    Content { operations }.encode().ok()
}

fn is_form(object: &Object) -> bool {
    let Object::Stream(stream) = object else {
        return false;
    };
    matches!(stream.dict.get(b"Subtype"), Ok(Object::Name(name)) if name == b"Form")
}

/// `content` without its comments, or `None` when it has none. Strings (literal and hex) and
/// the data of inline images are copied as they are: a `%` there is not a comment.
fn without_comments(content: &[u8]) -> Option<Vec<u8>> {
    if !content.contains(&b'%') {
        return None;
    }
    let mut out = Vec::with_capacity(content.len());
    let mut found = false;
    let mut i = 0;
    while i < content.len() {
        match content[i] {
            b'%' => {
                found = true;
                while i < content.len() && !matches!(content[i], b'\r' | b'\n') {
                    i += 1;
                }
            }
            b'(' => {
                let end = literal_string_end(content, i);
                out.extend_from_slice(&content[i..end]);
                i = end;
            }
            b'<' if content.get(i + 1) == Some(&b'<') => {
                out.extend_from_slice(b"<<");
                i += 2;
            }
            b'<' => {
                let end = content[i..]
                    .iter()
                    .position(|&b| b == b'>')
                    .map_or(content.len(), |at| i + at + 1);
                out.extend_from_slice(&content[i..end]);
                i = end;
            }
            b'I' if is_operator(content, i, b"ID") => {
                let end = inline_image_end(content, i + 2);
                out.extend_from_slice(&content[i..end]);
                i = end;
            }
            byte => {
                out.push(byte);
                i += 1;
            }
        }
    }
    found.then_some(out)
}

/// Where the literal string that opens at `start` ends (just past its closing parenthesis):
/// parentheses nest, and a backslash escapes the byte after it.
fn literal_string_end(content: &[u8], start: usize) -> usize {
    let mut depth = 0usize;
    let mut i = start;
    while i < content.len() {
        match content[i] {
            b'\\' => i += 1,
            b'(' => depth += 1,
            b')' => {
                depth -= 1;
                if depth == 0 {
                    return i + 1;
                }
            }
            _ => {}
        }
        i += 1;
    }
    content.len()
}

fn is_delimiter_or_space(byte: u8) -> bool {
    b" \t\r\n\x0C\0()<>[]{}/%".contains(&byte)
}

/// Whether the operator `name` stands at `at`, a token of its own.
fn is_operator(content: &[u8], at: usize, name: &[u8]) -> bool {
    content[at..].starts_with(name)
        && (at == 0 || is_delimiter_or_space(content[at - 1]))
        && content
            .get(at + name.len())
            .is_none_or(|&b| is_delimiter_or_space(b))
}

/// Where an inline image's data, which starts after its `ID` at `from`, ends: at the `EI` that
/// follows whitespace and stands as a token of its own.
fn inline_image_end(content: &[u8], from: usize) -> usize {
    let mut i = from;
    while i + 1 < content.len() {
        if content[i] == b'E'
            && content[i + 1] == b'I'
            && i > from
            && content[i - 1].is_ascii_whitespace()
            && is_operator(content, i, b"EI")
        {
            return i;
        }
        i += 1;
    }
    content.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stripped(content: &str) -> Option<String> {
        without_comments(content.as_bytes()).map(|b| String::from_utf8(b).unwrap())
    }

    #[test]
    fn a_comment_after_an_operator_goes_with_the_rest_of_its_line() {
        assert_eq!(
            stripped("25 25 200 200 re% a square\nf %fill\r\nBT (A) Tj ET%").as_deref(),
            Some("25 25 200 200 re\nf \r\nBT (A) Tj ET")
        );
    }

    #[test]
    fn a_percent_in_a_string_or_an_image_is_not_a_comment() {
        assert_eq!(stripped("(100%) Tj <2541> Tj"), None);
        assert_eq!(
            stripped("(a \\) 50% (b)) Tj % note\n<< /A 1 %x\n>> BDC").as_deref(),
            Some("(a \\) 50% (b)) Tj \n<< /A 1 \n>> BDC")
        );
        let image = "BI /W 1 /H 1 /BPC 8 /CS /G ID %\nEI Q % end";
        assert_eq!(
            stripped(image).as_deref(),
            Some("BI /W 1 /H 1 /BPC 8 /CS /G ID %\nEI Q ")
        );
    }

    #[test]
    fn hex_is_decoded_where_it_is_the_outer_filter() {
        assert_eq!(from_hex(b"42 54\n2f4>ignored"), b"BT/@");
        let mut dict = pdf_extract::Dictionary::new();
        dict.set("Filter", Object::Name(b"ASCIIHexDecode".to_vec()));
        let mut stream = Stream::new(dict, b"425420455420>".to_vec());
        make_stream_readable(&mut stream);
        assert_eq!(stream.get_plain_content().unwrap(), b"BT ET ");
        // Hex outside, Flate inside: the Flate stays for lopdf.
        let text = b"BT (x) Tj ET\n".repeat(20);
        let mut inner = Stream::new(pdf_extract::Dictionary::new(), text.clone());
        inner.compress().unwrap();
        assert!(inner.dict.get(b"Filter").is_ok(), "compressed");
        let hex: String = inner.content.iter().map(|b| format!("{b:02x}")).collect();
        let mut dict = pdf_extract::Dictionary::new();
        let filters = vec![
            Object::Name(b"ASCIIHexDecode".to_vec()),
            Object::Name(b"FlateDecode".to_vec()),
        ];
        dict.set("Filter", Object::Array(filters));
        let mut stream = Stream::new(dict, hex.into_bytes());
        make_stream_readable(&mut stream);
        assert_eq!(stream.get_plain_content().unwrap(), text);
    }

    #[test]
    fn the_quote_operators_are_spelled_out() {
        let spelled = quotes_spelled_out(b"BT (one) Tj (two) ' 1 2 (three) \" ET").unwrap();
        let operators: Vec<String> = Content::decode_strict(&spelled)
            .unwrap()
            .operations
            .into_iter()
            .map(|op| op.operator)
            .collect();
        assert_eq!(
            operators,
            ["BT", "Tj", "T*", "Tj", "Tw", "Tc", "T*", "Tj", "ET"]
        );
        // An apostrophe inside a string is text, not an operator.
        assert_eq!(quotes_spelled_out(b"BT (don't) Tj ET"), None);
    }

    #[test]
    fn the_text_after_a_comment_is_read() {
        use pdf_extract::{Dictionary, Stream};
        let dict = |pairs: Vec<(&str, Object)>| {
            let mut dict = Dictionary::new();
            for (key, value) in pairs {
                dict.set(key, value);
            }
            dict
        };
        let name = |n: &str| Object::Name(n.as_bytes().to_vec());
        let mut doc = Document::with_version("1.5");
        let content = b"BT /F1 12 Tf 50 50 Td% place\n(Hello) Tj ET%\n".to_vec();
        let id = doc.add_object(Stream::new(Dictionary::new(), content));
        let form = dict(vec![("Type", name("XObject")), ("Subtype", name("Form"))]);
        let mut form = Stream::new(form, b"0 0 m % line\n".repeat(8));
        form.compress().unwrap();
        let form_id = doc.add_object(form);
        let pages = doc.new_object_id();
        let page = doc.add_object(dict(vec![
            ("Type", name("Page")),
            ("Parent", pages.into()),
            ("Contents", id.into()),
        ]));
        let tree = dict(vec![
            ("Type", name("Pages")),
            ("Kids", vec![page.into()].into()),
            ("Count", 1.into()),
        ]);
        doc.objects.insert(pages, Object::Dictionary(tree));
        let catalog = doc.add_object(dict(vec![
            ("Type", name("Catalog")),
            ("Pages", pages.into()),
        ]));
        doc.trailer.set("Root", catalog);
        make_readable(&mut doc);
        let plain = |id| match doc.get_object(id) {
            Ok(Object::Stream(stream)) => stream.get_plain_content().unwrap(),
            other => panic!("{other:?}"),
        };
        assert_eq!(plain(id), b"BT /F1 12 Tf 50 50 Td\n(Hello) Tj ET\n");
        assert_eq!(plain(form_id), b"0 0 m \n".repeat(8));
        let operators: Vec<String> = doc
            .get_and_decode_page_content(page)
            .unwrap()
            .operations
            .into_iter()
            .map(|op| op.operator)
            .collect();
        assert_eq!(operators, ["BT", "Tf", "Td", "Tj", "ET"]);
    }
}
