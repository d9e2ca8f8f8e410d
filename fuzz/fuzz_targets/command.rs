//! An agent's command text and a command's output as ferry shows them: the command's checks
//! (empty, NUL bytes, length) and the head-and-tail cut of its output, on arbitrary text.
#![no_main]

use ferry_core::execute::{MAX_COMMAND_BYTES, check_command, head_and_tail, shown_command};

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let Some((&limit, rest)) = data.split_first() else {
        return;
    };
    let Ok(text) = std::str::from_utf8(rest) else {
        return;
    };
    match check_command(text) {
        Ok(command) => {
            assert!(!command.trim().is_empty() && !command.contains('\0'));
            assert!(command.len() <= MAX_COMMAND_BYTES);
        }
        Err(e) => assert!(!e.to_string().is_empty()),
    }
    // A limit from the input, so that short texts are cut too.
    let limit = usize::from(limit) * 4 + 2;
    let (shown, cut) = head_and_tail(text, limit);
    if cut {
        assert!(shown.contains("bytes left out"));
        // Never more than the limit, but for the line saying what was left out.
        assert!(shown.len() <= limit + 64, "{} > {limit}", shown.len());
    } else {
        assert_eq!(shown, text);
    }
    let command = shown_command(text);
    assert!(command.len() <= ferry_core::execute::SHOWN_COMMAND_BYTES + '…'.len_utf8());
});
