//! The file that takes a helper's place: a few lines of Python, our own.
//!
//! Why Python and `exec`: the skill runs helpers as `python3 <skill>/shared/<helper>.py …`, so
//! the launcher must be a Python file; `os.execv` then replaces the interpreter with `dwp`, so
//! there is no second process between the caller and `dwp`: the working directory, the
//! environment, the standard streams, signals and the exit code are `dwp`'s own.
//!
//! The `dwp` binary is named by its absolute path at install time; `DWP_BIN` in the
//! environment overrides it (a moved binary, a debug build). The skill's `addons/` folder is
//! given to `dwp` as `DWP_ADDONS_DIR` (upstream reads the addon descriptors from `<skill>/addons`;
//! a `DWP_ADDONS_DIR` already set wins). Imported as a module (some tools import a helper to
//! reuse its functions), the launcher loads the original helper from the backup folder, found
//! relative to the launcher itself so the skill folder can move.

use crate::BACKUP_DIR;

/// The first line after the shebang: how `status` and `install` recognise a launcher.
pub const MARKER: &str = "# dwp launcher: installed by `dwp skill install`";

/// The launcher's text, with `@NAME@`, `@RUNS@`, `@BIN@` and `@BACKUP@` standing for Python
/// string literals.
const TEMPLATE: &str = r#"#!/usr/bin/env python3
@MARKER@; `dwp skill remove` puts the original back.
# Run as a script: execs `dwp @RUNS_TEXT@` with these arguments. Imported: loads the original.
import os
import sys

sys.dont_write_bytecode = True
_HERE = os.path.dirname(os.path.abspath(__file__))
_SKILL = os.path.dirname(_HERE)
_ORIGINAL = os.path.join(_SKILL, @BACKUP@, 'originals', 'shared', @NAME@)

if __name__ == '__main__':
    _dwp = os.environ.get('DWP_BIN') or @BIN@
    _addons = os.path.join(_SKILL, 'addons')
    if os.path.isdir(_addons):
        os.environ.setdefault('DWP_ADDONS_DIR', _addons)
    try:
        os.execv(_dwp, [_dwp, @RUNS@] + sys.argv[1:])
    except OSError as error:
        sys.stderr.write('ERROR: cannot run dwp at %s (%s); set DWP_BIN, or run '
                         '`dwp skill remove --skill-dir %s` to restore the original helper\n'
                         % (_dwp, error, _SKILL))
        sys.exit(127)
else:
    import importlib.util
    _spec = importlib.util.spec_from_file_location(__name__, _ORIGINAL)
    _module = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(_module)
    globals().update(vars(_module))
"#;

/// The launcher text for `shared/<name>`, running `dwp <runs>` from `dwp_bin`.
pub fn launcher(name: &str, runs: &str, dwp_bin: &str) -> String {
    TEMPLATE
        .replace("@RUNS_TEXT@", runs)
        .replace("@RUNS@", &py_str(runs))
        .replace("@NAME@", &py_str(name))
        .replace("@BACKUP@", &py_str(BACKUP_DIR))
        .replace("@MARKER@", MARKER)
        // Last: the binary's path is the one value that could hold an `@…@` of its own.
        .replace("@BIN@", &py_str(dwp_bin))
}

/// Whether `bytes` are a launcher written by this crate (any version of it).
pub fn is_launcher(bytes: &[u8]) -> bool {
    bytes.len() < 64 * 1024
        && bytes.split(|b| *b == b'\n').take(3).any(|line| line.starts_with(MARKER.as_bytes()))
}

/// A Python string literal for `text` (single quotes; backslashes, quotes and control
/// characters escaped), so any path is safe inside the launcher.
fn py_str(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('\'');
    for c in text.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                out.push_str(&format!("\\x{:02x}", c as u32))
            }
            c => out.push(c),
        }
    }
    out.push('\'');
    out
}
