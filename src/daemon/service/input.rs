//! Reading a client's document: a file descriptor (SummarizeFd) or, on the session bus only, a
//! path (SummarizePath). Either way the daemon reads a regular file with a size cap, from
//! offset 0 with `pread` (the client's file position is left alone), into memory: it never
//! maps a client's file, since a client truncating a mapped file would crash the daemon with
//! SIGBUS. Pipes, sockets and devices are refused: a writer that never closes would hold a job
//! forever. A memfd (`memfd_create`) is a regular file, so a client holding a PDF only in
//! memory can pass one. A path is looked at before it is opened (a device is never opened:
//! opening some has side effects) and is not followed if it is a symbolic link.

use super::errors::{ErrorKind, ServiceError};
use std::fs::File;
use std::os::fd::OwnedFd;
use std::os::unix::fs::{FileExt, FileTypeExt, OpenOptionsExt};
use std::path::Path;

/// A checked, not yet read, document file.
#[derive(Debug)]
pub struct DocumentFile {
    file: File,
    size: u64,
}

impl DocumentFile {
    /// Checks a descriptor passed over the bus: a regular file, open for reading, at most
    /// `max_bytes` long.
    pub fn from_fd(fd: OwnedFd, max_bytes: u64) -> Result<Self, ServiceError> {
        let file = File::from(fd);
        if let Ok(flags) = rustix::fs::fcntl_getfl(&file) {
            use rustix::fs::OFlags;
            if flags.contains(OFlags::PATH) {
                return Err(ServiceError::invalid_args("the file descriptor was opened with O_PATH and cannot be read; open the PDF for reading"));
            }
            if flags & OFlags::ACCMODE == OFlags::WRONLY {
                return Err(ServiceError::invalid_args("the file descriptor is open for writing only; open the PDF for reading"));
            }
        }
        Self::check(file, max_bytes)
    }

    /// Opens `path` for reading (session bus only: the caller is the daemon's own user).
    pub fn open_path(path: &Path, max_bytes: u64) -> Result<Self, ServiceError> {
        if !path.is_absolute() {
            return Err(ServiceError::invalid_args(format!(
                "'{}' is not an absolute path (the daemon does not share the caller's working directory)",
                path.display()
            )));
        }
        let shown = path.display().to_string();
        let before = std::fs::symlink_metadata(path).map_err(|e| open_error(&shown, &e))?;
        if before.file_type().is_symlink() {
            return Err(ServiceError::invalid_args(format!(
                "'{shown}' is a symbolic link; pass the file it points to (or its descriptor to SummarizeFd)"
            )));
        }
        if !before.file_type().is_file() {
            return Err(not_regular(before.file_type()));
        }
        // O_NOFOLLOW and the inode comparison: the path must still be the file looked at.
        // O_NONBLOCK: were it swapped for a FIFO, opening must not wait for a writer.
        let file = File::options()
            .read(true)
            .custom_flags(libc::O_NOCTTY | libc::O_NONBLOCK | libc::O_CLOEXEC | libc::O_NOFOLLOW)
            .open(path)
            .map_err(|e| open_error(&shown, &e))?;
        let after = file.metadata().map_err(|e| open_error(&shown, &e))?;
        use std::os::unix::fs::MetadataExt;
        if (after.dev(), after.ino()) != (before.dev(), before.ino()) {
            return Err(ServiceError::invalid_args(format!("'{shown}' changed while it was opened; try again")));
        }
        Self::check(file, max_bytes)
    }

    fn check(file: File, max_bytes: u64) -> Result<Self, ServiceError> {
        let meta = file.metadata().map_err(|e| ServiceError::invalid_args(format!("cannot stat the file: {e}")))?;
        if !meta.file_type().is_file() {
            return Err(not_regular(meta.file_type()));
        }
        if meta.len() > max_bytes {
            return Err(too_large(meta.len(), max_bytes));
        }
        Ok(DocumentFile { file, size: meta.len() })
    }

    pub fn size(&self) -> u64 {
        self.size
    }

    /// Reads the whole file from offset 0, at most `max_bytes` (a file that grew past the cap
    /// since it was checked is `TooLarge`).
    pub fn read_all(&self, max_bytes: u64) -> Result<Vec<u8>, ServiceError> {
        let mut buf = Vec::with_capacity(self.size.min(max_bytes) as usize);
        let mut chunk = vec![0u8; 1 << 20];
        let mut offset = 0u64;
        loop {
            let n = match self.file.read_at(&mut chunk, offset) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(ServiceError::new(ErrorKind::InvalidArgs, format!("cannot read the document: {e}"))),
            };
            offset += n as u64;
            if offset > max_bytes {
                return Err(too_large(offset, max_bytes));
            }
            buf.extend_from_slice(&chunk[..n]);
        }
        Ok(buf)
    }
}

