//! The command helper on its own, for embedders that do not route `__exec` through their own
//! binary, and for this crate's tests: `ferry-exec-helper __exec` is what `ferry __exec` is,
//! and `ferry-exec-helper __exec-bridge` what `ferry __exec-bridge` is.

fn main() -> std::process::ExitCode {
    if std::env::args_os()
        .nth(1)
        .is_some_and(|a| a == ferry_exec::BRIDGE_ARG)
    {
        return ferry_exec::bridge::main();
    }
    ferry_exec::helper::main()
}
