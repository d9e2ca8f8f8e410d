//! The storage paths ferry gives kept files (docs/reference/uploads.md and
//! docs/reference/publish.md). Agents and UIs were built against these shapes, so they are
//! kept exactly; this module is the one place they are written or read.

/// The bucket published files are shown under.
pub const PUBLISHED_BUCKET: &str = "deepagent-outputs";

/// Where an upload is shown as stored: `chat-uploads/{owner}/{thread}/{id}_{name}`.
pub fn upload(owner: &str, thread_id: &str, upload_id: &str, name: &str) -> String {
    format!("chat-uploads/{owner}/{thread_id}/{upload_id}_{name}")
}

/// Where a published file is shown as stored: `deepagent-outputs/{thread}/{filename}`.
pub fn published(thread_id: &str, filename: &str) -> String {
    format!("{PUBLISHED_BUCKET}/{thread_id}/{filename}")
}

/// The thread of a published file's storage path, if the text has that shape.
pub fn published_thread(storage_path: &str) -> Option<&str> {
    let mut parts = storage_path.split('/');
    match (parts.next(), parts.next(), parts.next(), parts.next()) {
        (Some(PUBLISHED_BUCKET), Some(thread), Some(name), None)
            if !thread.is_empty() && !name.is_empty() =>
        {
            Some(thread)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_published_path_reads_back_its_thread() {
        let path = published("t1", "report.pdf");
        assert_eq!(path, "deepagent-outputs/t1/report.pdf");
        assert_eq!(published_thread(&path), Some("t1"));
    }

    #[test]
    fn other_shapes_name_no_thread() {
        for text in [
            "chat-uploads/t1/report.pdf",
            "deepagent-outputs/t1",
            "deepagent-outputs//report.pdf",
            "deepagent-outputs/t1/",
            "deepagent-outputs/t1/a/b.pdf",
        ] {
            assert_eq!(published_thread(text), None, "{text}");
        }
    }
}
