//! The say-mode parser (`<say>` and `<file>` tags) on arbitrary text.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let reply = ferry_core::tags::parse_say(text);
    for file in &reply.files {
        assert!(!file.path.is_empty());
        assert!(
            text.contains(file.path.as_str()),
            "a path comes from the text"
        );
    }
    for tag in ferry_core::tags::extract_tags(text, "say") {
        // Everything a tag hands out is a slice of the text it was given.
        let range = text.as_bytes().as_ptr_range();
        let content = tag.content.as_bytes().as_ptr_range();
        assert!(range.start <= content.start && content.end <= range.end);
    }
});
