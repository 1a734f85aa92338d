#![no_main]
// Placeholder until the target is written: it exercises nothing yet.
libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = data;
});
