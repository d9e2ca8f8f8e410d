//! Rebuilding a damaged PDF's cross-reference table, for [`crate::pdf::load`] to try when the
//! file as it is cannot be read: the objects are found by their `N G obj` headers in the
//! bytes, stream lengths that do not match are measured again, and a new table, trailer and
//! `startxref` are appended after the original bytes.

/// Most objects a rebuilt cross-reference table may list (20 bytes each).
const MAX_REBUILT_OBJECTS: u32 = 1_000_000;

/// Rebuilds the cross-reference table of a PDF from the `N G obj` headers
/// found in its bytes and appends it, with a trailer and `startxref`, after
/// the original bytes. The root is taken from the last `trailer` dictionary,
/// or else from the object that declares `/Type /Catalog`. `None` when no
/// object or no root is found.
pub(crate) fn repair_xref(bytes: &[u8]) -> Option<Vec<u8>> {
    let start = find(bytes, b"%PDF-", 0)?;
    let fixed = fix_stream_lengths(&bytes[start..]);
    let body = fixed.as_slice();
    let mut objects: std::collections::BTreeMap<u32, (usize, u16)> = Default::default();
    let mut pos = 0;
    while pos < body.len() {
        let line_start = pos;
        let line_end = body[pos..]
            .iter()
            .position(|&b| b == b'\n' || b == b'\r')
            .map_or(body.len(), |p| pos + p);
        if let Some((id, generation, at)) = object_header(&body[line_start..line_end])
            && id > 0
            && id < MAX_REBUILT_OBJECTS
        {
            objects.insert(id, (line_start + at, generation));
        }
        pos = line_end + 1;
    }
    let max_id = *objects.keys().next_back()?;

    let root = find_last(body, b"trailer")
        .and_then(|t| reference_after(&body[t..], b"/Root"))
        .or_else(|| {
            let catalog = find(body, b"/Catalog", 0)?;
            objects
                .iter()
                .filter(|(_, (off, _))| *off < catalog)
                .max_by_key(|(_, (off, _))| *off)
                .map(|(&id, &(_, g))| (id, g))
        })?;

    let mut out = body.to_vec();
    out.extend_from_slice(b"\n");
    let xref_at = out.len();
    let size = max_id + 1;
    out.extend_from_slice(format!("xref\n0 {size}\n0000000000 65535 f\r\n").as_bytes());
    for id in 1..size {
        match objects.get(&id) {
            Some((off, g)) => out.extend_from_slice(format!("{off:010} {g:05} n\r\n").as_bytes()),
            None => out.extend_from_slice(b"0000000000 00000 f\r\n"),
        }
    }
    out.extend_from_slice(
        format!(
            "trailer\n<< /Size {size} /Root {} {} R >>\nstartxref\n{xref_at}\n%%EOF\n",
            root.0, root.1
        )
        .as_bytes(),
    );
    Some(out)
}

/// Files with a broken cross-reference table often have wrong `/Length`s
/// too (they were written by hand or cut). Each direct `/Length` of a stream
/// is set to the distance from `stream` to its `endstream`, the way lenient
/// readers measure it; indirect lengths are left alone.
fn fix_stream_lengths(body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len() + 64);
    let mut copied = 0;
    let mut search = 0;
    while let Some(kw) = find(body, b"stream", search) {
        search = kw + 6;
        // Skip "endstream" and words that merely end in "stream".
        if kw > 0 && body[kw - 1].is_ascii_alphabetic() {
            continue;
        }
        let data_start = match body.get(kw + 6..kw + 8) {
            Some([b'\r', b'\n']) => kw + 8,
            Some([b'\n', _]) | Some([b'\r', _]) => kw + 7,
            _ => continue,
        };
        let Some(end) = find(body, b"endstream", data_start) else {
            break;
        };
        let mut data_end = end;
        if data_end > data_start && body[data_end - 1] == b'\n' {
            data_end -= 1;
        }
        if data_end > data_start && body[data_end - 1] == b'\r' {
            data_end -= 1;
        }
        search = end + 9;
        // The /Length of this stream's dictionary: the last one before the
        // keyword, within the same object.
        let dict_from = find_last(&body[copied..kw], b" obj").map_or(copied, |p| copied + p);
        let Some(len_at) = find_last(&body[dict_from..kw], b"/Length").map(|p| dict_from + p + 7)
        else {
            continue;
        };
        let value_at = len_at
            + body[len_at..kw]
                .iter()
                .take_while(|b| b.is_ascii_whitespace())
                .count();
        let Some((_, after)) = digits(&body[value_at..kw]) else {
            continue;
        };
        let value_end = kw - after.len();
        // "N G R" is an indirect length: leave it.
        let tail = &body[value_end..kw];
        let trimmed = &tail[tail.iter().take_while(|b| b.is_ascii_whitespace()).count()..];
        if digits(trimmed).is_some() {
            continue;
        }
        out.extend_from_slice(&body[copied..value_at]);
        out.extend_from_slice((data_end - data_start).to_string().as_bytes());
        copied = value_end;
    }
    out.extend_from_slice(&body[copied..]);
    out
}

