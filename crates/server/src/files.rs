//! Static files as the server sends them: read once and shared by every response that
//! sends the same file while any of them is still being sent, then dropped. A
//! connection holds one chunk of a file at a time (see [`crate::routes::Pattern`]), so
//! twenty clients that never read a 100 MB file cost the server the file once, not
//! twenty copies of it in their output buffers.
//!
//! A file is known by its path, length and modification time: a file replaced on disk
//! is read again for the next request, while responses under way finish the bytes they
//! began with.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::SystemTime;

use crate::routes::MAX_FILE;

/// Why a file cannot be sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileError {
    /// Not there, not a regular file, or not readable.
    Missing,
    /// Longer than [`MAX_FILE`].
    TooLarge,
}

/// A file's length and modification time.
type Key = (u64, Option<SystemTime>);

/// Every file being sent, by path.
type Shared = Mutex<HashMap<PathBuf, (Key, Weak<[u8]>)>>;

fn shared() -> &'static Shared {
    static FILES: OnceLock<Shared> = OnceLock::new();
    FILES.get_or_init(Default::default)
}

/// The bytes of the file at `path`, shared with every response sending it now.
pub fn get(path: &Path) -> Result<Arc<[u8]>, FileError> {
    let meta = std::fs::metadata(path).map_err(|_| FileError::Missing)?;
    if !meta.is_file() {
        return Err(FileError::Missing);
    }
    if meta.len() > MAX_FILE {
        return Err(FileError::TooLarge);
    }
    let key: Key = (meta.len(), meta.modified().ok());
    let lock = || shared().lock().unwrap_or_else(|e| e.into_inner());
    if let Some((k, w)) = lock().get(path) {
        if *k == key {
            if let Some(bytes) = w.upgrade() {
                return Ok(bytes);
            }
        }
    }
    // Read outside the lock: other loops keep serving meanwhile.
    let bytes: Arc<[u8]> = std::fs::read(path).map_err(|_| FileError::Missing)?.into();
    if bytes.len() as u64 > MAX_FILE {
        return Err(FileError::TooLarge);
    }
    let mut map = lock();
    if map.len() >= 1024 {
        map.retain(|_, (_, w)| w.strong_count() > 0);
    }
    map.insert(path.to_path_buf(), (key, Arc::downgrade(&bytes)));
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_read_once_while_it_is_being_sent_and_again_once_replaced() {
        let dir = std::env::temp_dir().join(format!("stampede-files-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("a.txt");
        std::fs::write(&f, b"one").unwrap();
        let a = get(&f).unwrap();
        let b = get(&f).unwrap();
        assert!(Arc::ptr_eq(&a, &b), "shared while held");
        std::fs::write(&f, b"second").unwrap();
        assert_eq!(&*get(&f).unwrap(), b"second");
        assert_eq!(&*a, b"one", "a response under way keeps its bytes");
        assert_eq!(get(&dir.join("none")), Err(FileError::Missing));
        assert_eq!(get(&dir), Err(FileError::Missing));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
