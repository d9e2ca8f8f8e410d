//! The space tools (docs/mcp.md): list, read, write and delete the user's space files, each one
//! request to the spaces routes. Bytes travel base64 where JSON cannot carry them.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use bytes::Bytes;
use ferry_core::agent_files::bare_etag;
use ferry_core::conditions::quoted_etag;
use ferry_core::error_code::ErrorCode;
use http::header::{CONTENT_TYPE, IF_MATCH, IF_NONE_MATCH};
use http::{HeaderMap, HeaderValue, Method};
use serde_json::{Value, json};

use crate::caller::{Caller, encode, encode_path};
use crate::handler::FerryMcp;
use crate::outcome::{Outcome, answer, envelope, parse, structured};
use crate::tools;

impl FerryMcp {
    pub(crate) async fn list_space_files(&self, caller: &Caller, arguments: Value) -> Outcome {
        let args: tools::ListSpaceArgs = parse(tools::LIST_SPACE_FILES, arguments)?;
        let mut path = format!(
            "/api/spaces/{}/files?recursive={}",
            encode(&args.space_name),
            args.recursive
        );
        if let Some(dir) = &args.dir {
            path.push_str("&dir=");
            path.push_str(&encode(dir));
        }
        Ok(answer(self.client.get(caller, path).await?))
    }

    pub(crate) async fn read_space_file(&self, caller: &Caller, arguments: Value) -> Outcome {
        let args: tools::ReadSpaceArgs = parse(tools::READ_SPACE_FILE, arguments)?;
        let response = self
            .client
            .get(
                caller,
                format!(
                    "/api/spaces/{}/files/{}",
                    encode(&args.space_name),
                    encode_path(&args.path)
                ),
            )
            .await?;
        if !response.status.is_success() {
            return Ok(answer(response));
        }
        let content_type = response
            .headers
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("application/octet-stream");
        // Bytes go back base64-encoded (docs/mcp.md), so any file survives JSON.
        Ok(structured(json!({
            "contentBase64": STANDARD.encode(&response.body),
            "contentType": content_type,
            "size": response.body.len(),
        })))
    }

    pub(crate) async fn write_space_file(&self, caller: &Caller, arguments: Value) -> Outcome {
        let args: tools::WriteSpaceArgs = parse(tools::WRITE_SPACE_FILE, arguments)?;
        // As write_file: `encoding` says how the content is carried. Without it, text types
        // carry their text and every other type base64; a missing or unreadable type is sent as
        // text, so the server's own answer (415) comes back.
        let textual = match args.encoding {
            Some(encoding) => encoding == ferry_core::agent_files::Encoding::Utf8,
            None => tools::is_text_type(&args.content_type) || !args.content_type.contains('/'),
        };
        let body = if textual {
            Bytes::from(args.content.into_bytes())
        } else {
            let cleaned: String = args
                .content
                .chars()
                .filter(|c| !c.is_ascii_whitespace())
                .collect();
            Bytes::from(STANDARD.decode(cleaned.as_bytes()).map_err(|e| {
                let message = if args.encoding.is_some() {
                    format!("content is not valid base64: {e}")
                } else {
                    format!(
                        "content must be base64 for the content type '{}' ({e}); send text only \
                         for text types (text/*, JSON, XML, JavaScript, SVG), or say \
                         encoding: \"utf-8\"",
                        args.content_type
                    )
                };
                envelope(ErrorCode::InvalidRequest, message)
            })?)
        };
        let mut headers = HeaderMap::new();
        if !args.content_type.is_empty() {
            let value = HeaderValue::try_from(args.content_type.as_str()).map_err(|_| {
                envelope(
                    ErrorCode::UnsupportedMediaType,
                    format!(
                        "'{}' cannot be sent as a Content-Type header: use a media type such as text/markdown; charset=utf-8",
                        args.content_type
                    ),
                )
            })?;
            headers.insert(CONTENT_TYPE, value);
        }
        if args.if_none_match == Some(tools::AnyEtag::Any) {
            headers.insert(IF_NONE_MATCH, HeaderValue::from_static("*"));
        }
        let response = self
            .client
            .exchange(
                caller,
                Method::PUT,
                format!(
                    "/api/spaces/{}/files/{}",
                    encode(&args.space_name),
                    encode_path(&args.path)
                ),
                headers,
                body,
            )
            .await?;
        Ok(answer(response))
    }

    pub(crate) async fn delete_space_file(&self, caller: &Caller, arguments: Value) -> Outcome {
        let args: tools::DeleteSpaceArgs = parse(tools::DELETE_SPACE_FILE, arguments)?;
        let mut headers = HeaderMap::new();
        if let Some(tag) = &args.if_match {
            // The etag as listings show it, quoted or not.
            let quoted = if tag == "*" {
                tag.clone()
            } else {
                quoted_etag(bare_etag(tag))
            };
            let value = HeaderValue::try_from(quoted).map_err(|_| {
                envelope(
                    ErrorCode::InvalidRequest,
                    "ifMatch must be an etag such as \"3a7b…\"",
                )
            })?;
            headers.insert(IF_MATCH, value);
        }
        let response = self
            .client
            .exchange(
                caller,
                Method::DELETE,
                format!(
                    "/api/spaces/{}/files/{}",
                    encode(&args.space_name),
                    encode_path(&args.path)
                ),
                headers,
                Bytes::new(),
            )
            .await?;
        if !response.status.is_success() {
            return Ok(answer(response));
        }
        Ok(structured(json!({ "path": args.path, "deleted": true })))
    }
}
