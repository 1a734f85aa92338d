use std::ffi::CStr;
use std::fs::File;
use std::io::{Read, Seek, Write};
use std::os::fd::AsFd;
use std::time::Duration;

use super::*;

fn memfd_with(contents: &[u8]) -> File {
    let name: &CStr = c"commcore-fds-test";
    // SAFETY: memfd_create takes a NUL-terminated name and flags; it returns a new
    // descriptor or -1.
    let fd = unsafe { libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC) };
    assert!(fd >= 0, "memfd_create: {}", io::Error::last_os_error());
    // SAFETY: fd is a descriptor memfd_create just opened and nothing else owns.
    let mut file = File::from(unsafe { OwnedFd::from_raw_fd(fd) });
    file.write_all(contents).unwrap();
    file
}

fn close_on_exec(fd: &OwnedFd) -> bool {
    // SAFETY: F_GETFD on a descriptor this test owns only reads its flags.
    let flags = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GETFD) };
    flags >= 0 && flags & libc::FD_CLOEXEC != 0
}

#[test]
fn memfds_travel_with_their_contents_and_arrive_close_on_exec() {
    let (a, b) = UnixStream::pair().unwrap();
    let regions = [memfd_with(b"ring 0"), memfd_with(b"ring 1")];
    let fds: Vec<_> = regions.iter().map(|f| f.as_fd()).collect();
    assert_eq!(send_fds(&a, b"regions", &fds).unwrap(), 7);
    let mut payload = [0u8; 16];
    let (len, received) = recv_fds(&b, &mut payload, MAX_FDS).unwrap();
    assert_eq!(&payload[..len], b"regions");
    assert_eq!(received.len(), 2);
    for (fd, expected) in received.into_iter().zip(["ring 0", "ring 1"]) {
        assert!(close_on_exec(&fd));
        let mut file = File::from(fd);
        file.rewind().unwrap();
        let mut text = String::new();
        file.read_to_string(&mut text).unwrap();
        assert_eq!(text, expected);
    }
}

#[test]
fn plain_data_arrives_without_descriptors() {
    let (a, b) = UnixStream::pair().unwrap();
    send_fds(&a, b"x", &[]).unwrap();
    let mut payload = [0u8; 4];
    let (len, received) = recv_fds(&b, &mut payload, 0).unwrap();
    assert_eq!((len, received.len()), (1, 0));
}

#[test]
fn more_descriptors_than_accepted_are_refused_and_closed() {
    let (a, b) = UnixStream::pair().unwrap();
    let region = memfd_with(b"r");
    let fds = vec![region.as_fd(); 4];
    send_fds(&a, b"four", &fds).unwrap();
    let mut payload = [0u8; 8];
    assert!(matches!(recv_fds(&b, &mut payload, 2), Err(FdError::Truncated)));
    // Descriptors sent to a receiver that takes none are refused too.
    send_fds(&a, b"four", &fds).unwrap();
    assert!(matches!(recv_fds(&b, &mut payload, 0), Err(FdError::Truncated)));
}

#[test]
fn bad_arguments_a_closed_peer_and_a_silent_peer_are_errors() {
    let (a, b) = UnixStream::pair().unwrap();
    let region = memfd_with(b"r");
    let too_many = vec![region.as_fd(); MAX_FDS + 1];
    assert!(matches!(send_fds(&a, b"x", &too_many), Err(FdError::TooMany { count: 17 })));
    assert!(matches!(send_fds(&a, b"", &[region.as_fd()]), Err(FdError::EmptyPayload)));
    let mut payload = [0u8; 4];
    assert!(matches!(recv_fds(&b, &mut payload, MAX_FDS + 1), Err(FdError::TooMany { .. })));
    assert!(matches!(recv_fds(&b, &mut [], 1), Err(FdError::EmptyPayload)));
    b.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
    assert!(matches!(recv_fds(&b, &mut payload, 1), Err(FdError::Io(_))));
    drop(a);
    assert!(matches!(recv_fds(&b, &mut payload, 1), Err(FdError::Closed)));
    assert!(!FdError::Truncated.to_string().is_empty());
}
