//! The command helper on its own, for embedders that do not route `__exec` through their own
//! binary, and for this crate's tests: `ferry-exec-helper __exec` is what `ferry __exec` is.

fn main() -> std::process::ExitCode {
    ferry_exec::helper::main()
}