/// A path that cannot be opened: not found and permission denied have their own error
/// names (a client can tell "fix the path" from "pass a descriptor").
fn open_error(path: &str, e: &std::io::Error) -> ServiceError {
    match e.kind() {
        std::io::ErrorKind::NotFound => ServiceError::new(ErrorKind::FileNotFound, format!("cannot open '{path}': no such file")),
        std::io::ErrorKind::PermissionDenied => ServiceError::new(
            ErrorKind::PermissionDenied,
            format!("cannot open '{path}': permission denied to the daemon's user; pass the file's descriptor to SummarizeFd"),
        ),
        _ if e.raw_os_error() == Some(libc::ELOOP) => ServiceError::invalid_args(format!("cannot open '{path}': it is a symbolic link")),
        _ => ServiceError::invalid_args(format!("cannot open '{path}': {e}")),
    }
}

fn not_regular(ft: std::fs::FileType) -> ServiceError {
    let what = if ft.is_fifo() {
        "a pipe"
    } else if ft.is_socket() {
        "a socket"
    } else if ft.is_dir() {
        "a directory"
    } else if ft.is_char_device() || ft.is_block_device() {
        "a device"
    } else if ft.is_symlink() {
        "a symbolic link"
    } else {
        "another kind of file (an eventfd, a timer, an anonymous inode)"
    };
    ServiceError::invalid_args(format!("the document must be a regular file (or a memfd), not {what}"))
}

fn too_large(size: u64, max: u64) -> ServiceError {
    ServiceError::new(
        ErrorKind::TooLarge,
        format!("the document has {size} bytes; this daemon accepts at most {max} ([service] max_pdf_bytes)"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn regular_files_are_read_from_offset_zero() {
        let mut f = tempfile::tempfile().unwrap();
        f.write_all(b"%PDF-1.4 hello").unwrap();
        // The client's position is at the end; pread ignores it.
        let doc = DocumentFile::from_fd(OwnedFd::from(f), 100).unwrap();
        assert_eq!(doc.read_all(100).unwrap(), b"%PDF-1.4 hello");
    }

    #[test]
    fn size_cap_and_file_kinds() {
        let mut f = tempfile::tempfile().unwrap();
        f.write_all(&[0u8; 200]).unwrap();
        let e = DocumentFile::from_fd(OwnedFd::from(f), 100).unwrap_err();
        assert_eq!(e.kind, ErrorKind::TooLarge);
        let (a, _b) = std::os::unix::net::UnixStream::pair().unwrap();
        let e = DocumentFile::from_fd(OwnedFd::from(a), 100).unwrap_err();
        assert_eq!(e.kind, ErrorKind::InvalidArgs);
        assert!(e.message.contains("socket"), "{}", e.message);
        let e = DocumentFile::open_path(Path::new("relative.pdf"), 100).unwrap_err();
        assert_eq!(e.kind, ErrorKind::InvalidArgs);
        let e = DocumentFile::open_path(Path::new("/"), 100).unwrap_err();
        assert!(e.message.contains("directory"), "{}", e.message);
    }

    #[test]
    fn o_path_eventfd_symlinks_and_devices_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.pdf");
        std::fs::write(&p, b"%PDF").unwrap();
        let f = File::options().read(true).custom_flags(libc::O_PATH).open(&p).unwrap();
        let e = DocumentFile::from_fd(OwnedFd::from(f), 100).unwrap_err();
        assert!(e.message.contains("O_PATH"), "{}", e.message);
        // SAFETY: eventfd creates a new descriptor, owned right away.
        let efd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC) };
        assert!(efd >= 0);
        let efd = unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(efd) };
        let e = DocumentFile::from_fd(efd, 100).unwrap_err();
        assert!(!e.message.contains("not not"), "{}", e.message);
        assert!(e.message.contains("eventfd"), "{}", e.message);
        let link = dir.path().join("link.pdf");
        std::os::unix::fs::symlink(&p, &link).unwrap();
        let e = DocumentFile::open_path(&link, 100).unwrap_err();
        assert!(e.message.contains("symbolic link"), "{}", e.message);
        let e = DocumentFile::open_path(Path::new("/dev/null"), 100).unwrap_err();
        assert!(e.message.contains("device"), "{}", e.message);
        let e = DocumentFile::open_path(&dir.path().join("missing.pdf"), 100).unwrap_err();
        assert!(e.message.contains("no such file"), "{}", e.message);
        assert!(DocumentFile::open_path(&p, 100).is_ok());
    }

    #[test]
    fn write_only_descriptors_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.pdf");
        std::fs::write(&p, b"x").unwrap();
        let f = File::options().write(true).open(&p).unwrap();
        assert_eq!(DocumentFile::from_fd(OwnedFd::from(f), 100).unwrap_err().kind, ErrorKind::InvalidArgs);
    }
}
