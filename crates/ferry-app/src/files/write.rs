//! `write_file`: a file's content, given as text or as base64, written through the place's own
//! write (the sandbox's or the space's, with their rules).
//!
//! The content arrives one of two ways. Whole, in memory: an MCP call, one file of an
//! `upload_files` batch. Or spooled: the HTTP route reads its JSON body as it arrives and keeps
//! the content in a scratch file, so a large file never sits in the server's memory whole; it is
//! then written from that file, decoded as it streams. Both ways decode base64 by the one rule
//! of [`Base64Decoder`].

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD_NO_PAD;
use bytes::Bytes;
use ferry_core::AgentPath;
use ferry_core::agent_files::{Encoding, WriteFileInput};
use ferry_core::conditions::quoted_etag;
use futures::{Stream, StreamExt};

use super::{Caller, Written, condition, file_path, in_memory, put};
use crate::body::Incoming;
use crate::error::{Error, Result};

/// Bytes of base64 text decoded at a time when a spooled content is checked and written.
const CHUNK: usize = 64 << 10;

/// `write_file` with its content whole: creates or replaces a file (the folders on the way are
/// made), typed by its name.
pub async fn write(caller: Caller<'_>, input: &WriteFileInput) -> Result<Written> {
    let bytes = match input.encoding {
        Encoding::Utf8 => input.content.clone().into_bytes(),
        Encoding::Base64 => {
            let mut decoder = Base64Decoder::default();
            let mut out = Vec::with_capacity(input.content.len() / 4 * 3 + 3);
            decoder
                .feed(input.content.as_bytes(), &mut out)
                .and_then(|()| decoder.finish(&mut out))
                .map_err(not_base64)?;
            out
        }
    };
    write_body(caller, &Fields::of(input), in_memory(bytes)).await
}

/// What a `write_file` request says besides its content.
#[derive(Debug, Clone)]
pub struct Fields {
    pub path: String,
    pub encoding: Encoding,
    pub if_none_match: Option<String>,
    pub if_match: Option<String>,
    pub content_type: Option<String>,
}

impl Fields {
    fn of(input: &WriteFileInput) -> Fields {
        Fields {
            path: input.path.clone(),
            encoding: input.encoding,
            if_none_match: input.if_none_match.clone(),
            if_match: input.if_match.clone(),
            content_type: input.content_type.clone(),
        }
    }
}

/// A `write_file` request whose content was read into a scratch file as it arrived: the
/// content's text exactly (the text itself, or its base64), without the JSON around it.
#[derive(Debug)]
pub struct SpooledWrite {
    pub fields: Fields,
    /// Removed when the request is done with it.
    pub content: tempfile::TempPath,
    /// The content's length in bytes, as spooled.
    pub len: u64,
}

/// `write_file` with its content spooled: the same write as [`write`], the content streamed
/// from its scratch file (base64 decoded as it goes, after a first reading has found it valid,
/// so that nothing is written of a content that turns out not to be base64).
pub async fn write_spooled(caller: Caller<'_>, input: &SpooledWrite) -> Result<Written> {
    let open = || async {
        tokio::fs::File::open(&input.content)
            .await
            .map_err(Error::io)
    };
    match input.fields.encoding {
        Encoding::Utf8 => {
            let chunks = tokio_util::io::ReaderStream::with_capacity(open().await?, CHUNK);
            let body = Incoming::new(chunks, Some(input.len));
            write_body(caller, &input.fields, body).await
        }
        Encoding::Base64 => {
            let decoded_len = checked(open().await?).await?;
            let body = Incoming::new(decoded(open().await?), Some(decoded_len));
            write_body(caller, &input.fields, body).await
        }
    }
}

/// How many bytes the base64 text in `file` decodes to, or why it is not base64: the first
/// reading of a spooled content, before anything is written.
async fn checked(file: tokio::fs::File) -> Result<u64> {
    let mut chunks = tokio_util::io::ReaderStream::with_capacity(file, CHUNK);
    let mut decoder = Base64Decoder::default();
    let (mut out, mut len) = (Vec::with_capacity(CHUNK), 0u64);
    while let Some(text) = chunks.next().await {
        decoder
            .feed(&text.map_err(Error::io)?, &mut out)
            .map_err(not_base64)?;
        len += out.len() as u64;
        out.clear();
    }
    decoder.finish(&mut out).map_err(not_base64)?;
    Ok(len + out.len() as u64)
}

/// The bytes of the base64 text in `file`, decoded a chunk at a time; a text that is not
/// base64 ends the stream with an `InvalidData` error saying why.
fn decoded(file: tokio::fs::File) -> impl Stream<Item = std::io::Result<Bytes>> {
    let chunks = tokio_util::io::ReaderStream::with_capacity(file, CHUNK);
    futures::stream::unfold(
        (chunks, Some(Base64Decoder::default())),
        |(mut chunks, decoder)| async move {
            let mut decoder = decoder?;
            let mut out = Vec::with_capacity(CHUNK);
            loop {
                let step = match chunks.next().await {
                    Some(Ok(text)) => decoder.feed(&text, &mut out),
                    Some(Err(e)) => return Some((Err(e), (chunks, None))),
                    None => {
                        let end = decoder.finish(&mut out).map(|()| Bytes::from(out));
                        return Some((end.map_err(invalid_data), (chunks, None)));
                    }
                };
                match step {
                    Err(e) => return Some((Err(invalid_data(e)), (chunks, None))),
                    Ok(()) if !out.is_empty() => {
                        return Some((Ok(Bytes::from(out)), (chunks, Some(decoder))));
                    }
                    Ok(()) => {}
                }
            }
        },
    )
}

