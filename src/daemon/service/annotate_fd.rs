//! The `annotate_fd` option: a descriptor the client passes (a pipe's write end, or a file open
//! for writing) into which the job writes the annotated copy of its PDF
//! ([`crate::summarize::annotate`]) before it ends, so that a reader plugin gets the same
//! bytes as `seqgpt summarize --annotate` without the daemon opening any file of its own.
//!
//! Only a pipe or a regular file open for writing is taken (not a socket, a terminal or a
//! device: nothing whose writes could mean more than bytes). Writes never block the job for
//! long: a pipe whose reader does not read within [`WRITE_TIMEOUT`] ends the copy with a
//! warning in the summary's stats, and the job ends as it would have.

use super::errors::ServiceError;
use rustix::fs::{FileType, OFlags};
use std::os::fd::{AsFd, OwnedFd};
use std::sync::Arc;
use std::time::{Duration, Instant};
use zbus::zvariant::Value;

/// How long the copy may take to go out, all writes together.
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(60);

/// A checked `annotate_fd`: the daemon's own copy of the client's descriptor.
#[derive(Debug, Clone)]
pub struct AnnotateTarget(Arc<OwnedFd>);

impl PartialEq for AnnotateTarget {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for AnnotateTarget {}

impl AnnotateTarget {
    /// The option's value: a descriptor (`h`) of a pipe or regular file open for writing.
    pub fn parse(value: &Value<'_>) -> Result<AnnotateTarget, ServiceError> {
        let Value::Fd(fd) = value else {
            return Err(ServiceError::invalid_args(format!("annotate_fd: expected a file descriptor (h), got {}", value.value_signature())));
        };
        let fd = fd.as_fd().try_clone_to_owned().map_err(|e| ServiceError::invalid_args(format!("annotate_fd: {e}")))?;
        let stat = rustix::fs::fstat(&fd).map_err(|e| ServiceError::invalid_args(format!("annotate_fd: {e}")))?;
        match FileType::from_raw_mode(stat.st_mode) {
            FileType::Fifo | FileType::RegularFile => {}
            other => return Err(ServiceError::invalid_args(format!("annotate_fd: expected a pipe or a regular file, got {other:?}"))),
        }
        let flags = rustix::fs::fcntl_getfl(&fd).map_err(|e| ServiceError::invalid_args(format!("annotate_fd: {e}")))?;
        let access = flags & (OFlags::RDONLY | OFlags::WRONLY | OFlags::RDWR);
        if access != OFlags::WRONLY && access != OFlags::RDWR {
            return Err(ServiceError::invalid_args("annotate_fd: the descriptor is not open for writing"));
        }
        Ok(AnnotateTarget(Arc::new(fd)))
    }

    /// The descriptor, for a client that sends it.
    pub fn as_value(&self) -> Option<Value<'static>> {
        let fd = self.0.as_fd().try_clone_to_owned().ok()?;
        Some(Value::Fd(zbus::zvariant::Fd::from(fd)))
    }

    /// Writes `bytes` within `timeout` (blocking: run it on a blocking thread), then lets go
    /// of the descriptor.
    pub fn write(self, bytes: &[u8], timeout: Duration) -> Result<(), String> {
        let fd = self.0;
        let flags = rustix::fs::fcntl_getfl(&fd).map_err(|e| e.to_string())?;
        // Non-blocking, so that a reader that stops reading cannot hold this thread forever.
        rustix::fs::fcntl_setfl(&fd, flags | OFlags::NONBLOCK).map_err(|e| e.to_string())?;
        let deadline = Instant::now() + timeout;
        let mut rest = bytes;
        while !rest.is_empty() {
            match rustix::io::write(&fd, rest) {
                Ok(0) => return Err("the descriptor took no more bytes".into()),
                Ok(n) => rest = &rest[n..],
                Err(rustix::io::Errno::INTR) => {}
                Err(rustix::io::Errno::AGAIN) => {
                    let left = deadline.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return Err(format!("the reader took {} of {} bytes within {} s", bytes.len() - rest.len(), bytes.len(), timeout.as_secs()));
                    }
                    let ts = rustix::event::Timespec { tv_sec: left.as_secs() as _, tv_nsec: left.subsec_nanos() as _ };
                    let mut pfd = [rustix::event::PollFd::new(&fd, rustix::event::PollFlags::OUT)];
                    match rustix::event::poll(&mut pfd, Some(&ts)) {
                        Ok(_) | Err(rustix::io::Errno::INTR) => {}
                        Err(e) => return Err(e.to_string()),
                    }
                }
                Err(rustix::io::Errno::PIPE) => return Err("the reader closed its end of the pipe".into()),
                Err(e) => return Err(e.to_string()),
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    fn value(fd: &OwnedFd) -> Value<'static> {
        Value::Fd(zbus::zvariant::Fd::from(fd.try_clone().unwrap()))
    }

    #[test]
    fn a_pipe_gets_every_byte_and_its_end() {
        let (r, w) = rustix::pipe::pipe().unwrap();
        let t = AnnotateTarget::parse(&value(&w)).unwrap();
        drop(w);
        let data: Vec<u8> = (0..300_000u32).map(|i| i as u8).collect();
        let reader = std::thread::spawn(move || {
            let mut got = Vec::new();
            std::fs::File::from(r).read_to_end(&mut got).unwrap();
            got
        });
        t.write(&data, Duration::from_secs(10)).unwrap();
        assert_eq!(reader.join().unwrap(), data, "all bytes, then end of file");
    }

    #[test]
    fn a_reader_that_never_reads_costs_the_timeout_only() {
        let (_r, w) = rustix::pipe::pipe().unwrap();
        let t = AnnotateTarget::parse(&value(&w)).unwrap();
        let start = Instant::now();
        let e = t.write(&vec![0u8; 1 << 20], Duration::from_millis(300)).unwrap_err();
        assert!(e.contains("within"), "{e}");
        assert!(start.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn read_only_and_non_file_descriptors_are_refused() {
        let (r, _w) = rustix::pipe::pipe().unwrap();
        assert!(AnnotateTarget::parse(&value(&r)).unwrap_err().message.contains("not open for writing"));
        let (a, _b) = std::os::unix::net::UnixStream::pair().unwrap();
        let sock = OwnedFd::from(a);
        assert!(AnnotateTarget::parse(&value(&sock)).unwrap_err().message.contains("pipe or a regular file"));
        assert!(AnnotateTarget::parse(&Value::from("x")).is_err());
    }
}