/// Parses `N G obj` at the start of a line (after blanks): the id, the
/// generation and the offset of the id within the line.
fn object_header(line: &[u8]) -> Option<(u32, u16, usize)> {
    let at = line.iter().position(|b| !b.is_ascii_whitespace())?;
    let rest = &line[at..];
    let (id, rest) = digits(rest)?;
    let rest = skip_blanks(rest)?;
    let (generation, rest) = digits(rest)?;
    let rest = skip_blanks(rest)?;
    if !rest.starts_with(b"obj") {
        return None;
    }
    if rest.get(3).is_some_and(|b| b.is_ascii_alphanumeric()) {
        return None;
    }
    Some((u32::try_from(id).ok()?, u16::try_from(generation).ok()?, at))
}

fn digits(s: &[u8]) -> Option<(u64, &[u8])> {
    let n = s.iter().take_while(|b| b.is_ascii_digit()).count();
    if n == 0 || n > 10 {
        return None;
    }
    let value = std::str::from_utf8(&s[..n]).ok()?.parse().ok()?;
    Some((value, &s[n..]))
}

/// Skips at least one blank.
fn skip_blanks(s: &[u8]) -> Option<&[u8]> {
    let n = s.iter().take_while(|b| matches!(b, b' ' | b'\t')).count();
    (n > 0).then(|| &s[n..])
}

/// `/Key N G R` somewhere after the start of `s` (within its first 4 KiB).
fn reference_after(s: &[u8], key: &[u8]) -> Option<(u32, u16)> {
    let window = &s[..s.len().min(4096)];
    let at = find(window, key, 0)? + key.len();
    let rest = &window[at..];
    let rest = &rest[rest.iter().position(|b| !b.is_ascii_whitespace())?..];
    let (id, rest) = digits(rest)?;
    let rest = &rest[rest.iter().position(|b| !b.is_ascii_whitespace())?..];
    let (generation, rest) = digits(rest)?;
    let rest = &rest[rest.iter().position(|b| !b.is_ascii_whitespace())?..];
    rest.starts_with(b"R")
        .then(|| Some((u32::try_from(id).ok()?, u16::try_from(generation).ok()?)))
        .flatten()
}

fn find(hay: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    hay.get(from..)?
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|p| p + from)
}

fn find_last(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).rposition(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrong_stream_lengths_are_measured_again() {
        let body = b"4 0 obj\n<< /Length 3 >>\nstream\nBT (abc) Tj ET\nendstream\nendobj\n5 0 obj\n<< /Length 9 0 R >>\nstream\nxy\nendstream\nendobj";
        let fixed = fix_stream_lengths(body);
        assert_eq!(
            String::from_utf8(fixed).unwrap(),
            "4 0 obj\n<< /Length 14 >>\nstream\nBT (abc) Tj ET\nendstream\nendobj\n5 0 obj\n<< /Length 9 0 R >>\nstream\nxy\nendstream\nendobj"
        );
    }

    #[test]
    fn object_headers_are_recognised() {
        assert_eq!(object_header(b"12 0 obj"), Some((12, 0, 0)));
        assert_eq!(object_header(b"  7 3 obj <<"), Some((7, 3, 2)));
        assert_eq!(object_header(b"7 0 object"), None);
        assert_eq!(object_header(b"7 0 R"), None);
        assert_eq!(
            reference_after(b"trailer << /Size 8 /Root 1 0 R >>", b"/Root"),
            Some((1, 0))
        );
    }
}