fn invalid_data(why: String) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, not_base64(why).to_string())
}

fn not_base64(why: String) -> Error {
    Error::invalid_request(format!("content is not valid base64: {why}"))
}

/// Writes `body` at the request's path, with its conditions, typed as the write says or else by
/// the file's name (text sent as text is UTF-8, and says so, as the spaces' notes do).
async fn write_body<S, E>(caller: Caller<'_>, fields: &Fields, body: Incoming<S>) -> Result<Written>
where
    S: Stream<Item = std::result::Result<Bytes, E>>,
    E: std::fmt::Display,
{
    let path = file_path(&fields.path)?;
    let condition = condition(fields.if_none_match.as_deref(), fields.if_match.as_deref())?;
    let content_type = match &fields.content_type {
        // The same check as a PUT's Content-Type.
        Some(given) => ferry_core::content_type::check(given)?.to_owned(),
        None => {
            let mut by_name = ferry_core::mime::mime_for_name(path.file_name());
            if fields.encoding == Encoding::Utf8
                && by_name.starts_with("text/")
                && !by_name.contains("charset")
            {
                by_name.push_str("; charset=utf-8");
            }
            by_name
        }
    };
    let (created, size, etag) = put(caller, &path, &content_type, &condition, body).await?;
    // A space keeps the type a file was written with; a sandbox file is served with its name's.
    let content_type = match path {
        AgentPath::Sandbox(_) => ferry_core::mime::mime_for_name(path.file_name()),
        _ => content_type,
    };
    Ok(Written {
        path: path.to_string(),
        size,
        content_type,
        etag: quoted_etag(&etag),
        created,
    })
}

/// Base64 (the standard alphabet) decoded as it arrives, by one rule whether the text comes
/// whole or in chunks: whitespace anywhere is skipped, padding is optional and may only end the
/// text, and the last group's unused bits must be zero (a text that does not round-trip is
/// refused, not silently changed).
#[derive(Debug, Default)]
pub struct Base64Decoder {
    /// Characters of a group not yet complete (fewer than four).
    pending: Vec<u8>,
    /// Padding has begun: only more padding and whitespace may follow.
    padded: bool,
}

impl Base64Decoder {
    /// Decodes what `text` completes, appending the bytes to `out`.
    pub fn feed(&mut self, text: &[u8], out: &mut Vec<u8>) -> std::result::Result<(), String> {
        for &c in text {
            match c {
                b' ' | b'\t' | b'\n' | b'\r' | b'\x0b' | b'\x0c' => {}
                b'=' => self.padded = true,
                _ if self.padded => {
                    return Err(format!(
                        "'{}' after the padding ('=' may only end the text)",
                        c.escape_ascii()
                    ));
                }
                _ => {
                    self.pending.push(c);
                    if self.pending.len() == 4 {
                        self.decode_pending(out)?;
                    }
                }
            }
        }
        Ok(())
    }

    /// Decodes the last, shorter group, if any.
    pub fn finish(mut self, out: &mut Vec<u8>) -> std::result::Result<(), String> {
        match self.pending.len() {
            0 => Ok(()),
            1 => Err("its length leaves one character over, which no byte decodes to".into()),
            _ => self.decode_pending(out),
        }
    }

    fn decode_pending(&mut self, out: &mut Vec<u8>) -> std::result::Result<(), String> {
        let decoded = STANDARD_NO_PAD
            .decode(&self.pending)
            .map_err(|e| e.to_string())?;
        out.extend_from_slice(&decoded);
        self.pending.clear();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::engine::general_purpose::STANDARD;

    fn whole(text: &str) -> std::result::Result<Vec<u8>, String> {
        let mut decoder = Base64Decoder::default();
        let mut out = Vec::new();
        decoder.feed(text.as_bytes(), &mut out)?;
        decoder.finish(&mut out)?;
        Ok(out)
    }

    fn in_chunks(text: &str, size: usize) -> std::result::Result<Vec<u8>, String> {
        let mut decoder = Base64Decoder::default();
        let mut out = Vec::new();
        for chunk in text.as_bytes().chunks(size) {
            decoder.feed(chunk, &mut out)?;
        }
        decoder.finish(&mut out)?;
        Ok(out)
    }

    #[test]
    fn base64_decodes_alike_whole_and_in_chunks() {
        let bytes: Vec<u8> = (0..=255u8).cycle().take(1000).collect();
        let text = STANDARD.encode(&bytes);
        let wrapped: String = text
            .as_bytes()
            .chunks(76)
            .map(|line| format!("{}\r\n", std::str::from_utf8(line).unwrap()))
            .collect();
        for form in [text.clone(), text.trim_end_matches('=').to_owned(), wrapped] {
            assert_eq!(whole(&form).unwrap(), bytes);
            for size in [1, 3, 4, 5, 7, 64] {
                assert_eq!(in_chunks(&form, size).unwrap(), bytes, "chunks of {size}");
            }
        }
        assert_eq!(whole("").unwrap(), b"");
        assert_eq!(whole("aGk=").unwrap(), b"hi");
        assert_eq!(whole("aGk").unwrap(), b"hi");
    }

    #[test]
    fn what_is_not_base64_is_refused_whole_and_in_chunks() {
        for bad in ["aGk=aGk=", "a", "aGk*", "aGl=", "aG=k"] {
            assert!(whole(bad).is_err(), "{bad}");
            assert!(in_chunks(bad, 1).is_err(), "{bad} in chunks");
        }
    }
}
