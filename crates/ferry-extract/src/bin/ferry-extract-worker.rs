//! The extraction worker as a program of its own, for this crate's tests and
//! for embedders that do not route `__extract` through their own binary.

fn main() -> std::process::ExitCode {
    ferry_extract::worker_main()
}
