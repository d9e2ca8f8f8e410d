//! What an agent asks when it runs a command in its sandbox (docs/reference/execute.md): the
//! input of `execute`, defined once for the HTTP route and the MCP tool, and the rules its
//! text must keep before anything runs.

use serde::Deserialize;

/// The longest command taken, in bytes. The kernel takes at most 128 KiB in one argument
/// (`sh -c COMMAND` passes the command as one); a longer program belongs in a file the command
/// runs.
pub const MAX_COMMAND_BYTES: usize = 100_000;

/// Where a command runs when no `cwd` is given.
pub const DEFAULT_CWD: &str = "/sandbox/workspace";

/// The most a person is shown of a command's text in its event.
pub const SHOWN_COMMAND_BYTES: usize = 4096;

/// `execute`: one shell command in the thread's sandbox.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ExecuteInput {
    /// The command, run as `sh -c COMMAND` in the sandbox, e.g.
    /// `python3 -c "import pandas as pd; print(pd.read_excel('/sandbox/user_uploads/q3.xlsx'))"`.
    #[cfg_attr(feature = "openapi", schema(example = "ls -la /sandbox/user_uploads"))]
    pub command: String,
    /// Seconds it may run before it is stopped (default 120; at most the server's maximum,
    /// 900 unless configured otherwise).
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(minimum = 1, example = 120))]
    pub timeout: Option<u64>,
    /// The folder it starts in: a sandbox folder such as /sandbox/outputs, or a path relative
    /// to /sandbox/workspace (the default).
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(example = "/sandbox/workspace"))]
    pub cwd: Option<String>,
}

/// Why a command's text is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CommandError {
    #[error("command is empty: send the shell command to run")]
    Empty,
    #[error("command contains a NUL byte, which no shell command can hold")]
    Nul,
    #[error(
        "command is {0} bytes, over the {MAX_COMMAND_BYTES}-byte limit: write the program to a \
         file in /sandbox/workspace (write_file) and run that file"
    )]
    TooLong(usize),
}

/// The command's text, if it can be run.
pub fn check_command(command: &str) -> Result<&str, CommandError> {
    if command.trim().is_empty() {
        return Err(CommandError::Empty);
    }
    if command.contains('\0') {
        return Err(CommandError::Nul);
    }
    if command.len() > MAX_COMMAND_BYTES {
        return Err(CommandError::TooLong(command.len()));
    }
    Ok(command)
}

/// The command as a person is shown it in the thread: whole up to [`SHOWN_COMMAND_BYTES`],
/// else cut at a character boundary with `…`.
pub fn shown_command(command: &str) -> String {
    cut(command, SHOWN_COMMAND_BYTES)
}

/// At most `limit` bytes of `text`: whole, or its head and its tail around a line saying how
/// much was left out. Both are cut at a line's end where their half holds one, so no line is
/// shown in part.
pub fn head_and_tail(text: &str, limit: usize) -> (String, bool) {
    if text.len() <= limit {
        return (text.to_owned(), false);
    }
    let half = limit / 2;
    let head = &text[..floor_boundary(text, half)];
    let head = head.rfind('\n').map_or(head, |end| &head[..=end]);
    let tail = &text[ceil_boundary(text, text.len() - half)..];
    let tail = match tail.find('\n') {
        Some(end) if end + 1 < tail.len() => &tail[end + 1..],
        _ => tail,
    };
    let left_out = text.len() - head.len() - tail.len();
    let separator = if head.ends_with('\n') { "" } else { "\n" };
    (
        format!("{head}{separator}… {left_out} bytes left out …\n{tail}"),
        true,
    )
}

fn cut(text: &str, limit: usize) -> String {
    if text.len() <= limit {
        return text.to_owned();
    }
    format!("{}…", &text[..floor_boundary(text, limit)])
}

fn floor_boundary(text: &str, mut at: usize) -> usize {
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

fn ceil_boundary(text: &str, mut at: usize) -> usize {
    while !text.is_char_boundary(at) {
        at += 1;
    }
    at
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_that_cannot_run_are_refused_with_the_reason() {
        assert_eq!(check_command("  \n"), Err(CommandError::Empty));
        assert_eq!(check_command("echo a\0b"), Err(CommandError::Nul));
        let long = "x".repeat(MAX_COMMAND_BYTES + 1);
        assert_eq!(
            check_command(&long),
            Err(CommandError::TooLong(MAX_COMMAND_BYTES + 1))
        );
        assert_eq!(check_command("ls -la"), Ok("ls -la"));
    }

    #[test]
    fn long_text_keeps_its_head_and_tail_on_character_boundaries() {
        let text = format!("{}{}", "é".repeat(100), "z".repeat(100));
        let (shown, cut) = head_and_tail(&text, 41);
        assert!(cut);
        assert!(shown.starts_with("éé") && shown.ends_with("zz"), "{shown}");
        assert!(shown.contains("bytes left out"));
        assert_eq!(head_and_tail("short", 41), ("short".to_owned(), false));
        // Lines are kept whole where the halves hold a line's end.
        let lines: String = (0..100).map(|i| format!("line {i}\n")).collect();
        let (shown, _) = head_and_tail(&lines, 60);
        assert!(shown.starts_with("line 0\n"), "{shown}");
        assert!(shown.ends_with("line 99\n"), "{shown}");
        for line in shown.lines() {
            assert!(
                line.starts_with("line ") || line.contains("bytes left out"),
                "{shown}"
            );
        }
        let shown = shown_command(&"ü".repeat(3000));
        assert!(shown.ends_with('…') && shown.len() <= SHOWN_COMMAND_BYTES + 3);
    }
}
