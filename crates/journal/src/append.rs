//! Durable appends to plain side files.

use std::fs::{self, File};
use std::io::{self, Write};
use std::path::Path;

use crate::atomic::sync_parent_dir;
use crate::error::{Error, IoContext};

/// Appends `bytes` to the file at `path` with one write on an append-mode
/// handle and returns once they are durable (`fdatasync`). When this call
/// creates the file, its directory is fsynced too, so the name survives a
/// crash.
///
/// Unlike [`Journal::append`](crate::Journal::append) there is no lock, no
/// scan and no position check: this is for side files such as a reuse
/// cache, whose readers skip lines they cannot parse.
///
/// # Errors
///
/// [`Error::Io`] naming the file (or its directory) if opening, writing or
/// syncing fails.
pub fn append_synced(path: impl AsRef<Path>, bytes: &[u8]) -> Result<(), Error> {
    let path = path.as_ref();
    let (mut file, created) = open_append(path).at(path)?;
    file.write_all(bytes).at(path)?;
    file.sync_data().at(path)?;
    if created {
        sync_parent_dir(path)?;
    }
    Ok(())
}

/// Opens `path` for appending, creating it if needed; says whether this
/// call created it.
fn open_append(path: &Path) -> io::Result<(File, bool)> {
    match fs::OpenOptions::new().append(true).open(path) {
        Ok(file) => Ok((file, false)),
        Err(error) if error.kind() == io::ErrorKind::NotFound => {
            match fs::OpenOptions::new().append(true).create_new(true).open(path) {
                Ok(file) => Ok((file, true)),
                // Created by someone else in between: theirs to make durable.
                Err(error) if error.kind() == io::ErrorKind::AlreadyExists => {
                    Ok((fs::OpenOptions::new().append(true).open(path)?, false))
                }
                Err(error) => Err(error),
            }
        }
        Err(error) => Err(error),
    }
}
