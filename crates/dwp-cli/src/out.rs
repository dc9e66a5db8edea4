//! Standard output that never panics on a closed pipe (`dwp … | head`): a failed write is
//! ignored. `outln!` and `out!` take `println!` / `print!` arguments.
//!
//! The `contract` and `ledger` commands keep `println!` as they always have (a closed pipe
//! there ends the process as Rust's standard output does).

/// `println!` to standard output, ignoring a failed write.
macro_rules! outln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stdout(), $($arg)*);
    }};
}

/// `print!` to standard output, ignoring a failed write.
macro_rules! out {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = write!(std::io::stdout(), $($arg)*);
    }};
}
