//! A multipart upload body, as the upload route reads it: every part's name and file name,
//! the file name made into an upload name, and the part's bytes.
#![no_main]

use bytes::Bytes;

const BOUNDARY: &str = "ferry-fuzz-boundary";

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let body = Bytes::copy_from_slice(data);
    let stream = futures::stream::once(async move { Ok::<_, std::io::Error>(body) });
    let mut multipart = multer::Multipart::new(stream, BOUNDARY);
    futures::executor::block_on(async {
        while let Ok(Some(mut field)) = multipart.next_field().await {
            let _ = field.name();
            if let Some(raw) = field.file_name()
                && let Ok(name) = ferry_core::path::upload_file_name(raw)
            {
                assert!(!name.as_str().contains(['/', '\\']));
            }
            while let Ok(Some(_chunk)) = field.chunk().await {}
        }
    });
});
