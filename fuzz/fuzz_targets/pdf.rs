//! The pdf reader on arbitrary bytes.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| ferry_fuzz::document(data, "fuzz.pdf"));
