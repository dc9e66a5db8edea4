//! Byte scanning shared by the parser and the writers: eight bytes at a time.

/// True when one of the eight bytes of `word` is `"`, `\` or below 0x20.
///
/// The classic "has a zero byte" test: it may also flag a byte above a true hit (the borrow
/// moves up), never a word without one, which is all a skip-ahead needs.
pub(crate) fn word_has_stop(word: u64) -> bool {
    stop_mask(word) != 0
}

/// The high bits of the bytes of `word` (little-endian) that may be `"`, `\` or below 0x20:
/// the lowest set bit always marks a true one (a false flag only ever sits above a true one),
/// so `trailing_zeros() / 8` is the index of the first stop byte.
pub(crate) fn stop_mask(word: u64) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let has_zero = |x: u64| x.wrapping_sub(ONES) & !x & HIGHS;
    let quote = has_zero(word ^ (ONES * u64::from(b'"')));
    let backslash = has_zero(word ^ (ONES * u64::from(b'\\')));
    let control = word.wrapping_sub(ONES * 0x20) & !word & HIGHS;
    quote | backslash | control
}

/// `input` as text when it is all valid UTF-8 (the fast check; callers that need the offset of
/// the first invalid byte ask `std::str::from_utf8` once this says no).
pub(crate) fn utf8(input: &[u8]) -> Option<&str> {
    simdutf8::basic::from_utf8(input).ok()
}

/// Bytes that end a plain run inside a string: `"`, `\` and the control characters.
const fn string_stops() -> [bool; 256] {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 0x20 {
        table[b] = true;
        b += 1;
    }
    table[b'"' as usize] = true;
    table[b'\\' as usize] = true;
    table
}
pub(crate) static STRING_STOP: [bool; 256] = string_stops();
