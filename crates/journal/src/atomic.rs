//! Atomic whole-file replacement and directory fsync.

use std::ffi::OsString;
use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::{Error, IoContext};

/// Distinguishes temp files of concurrent replacements in one process.
static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Replaces the file at `path` with `bytes` atomically: readers see either
/// the old or the new content, and after a crash the file holds one of
/// them in full.
///
/// Writes a temp file `.<name>.tmp-<pid>-<n>` in the same directory,
/// fsyncs it, renames it over `path` and fsyncs the directory. An existing
/// target's permission bits are carried over. On failure the temp file is
/// removed and the target is untouched.
///
/// # Errors
///
/// [`Error::Io`] naming the path that failed (the target, the temp file
/// or the directory).
pub fn atomic_replace(path: impl AsRef<Path>, bytes: &[u8]) -> Result<(), Error> {
    let path = path.as_ref();
    let Some(name) = path.file_name() else {
        let source = io::Error::new(io::ErrorKind::InvalidInput, "path has no file name");
        return Err(Error::io(path, source));
    };
    let dir = parent_dir(path);
    let permissions = fs::metadata(path).ok().map(|meta| meta.permissions());
    let (tmp_path, mut file) = create_temp(dir, name)?;
    let written = file
        .write_all(bytes)
        .and_then(|()| match permissions {
            Some(permissions) => file.set_permissions(permissions),
            None => Ok(()),
        })
        .and_then(|()| file.sync_all())
        .at(&tmp_path)
        .and_then(|()| fs::rename(&tmp_path, path).at(path));
    drop(file);
    if let Err(error) = written {
        let _ = fs::remove_file(&tmp_path);
        return Err(error);
    }
    sync_dir(dir)
}

/// Creates a fresh temp file next to the target.
fn create_temp(dir: &Path, name: &std::ffi::OsStr) -> Result<(PathBuf, File), Error> {
    let pid = std::process::id();
    let mut attempts = 0;
    loop {
        let n = TEMP_COUNTER.fetch_add(1, Ordering::Relaxed);
        let mut tmp_name = OsString::from(".");
        tmp_name.push(name);
        tmp_name.push(format!(".tmp-{pid}-{n}"));
        let tmp_path = dir.join(tmp_name);
        match fs::OpenOptions::new().write(true).create_new(true).open(&tmp_path) {
            Ok(file) => return Ok((tmp_path, file)),
            // A leftover from a crashed process with a recycled pid.
            Err(error) if error.kind() == io::ErrorKind::AlreadyExists && attempts < 100 => {
                attempts += 1;
            }
            Err(error) => return Err(Error::io(tmp_path, error)),
        }
    }
}

/// The directory holding `path` (`.` for a bare file name).
pub(crate) fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    }
}

/// Fsyncs a directory so entries created, renamed or removed in it are
/// durable.
pub(crate) fn sync_dir(dir: &Path) -> Result<(), Error> {
    File::open(dir).and_then(|dir| dir.sync_all()).at(dir)
}

/// Fsyncs the directory holding `path`.
pub(crate) fn sync_parent_dir(path: &Path) -> Result<(), Error> {
    sync_dir(parent_dir(path))
}
