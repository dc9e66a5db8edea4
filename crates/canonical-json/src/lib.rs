//! Strict JSON and the canonical byte forms that both standards hash and sign.
//!
//! Cookwala hashes and signs RFC 8785 (JCS) bytes; DWP derives its `contract_id` from the bytes
//! of Python's `json.dumps(obj, sort_keys=True, separators=(',', ':'))`. The two forms disagree on
//! key order (UTF-16 code units vs code points), on non-ASCII text (raw UTF-8 vs `\uXXXX`) and on
//! numbers (ECMAScript layout vs Python `repr`, integral floats as `16` vs `16.0`), so this crate
//! keeps one value model and two writers, and nothing else in the workspace serialises bytes that
//! get hashed.
//!
//! The main pieces:
//! - [`parse`]: a strict parser into [`Value`]. It rejects duplicate keys (serde_json would keep
//!   the last one silently), lone surrogates, trailing data, non-finite numbers, and nesting or
//!   size beyond [`Limits`]; errors carry a byte offset. Integers and floats stay apart, and
//!   integers of any size stay exact. [`parse_prefix`] reads the value at the start of a larger
//!   text ([`parse_prefix_text`] when that text is known to be UTF-8). The parser is built for speed without giving up any of that: the input is checked
//!   as UTF-8 once and strings are slices of it, plain string bytes are skipped eight at a time,
//!   one map search both finds a duplicate key and inserts, numbers are folded while scanned.
//! - [`skim`]: the parser's checks without building anything, keeping the raw text of a few
//!   top-level members (journal readers that need three fields of every line).
//! - [`to_jcs`]: RFC 8785 bytes (integers beyond ±(2^53 − 1) are refused, as upstream does).
//! - [`canonicalize`]: text straight to RFC 8785 bytes, the same result and errors as `parse`
//!   then `to_jcs` in one pass that builds no tree (for `cookwala canon` on large documents);
//!   [`canonicalize_into`] writes them into a caller's buffer (memory it prepared: huge pages).
//! - [`to_python`], [`to_python_compact`], [`to_python_pretty`]: the Python-compatible forms.
//! - [`digest`]: `sha256:<hex>` document hashes and bare-hex ids.
//!
//! Everything here is pure: no I/O, no clock.

mod parse;
mod scan;
mod value;
mod write;

pub mod digest;

pub use parse::{
    CanonicalizeError, DEFAULT_MAX_BYTES, DEFAULT_MAX_DEPTH, Limits, ParseError, ParseErrorKind,
    Wanted, canonicalize, canonicalize_into, canonicalize_into_split, parse, parse_prefix,
    parse_prefix_text, parse_with, skim, skim_prefix_text, skim_text,
};
pub use value::{BigDecimalText, Finite, Integer, Map, Number, Value};
pub use write::{
    MAX_SAFE_INTEGER, MAX_WRITE_DEPTH, PyFormat, WriteError, es_number_string, python_float_repr,
    to_jcs, to_python, to_python_compact, to_python_pretty, write_jcs, write_jcs_str,
};

#[cfg(test)]
mod tests;
