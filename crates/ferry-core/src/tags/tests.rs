//! The tests of `tags`.

use super::*;
use proptest::prelude::*;

fn contents<'a>(text: &'a str, tag: &str) -> Vec<&'a str> {
    extract_tags(text, tag).iter().map(|t| t.content).collect()
}

fn attrs<'a>(tag: &Tag<'a>) -> Vec<(&'a str, &'a str)> {
    tag.attrs.iter().map(|a| (a.name, a.value)).collect()
}

#[test]
fn basic_extraction() {
    let tags = extract_tags("before <say>hello</say> after", "say");
    assert_eq!(tags.len(), 1);
    assert_eq!(tags[0].content, "hello");
    assert!(tags[0].attrs.is_empty());
    assert_eq!(tags[0].span, 7..23);
    assert_eq!(tags[0].content_span, 12..17);
}

#[test]
fn several_tags_in_order() {
    assert_eq!(
        contents("<say>one</say> x <say>two</say><say>three</say>", "say"),
        ["one", "two", "three"]
    );
}

#[test]
fn no_matches() {
    assert!(extract_tags("", "say").is_empty());
    assert!(extract_tags("plain text, no tags", "say").is_empty());
    assert!(extract_tags("<file>x</file>", "say").is_empty());
    assert!(extract_tags("<say>x</say>", "").is_empty());
}

#[test]
fn mixed_content_keeps_other_markup_verbatim() {
    let text = "intro <b>bold</b> <say>use <code>x < y</code> &amp; more</say> outro";
    assert_eq!(contents(text, "say"), ["use <code>x < y</code> &amp; more"]);
}

#[test]
fn content_is_verbatim_untrimmed_and_may_span_lines() {
    assert_eq!(
        contents("<say>\n  line one\n  line two\n</say>", "say"),
        ["\n  line one\n  line two\n"]
    );
    assert_eq!(contents("<say></say>", "say"), [""]);
}

#[test]
fn quoted_attributes_of_both_kinds() {
    let tags = extract_tags(
        r#"<file mode="doc" Title='Q3 "final"'>/a.pdf</file>"#,
        "file",
    );
    assert_eq!(tags.len(), 1);
    assert_eq!(
        attrs(&tags[0]),
        [("mode", "doc"), ("Title", "Q3 \"final\"")]
    );
    assert_eq!(tags[0].attr("MODE"), Some("doc"));
    assert_eq!(tags[0].attr("title"), Some("Q3 \"final\""));
    assert_eq!(tags[0].attr("missing"), None);
    assert_eq!(tags[0].content, "/a.pdf");
}

#[test]
fn whitespace_around_equals_and_between_attributes() {
    let text = "<file\n  a = \"1\"\tb\n=\n'2'   c=\"3\"  >x</file>";
    let tags = extract_tags(text, "file");
    assert_eq!(attrs(&tags[0]), [("a", "1"), ("b", "2"), ("c", "3")]);
    assert_eq!(tags[0].content, "x");
}

#[test]
fn unquoted_and_bare_attributes() {
    let tags = extract_tags("<file mode=doc hidden x=1>p</file>", "file");
    assert_eq!(
        attrs(&tags[0]),
        [("mode", "doc"), ("hidden", ""), ("x", "1")]
    );
    let tags = extract_tags("<file mode=>p</file>", "file");
    assert_eq!(attrs(&tags[0]), [("mode", "")]);
}

#[test]
fn empty_values_are_slices_of_the_text() {
    // Found by the property test below: a bare attribute's value was a static "".
    for text in ["<say say></say>", "<say a=></say>"] {
        let tags = extract_tags(text, "say");
        let value = tags[0].attrs[0].value;
        let offset = value.as_ptr() as usize - text.as_ptr() as usize;
        assert!(
            offset <= text.len(),
            "{text}: the value lies outside the text"
        );
    }
}

#[test]
fn first_of_repeated_attributes_wins() {
    let tags = extract_tags(r#"<file mode="photo" MODE="doc">p</file>"#, "file");
    assert_eq!(tags[0].attr("mode"), Some("photo"));
    assert_eq!(tags[0].attrs.len(), 2);
}

#[test]
fn greater_than_inside_quotes_does_not_end_the_tag() {
    let tags = extract_tags(r#"<file note="a > b" other='>'>/x.md</file>"#, "file");
    assert_eq!(tags.len(), 1);
    assert_eq!(attrs(&tags[0]), [("note", "a > b"), ("other", ">")]);
    assert_eq!(tags[0].content, "/x.md");
}

#[test]
fn less_than_inside_an_opening_tag_means_it_was_not_a_tag() {
    // `<` is not allowed in an attribute value; the candidate is dropped and scanning resumes
    // at that `<`, which here starts a stray closing tag that has nothing to close.
    assert!(extract_tags(r#"<file title="</file>">x</file>"#, "file").is_empty());
    // A later well-formed element is still found.
    assert_eq!(
        contents(r#"<file a="<">x</file><file>y</file>"#, "file"),
        ["y"]
    );
}

#[test]
fn stray_quoted_strings_and_slashes_are_skipped() {
    let tags = extract_tags(r#"<file "junk>" / = mode="doc">p</file>"#, "file");
    assert_eq!(attrs(&tags[0]), [("mode", "doc")]);
    assert_eq!(tags[0].content, "p");
}

#[test]
fn tag_names_are_case_insensitive() {
    assert_eq!(contents("<SAY>a</say><Say>b</SAY>", "say"), ["a", "b"]);
    assert_eq!(contents("<say>c</say>", "SAY"), ["c"]);
}

#[test]
fn a_longer_name_is_another_tag() {
    assert!(extract_tags("<sayings>a</sayings>", "say").is_empty());
    assert!(extract_tags("<say-more>a</say-more>", "say").is_empty());
    assert!(extract_tags("<filename>a</filename>", "file").is_empty());
    // `</sayings>` does not close a `say` either.
    assert_eq!(contents("<say>a</sayings>b</say>", "say"), ["a</sayings>b"]);
}

#[test]
fn tags_split_across_lines() {
    let text = "<say\n  tone=\"warm\"\n>first\nsecond</say\n>";
    let tags = extract_tags(text, "say");
    assert_eq!(tags.len(), 1);
    assert_eq!(tags[0].content, "first\nsecond");
    assert_eq!(tags[0].attr("tone"), Some("warm"));
    assert_eq!(tags[0].span, 0..text.len());
}

#[test]
fn unclosed_tags_yield_nothing_and_scanning_continues() {
    assert!(extract_tags("<say>never closed", "say").is_empty());
    assert!(extract_tags("<say mode=\"x\" never closed", "say").is_empty());
    assert!(extract_tags("<say mode=\"unterminated>x</say>", "say").is_empty());
    assert_eq!(contents("<say>lost <say>kept</say>", "say"), ["kept"]);
    assert_eq!(contents("<say x=\"oops>a <say>b</say>", "say"), ["b"]);
    assert_eq!(contents("</say><say>a</say></say>", "say"), ["a"]);
}

#[test]
fn nested_same_name_tags_yield_the_innermost_element() {
    let tags = extract_tags("<say>a<say>b</say>c</say>", "say");
    assert_eq!(tags.len(), 1);
    assert_eq!(tags[0].content, "b");
    assert_eq!(tags[0].span, 6..18);
    // Siblings after a nested mistake are unaffected.
    assert_eq!(
        contents("<say>a<say>b</say>c</say><say>d</say>", "say"),
        ["b", "d"]
    );
}

#[test]
fn self_closing_tags_have_no_content() {
    assert!(extract_tags("<file/>", "file").is_empty());
    assert!(extract_tags("<file mode=\"doc\" />", "file").is_empty());
    assert!(extract_tags("<file mode=doc/>", "file").is_empty());
    assert_eq!(contents("<file/><file>/a.md</file>", "file"), ["/a.md"]);
    // A self-closing tag neither opens nor closes an element around it.
    assert_eq!(contents("<say>a<say/>b</say>", "say"), ["a<say/>b"]);
}

#[test]
fn malformed_closing_tags_are_text() {
    assert!(extract_tags("<say>a</say x>", "say").is_empty());
    assert!(extract_tags("<say>a< /say>", "say").is_empty());
    assert_eq!(contents("<say>a</say   >", "say"), ["a"]);
}

#[test]
fn non_ascii_text_around_and_inside_tags() {
    let text = "héllo <say dïa='ünï'>文件 ✓</say> ünïcødé";
    let tags = extract_tags(text, "say");
    assert_eq!(tags[0].content, "文件 ✓");
    assert_eq!(attrs(&tags[0]), [("dïa", "ünï")]);
}

#[test]
fn many_unclosed_openers_are_handled_in_one_pass() {
    let n = 100_000;
    assert!(extract_tags(&"<say>".repeat(n), "say").is_empty());
    let closed_once = format!("{}x</say>", "<say>".repeat(n));
    assert_eq!(contents(&closed_once, "say"), ["x"]);
    // Unterminated quotes, endless openers and dangling closers are the other ways a naive
    // scanner rescans the rest of the text from every `<`.
    assert!(extract_tags(&"<say x=\"".repeat(n), "say").is_empty());
    assert!(extract_tags(&"<say x='>".repeat(n), "say").is_empty());
    assert!(extract_tags(&"<say a b c ".repeat(n), "say").is_empty());
    assert!(extract_tags(&"</say".repeat(n), "say").is_empty());
    let spaces = format!("<say{}", " ".repeat(n));
    assert!(extract_tags(&spaces.repeat(20), "say").is_empty());
    let pairs = "<say>a</say>".repeat(n);
    assert_eq!(extract_tags(&pairs, "say").len(), n);
}

#[test]
fn send_as_modes() {
    assert_eq!(SendAs::from_mode(None), SendAs::Auto);
    assert_eq!(SendAs::from_mode(Some("doc")), SendAs::Document);
    assert_eq!(SendAs::from_mode(Some("DOC")), SendAs::Document);
    assert_eq!(SendAs::from_mode(Some(" Photo ")), SendAs::Photo);
    assert_eq!(SendAs::from_mode(Some("video")), SendAs::Video);
    assert_eq!(SendAs::from_mode(Some("document")), SendAs::Auto);
    assert_eq!(SendAs::from_mode(Some("")), SendAs::Auto);
    assert_eq!(SendAs::from_mode(Some("gif")), SendAs::Auto);
}

#[test]
fn send_as_serializes_lowercase() {
    for mode in [SendAs::Auto, SendAs::Document, SendAs::Photo, SendAs::Video] {
        let json = serde_json::to_string(&mode).unwrap();
        assert_eq!(json, format!("\"{}\"", mode.as_str()));
        assert_eq!(serde_json::from_str::<SendAs>(&json).unwrap(), mode);
    }
}

#[test]
fn send_as_resolves_auto_by_mime() {
    assert_eq!(SendAs::Auto.resolve("image/png"), SendAs::Photo);
    assert_eq!(SendAs::Auto.resolve("IMAGE/JPEG"), SendAs::Photo);
    assert_eq!(SendAs::Auto.resolve("video/mp4"), SendAs::Video);
    assert_eq!(SendAs::Auto.resolve("application/pdf"), SendAs::Document);
    assert_eq!(
        SendAs::Auto.resolve("text/markdown; charset=utf-8"),
        SendAs::Document
    );
    assert_eq!(SendAs::Auto.resolve("image/svg+xml"), SendAs::Photo);
    assert_eq!(SendAs::Auto.resolve(""), SendAs::Document);
    assert_eq!(SendAs::Auto.resolve("image"), SendAs::Document);
    // Explicit modes are kept whatever the MIME type says.
    assert_eq!(SendAs::Document.resolve("image/png"), SendAs::Document);
    assert_eq!(SendAs::Photo.resolve("application/pdf"), SendAs::Photo);
    assert_eq!(SendAs::Video.resolve("text/plain"), SendAs::Video);
}

#[test]
fn parse_say_seed_example() {
    let reply = parse_say(
        r#"<say>Here is the report</say><file mode="doc">/sandbox/outputs/report.pdf</file>"#,
    );
    assert_eq!(reply.says, ["Here is the report"]);
    assert_eq!(
        reply.files,
        [FileTag {
            path: "/sandbox/outputs/report.pdf".to_owned(),
            mode: SendAs::Document,
        }]
    );
    let json = serde_json::to_value(&reply).unwrap();
    assert_eq!(
        json,
        serde_json::json!({
            "says": ["Here is the report"],
            "files": [{ "path": "/sandbox/outputs/report.pdf", "mode": "document" }],
        })
    );
}

#[test]
fn parse_say_orders_blocks_and_files() {
    let text = "thinking...\n<say>\n  First.\n</say>\nmore thinking\n\
                    <file>/sandbox/outputs/a.png</file>\n<say>Second.</say>\n\
                    <FILE Mode='VIDEO'> /sandbox/outputs/b.mp4 </FILE>\n\
                    <file mode=\"photo\">/sandbox/outputs/c.jpg</file>\n\
                    <file mode=\"weird\">/sandbox/outputs/d.txt</file>";
    let reply = parse_say(text);
    assert_eq!(reply.says, ["First.", "Second."]);
    let files: Vec<(&str, SendAs)> = reply
        .files
        .iter()
        .map(|f| (f.path.as_str(), f.mode))
        .collect();
    assert_eq!(
        files,
        [
            ("/sandbox/outputs/a.png", SendAs::Auto),
            ("/sandbox/outputs/b.mp4", SendAs::Video),
            ("/sandbox/outputs/c.jpg", SendAs::Photo),
            ("/sandbox/outputs/d.txt", SendAs::Auto),
        ]
    );
}

#[test]
fn parse_say_takes_files_from_inside_say_blocks_and_removes_their_markup() {
    let reply = parse_say(
        "<say>Here you go: <file mode=\"doc\">/sandbox/outputs/r.pdf</file> enjoy</say>\
             <say><file>/sandbox/outputs/only.png</file></say>",
    );
    assert_eq!(reply.says, ["Here you go:  enjoy"]);
    assert_eq!(reply.files.len(), 2);
    assert_eq!(reply.files[0].path, "/sandbox/outputs/r.pdf");
    assert_eq!(reply.files[0].mode, SendAs::Document);
    assert_eq!(reply.files[1].path, "/sandbox/outputs/only.png");
}

#[test]
fn parse_say_keeps_a_file_element_that_straddles_a_block() {
    let reply = parse_say("<say>a <file>/x.md</say> b</file>");
    assert_eq!(reply.says, ["a <file>/x.md"]);
    assert_eq!(reply.files.len(), 1);
    assert_eq!(reply.files[0].path, "/x.md</say> b");
}

#[test]
fn parse_say_drops_empty_paths_and_empty_blocks() {
    let reply =
        parse_say("<say>   </say><file>  </file><file/><file mode=\"doc\"></file><say>hi</say>");
    assert_eq!(reply.says, ["hi"]);
    assert!(reply.files.is_empty());
    assert_eq!(parse_say("no tags at all"), SayReply::default());
}

#[test]
fn parse_say_files_without_say_blocks() {
    let reply = parse_say("<file>/sandbox/outputs/a.csv</file>");
    assert!(reply.says.is_empty());
    assert_eq!(reply.files[0].path, "/sandbox/outputs/a.csv");
}

/// Text made mostly of the characters that matter to the scanner, so that random cases hit
/// real tags, near misses and malformed markup far more often than plain random strings do.
fn markup_soup() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        Just("<".to_owned()),
        Just(">".to_owned()),
        Just("/".to_owned()),
        Just("\"".to_owned()),
        Just("'".to_owned()),
        Just("=".to_owned()),
        Just(" ".to_owned()),
        Just("\n".to_owned()),
        Just("say".to_owned()),
        Just("SAY".to_owned()),
        Just("file".to_owned()),
        Just("mode".to_owned()),
        Just("<say>".to_owned()),
        Just("</say>".to_owned()),
        Just("<file mode=\"doc\">".to_owned()),
        Just("</file>".to_owned()),
        Just("é".to_owned()),
        "[a-z文]{1,3}",
        any::<char>().prop_map(String::from),
    ];
    proptest::collection::vec(piece, 0..60).prop_map(|pieces| pieces.concat())
}

fn check_invariants(text: &str, tag: &str) {
    let base = text.as_ptr() as usize;
    let within = |s: &str| {
        let start = s.as_ptr() as usize - base;
        text.get(start..start + s.len()) == Some(s)
    };
    let mut previous_end = 0;
    for found in extract_tags(text, tag) {
        assert_eq!(&text[found.content_span.clone()], found.content);
        assert!(within(found.content));
        assert!(found.span.start >= previous_end, "elements overlap");
        assert!(found.span.start < found.content_span.start);
        assert!(found.content_span.end < found.span.end);
        previous_end = found.span.end;
        let element = &text[found.span.clone()];
        assert!(element.starts_with('<') && element.ends_with('>'));
        for attr in &found.attrs {
            assert!(within(attr.name) && within(attr.value));
            assert!(!attr.name.is_empty());
        }
    }
}

proptest! {
    #[test]
    fn never_panics_and_content_is_a_substring(text in markup_soup()) {
        check_invariants(&text, "say");
        check_invariants(&text, "file");
        let reply = parse_say(&text);
        for say in &reply.says {
            prop_assert!(!say.is_empty());
        }
        for file in &reply.files {
            prop_assert!(text.contains(file.path.as_str()));
            prop_assert!(!file.path.is_empty());
        }
    }

    #[test]
    fn arbitrary_strings_never_panic(text in any::<String>(), tag in "[a-zA-Z]{0,4}") {
        check_invariants(&text, &tag);
        let _ = parse_say(&text);
    }
}
