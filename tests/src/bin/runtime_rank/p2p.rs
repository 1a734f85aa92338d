//! Point-to-point scenarios: order, wildcards, unexpected messages, truncation, bad input,
//! nonblocking operations and an all-to-all exchange.

use commcore_linux::runtime::{Comm, P2pError, Request, RequestSet, ANY_SOURCE, ANY_TAG};

/// A message whose bytes say who sent it and its sequence number, `len` bytes long.
pub(crate) fn message(source: usize, seq: u32, len: usize) -> Vec<u8> {
    let mut bytes = vec![0u8; len.max(8)];
    bytes[..4].copy_from_slice(&(source as u32).to_le_bytes());
    bytes[4..8].copy_from_slice(&seq.to_le_bytes());
    for (i, b) in bytes.iter_mut().enumerate().skip(8) {
        *b = (i as u32).wrapping_mul(31).wrapping_add(seq) as u8;
    }
    bytes.truncate(len.max(8));
    bytes
}

pub(crate) fn check_message(bytes: &[u8], source: usize, seq: u32) {
    assert_eq!(
        bytes,
        &message(source, seq, bytes.len())[..],
        "payload of message {seq} from {source}"
    );
}

/// Sizes that cover one cell, several cells and the single-copy path.
pub(crate) fn size_of(seq: u32) -> usize {
    [8, 100, 8128, 8129, 20_000, 70_000, 300_000][seq as usize % 7]
}

pub(crate) fn ordering(comm: &Comm) {
    const COUNT: u32 = 700;
    if comm.rank() == 0 {
        for seq in 0..COUNT {
            comm.send(&message(0, seq, size_of(seq)), 1, (seq % 5) as i32).unwrap();
        }
    } else if comm.rank() == 1 {
        let mut buf = vec![0u8; 300_000];
        for seq in 0..COUNT {
            let status = comm.recv(&mut buf, 0, ANY_TAG).unwrap();
            assert_eq!(
                (status.source, status.tag, status.len),
                (0, (seq % 5) as i32, size_of(seq))
            );
            check_message(&buf[..status.len], 0, seq);
        }
    }
}

pub(crate) fn any_source(comm: &Comm) {
    const PER_RANK: u32 = 200;
    if comm.rank() == 0 {
        let mut next = vec![0u32; comm.size()];
        let mut buf = vec![0u8; 300_000];
        for _ in 0..PER_RANK * (comm.size() as u32 - 1) {
            let status = comm.recv(&mut buf, ANY_SOURCE, ANY_TAG).unwrap();
            let seq = next[status.source];
            assert_eq!(status.tag, status.source as i32 * 1000 + (seq % 3) as i32);
            check_message(&buf[..status.len], status.source, seq);
            next[status.source] += 1;
        }
        assert!(next[1..].iter().all(|&n| n == PER_RANK), "{next:?}");
    } else {
        for seq in 0..PER_RANK {
            let tag = comm.rank() as i32 * 1000 + (seq % 3) as i32;
            comm.send(&message(comm.rank(), seq, size_of(seq)), 0, tag).unwrap();
        }
    }
}

pub(crate) fn unexpected(comm: &Comm) {
    if comm.rank() == 0 {
        // Long messages wait for their receiver, so they go nonblocking before the barrier.
        let outgoing: Vec<Vec<u8>> = (0..10u32).map(|tag| message(0, tag, size_of(tag))).collect();
        let sends: Vec<_> = outgoing
            .iter()
            .enumerate()
            .map(|(tag, m)| comm.isend(m, 1, tag as i32).unwrap())
            .collect();
        comm.barrier().unwrap();
        Request::wait_all(sends).unwrap();
        // Posted receives are matched in posting order.
        comm.send(&message(0, 100, 8), 1, 50).unwrap();
        comm.send(&message(0, 101, 8), 1, 51).unwrap();
        // Waiting in the ring before the receives are posted: the oldest posted receive does
        // not accept the first, a later one does; the last is too long for its receive.
        comm.send(&message(0, 60, 8), 1, 60).unwrap();
        comm.send(&message(0, 61, 8), 1, 61).unwrap();
        comm.send(&message(0, 62, 16), 1, 62).unwrap();
        comm.barrier().unwrap();
    } else if comm.rank() == 1 {
        comm.barrier().unwrap();
        let mut buf = vec![0u8; 300_000];
        // Everything from rank 0 is unexpected by now; take it in reverse tag order.
        for tag in (0..10u32).rev() {
            let status = comm.recv(&mut buf, 0, tag as i32).unwrap();
            assert_eq!((status.tag, status.len), (tag as i32, size_of(tag)));
            check_message(&buf[..status.len], 0, tag);
        }
        let (mut first, mut second) = ([0u8; 8], [0u8; 8]);
        let a = comm.irecv(&mut first, 0, ANY_TAG).unwrap();
        let b = comm.irecv(&mut second, ANY_SOURCE, ANY_TAG).unwrap();
        let statuses = Request::wait_all([b, a]).unwrap();
        assert_eq!(statuses[1].tag, 50, "the first posted receive takes the first message");
        assert_eq!(statuses[0].tag, 51);
        check_message(&first, 0, 100);
        check_message(&second, 0, 101);
        comm.barrier().unwrap();
        let (mut first, mut second, mut short) = ([0u8; 8], [0u8; 8], [0u8; 4]);
        let a = comm.irecv(&mut first, 0, 61).unwrap();
        let b = comm.irecv(&mut second, 0, 60).unwrap();
        let c = comm.irecv(&mut short, 0, ANY_TAG).unwrap();
        assert_eq!(a.wait().unwrap().tag, 61, "the oldest posted receive waits for its tag");
        assert_eq!(b.wait().unwrap().tag, 60);
        let truncated = c.wait();
        assert!(
            matches!(truncated, Err(P2pError::Truncated { message_len: 16, buffer_len: 4, .. })),
            "{truncated:?}"
        );
        check_message(&first, 0, 61);
        check_message(&second, 0, 60);
    } else {
        comm.barrier().unwrap();
        comm.barrier().unwrap();
    }
}

pub(crate) fn truncation(comm: &Comm) {
    let sizes = [100usize, 9000, 50_000, 1 << 20];
    if comm.rank() == 0 {
        for (seq, &len) in sizes.iter().enumerate() {
            comm.send(&message(0, seq as u32, len), 1, 1).unwrap();
            comm.send(&message(0, 99, 8), 1, 2).unwrap();
        }
    } else if comm.rank() == 1 {
        for (seq, &len) in sizes.iter().enumerate() {
            let mut small = vec![0u8; 10];
            let error = comm.recv(&mut small, 0, 1).unwrap_err();
            assert_eq!(
                error,
                P2pError::Truncated { message_len: len, buffer_len: 10, source: 0, tag: 1 }
            );
            assert_eq!(small[..], message(0, seq as u32, len)[..10], "the buffer holds the head");
            // The truncated message was consumed: the next one is the marker.
            let mut marker = [0u8; 8];
            let status = comm.recv(&mut marker, 0, ANY_TAG).unwrap();
            assert_eq!(status.tag, 2);
            check_message(&marker, 0, 99);
        }
    }
    // A truncated single copy long enough to be split between the two sides, each way:
    // the buffer holds the message's head.
    let (long, buffer) = (1usize << 20, 300_000);
    for sender in [0, 1] {
        if comm.rank() == sender {
            comm.send(&message(sender, 7, long), 1 - sender, 3).unwrap();
        } else if comm.rank() == 1 - sender {
            let mut head = vec![0u8; buffer];
            let error = comm.recv(&mut head, sender, 3).unwrap_err();
            let from = sender as u32;
            assert_eq!(
                error,
                P2pError::Truncated { message_len: long, buffer_len: buffer, source: from, tag: 3 }
            );
            check_message(&head, sender, 7);
        }
    }
}

pub(crate) fn bad_input(comm: &Comm) {
    let size = comm.size();
    let mut buf = [0u8; 4];
    assert_eq!(comm.send(&buf, size, 0), Err(P2pError::RankOutOfRange { rank: size, size }));
    assert_eq!(comm.send(&buf, 0, -3), Err(P2pError::InvalidTag(-3)));
    assert_eq!(
        comm.recv(&mut buf, size + 5, 0).unwrap_err(),
        P2pError::RankOutOfRange { rank: size + 5, size }
    );
    assert_eq!(comm.recv(&mut buf, 0, -7).unwrap_err(), P2pError::InvalidTag(-7));
    assert!(comm.isend(&buf, usize::MAX, 0).is_err());
    assert!(comm.irecv(&mut buf, ANY_SOURCE, i32::MIN).is_err());
    // A count beyond the limit: the pages of this buffer are never touched.
    let huge = vec![0u8; commcore_linux::runtime::MAX_MESSAGE_BYTES + 1];
    assert!(matches!(comm.send(&huge, 0, 0), Err(P2pError::CountOutOfRange { .. })));
    drop(huge);
    // After the errors, the communicator still works.
    comm.barrier().unwrap();
    let me = comm.rank();
    let next = (me + 1) % size;
    let prev = (me + size - 1) % size;
    let status = comm.sendrecv(&(me as u32).to_le_bytes(), next, 0, &mut buf, prev, 0).unwrap();
    assert_eq!(status.source, prev);
    assert_eq!(u32::from_le_bytes(buf), prev as u32);
}

pub(crate) fn nonblocking(comm: &Comm) {
    const COUNT: u32 = 64;
    let (me, size) = (comm.rank(), comm.size());
    let peer = me ^ 1;
    if peer >= size {
        return;
    }
    let outgoing: Vec<Vec<u8>> = (0..COUNT).map(|seq| message(me, seq, size_of(seq))).collect();
    let mut incoming: Vec<Vec<u8>> = (0..COUNT).map(|seq| vec![0u8; size_of(seq)]).collect();
    let mut receives: Vec<_> = incoming
        .iter_mut()
        .enumerate()
        .map(|(seq, b)| comm.irecv(b, peer, seq as i32).unwrap())
        .collect();
    let sends: Vec<_> = outgoing
        .iter()
        .enumerate()
        .map(|(seq, b)| comm.isend(b, peer, seq as i32).unwrap())
        .collect();
    // Complete the receives by polling with test, newest first.
    let mut done = vec![false; receives.len()];
    let mut spins = 0u64;
    while done.iter().any(|d| !d) {
        for (i, request) in receives.iter_mut().enumerate().rev() {
            if !done[i] {
                if let Some(status) = request.test().unwrap() {
                    assert_eq!(
                        (status.source, status.tag, status.len),
                        (peer, i as i32, size_of(i as u32))
                    );
                    done[i] = true;
                }
            }
        }
        spins += 1;
        if spins % 1000 == 0 {
            std::thread::yield_now();
        }
    }
    drop(receives);
    Request::wait_all(sends).unwrap();
    for (seq, bytes) in incoming.iter().enumerate() {
        check_message(bytes, peer, seq as u32);
    }
    // A receive that is dropped unmatched is cancelled and takes nothing.
    let mut spare = [0u8; 8];
    drop(comm.irecv(&mut spare, peer, 999).unwrap());
    comm.barrier().unwrap();
    wait_all_of_long_messages(comm, peer);
    wait_all_of_a_window(comm, peer);
    window_from_every_rank(comm);
    ready_receives_of_a_set_with_holes(comm, peer);
}

/// Requests by index with holes, as a library's table of them is.
struct WithHoles<'v, 'a>(&'v mut [Option<Request<'a>>]);

impl<'a> RequestSet<'a> for WithHoles<'_, 'a> {
    fn len(&self) -> usize {
        self.0.len()
    }
    fn request(&mut self, i: usize) -> Option<&mut Request<'a>> {
        self.0.get_mut(i)?.as_mut()
    }
}

/// `Request::complete_ready` over a set with holes (entries that hold no request), the
/// messages still in the ring: it passes over the holes, completes every receive with its
/// own message, and leaves the one whose message has not come.
fn ready_receives_of_a_set_with_holes(comm: &Comm, peer: usize) {
    const COUNT: usize = 24;
    const LATE: usize = 16;
    let mut incoming = [[0u8; 8]; COUNT];
    let mut set: Vec<Option<Request<'_>>> = incoming
        .iter_mut()
        .enumerate()
        .map(|(i, b)| (i % 5 != 2).then(|| comm.irecv(b, peer, i as i32).unwrap()))
        .collect();
    comm.barrier().unwrap();
    for i in (0..COUNT).filter(|&i| i % 5 != 2 && i != LATE) {
        comm.send(&message(comm.rank(), 300 + i as u32, 8), peer, i as i32).unwrap();
    }
    comm.barrier().unwrap();
    Request::complete_ready(&mut WithHoles(&mut set));
    for (i, request) in set.iter().enumerate() {
        let Some(request) = request else { continue };
        match request.completed() {
            Some(Ok(status)) => assert!(i < LATE && status.tag == i as i32, "receive {i}"),
            None => assert!(i >= LATE, "receive {i} was left, its message waiting"),
            Some(Err(e)) => panic!("receive {i}: {e}"),
        }
    }
    // Sent once the peer's run has looked too.
    comm.barrier().unwrap();
    comm.send(&message(comm.rank(), 300 + LATE as u32, 8), peer, LATE as i32).unwrap();
    let rest: Vec<_> = set.into_iter().flatten().filter(|r| r.completed().is_none()).collect();
    Request::wait_all(rest).unwrap();
    for (i, bytes) in incoming.iter().enumerate().filter(|&(i, _)| i % 5 != 2) {
        check_message(bytes, peer, 300 + i as u32);
    }
    comm.barrier().unwrap();
}

/// Rank 0's window of receives from every other rank in turn, one by any source in the
/// middle, waited for while the messages still sit in the rings (no barrier drains them
/// first): the run of receives switches rings at every message, and hands the rest of the
/// window to the general path at the one by any source. Each gets its own message.
fn window_from_every_rank(comm: &Comm) {
    const COUNT: usize = 64;
    const ANY_AT: usize = 33;
    let (me, size) = (comm.rank(), comm.size());
    let source_of = |i: usize| 1 + i % (size - 1);
    if me == 0 {
        let mut incoming = vec![[0u8; 8]; COUNT];
        let receives: Vec<_> = incoming
            .iter_mut()
            .enumerate()
            .map(|(i, b)| {
                let source = if i == ANY_AT { ANY_SOURCE } else { source_of(i).into() };
                comm.irecv(b, source, i as i32).unwrap()
            })
            .collect();
        comm.barrier().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(20));
        let statuses = Request::wait_all(receives).unwrap();
        for (i, (status, bytes)) in statuses.iter().zip(&incoming).enumerate() {
            assert_eq!((status.source, status.tag, status.len), (source_of(i), i as i32, 8));
            assert_eq!(bytes[..], message(source_of(i), 900 + i as u32, 8)[..], "message {i}");
        }
    } else {
        comm.barrier().unwrap();
        for i in (0..COUNT).filter(|&i| source_of(i) == me) {
            comm.send(&message(me, 900 + i as u32, 8), 0, i as i32).unwrap();
        }
    }
    comm.barrier().unwrap();
}

/// A window of one-cell messages into receives posted before they come (the message-rate
/// pattern; `wait_all` takes those at the head of the ring under one lock), by tag and any
/// tag in turn: each buffer gets its own message, in order, and the one too short for its
/// message holds its head while `wait_all` reports it.
fn wait_all_of_a_window(comm: &Comm, peer: usize) {
    const COUNT: u32 = 64;
    const SHORT: usize = 40;
    let me = comm.rank();
    let mut incoming: Vec<Vec<u8>> =
        (0..COUNT as usize).map(|i| vec![0u8; if i == SHORT { 4 } else { 8 }]).collect();
    let receives: Vec<_> = incoming
        .iter_mut()
        .enumerate()
        .map(|(i, b)| comm.irecv(b, peer, if i % 2 == 0 { 7 } else { ANY_TAG }).unwrap())
        .collect();
    comm.barrier().unwrap();
    for seq in 0..COUNT {
        comm.send(&message(me, 700 + seq, 8), peer, 7).unwrap();
    }
    let error = Request::wait_all(receives).unwrap_err();
    assert_eq!(
        error,
        P2pError::Truncated { message_len: 8, buffer_len: 4, source: peer as u32, tag: 7 }
    );
    for (i, bytes) in incoming.iter().enumerate() {
        let full = message(peer, 700 + i as u32, 8);
        assert_eq!(bytes[..], full[..bytes.len()], "window message {i}");
    }
    comm.barrier().unwrap();
}

/// Long messages sent newest first to receives completed by one `wait_all`: while it waits
/// for the first, the later ones' messages come into their own lent buffers (over TCP,
/// straight from the socket). Then a truncated one among them: its buffer holds the head,
/// the others are whole, and `wait_all` reports the truncation.
fn wait_all_of_long_messages(comm: &Comm, peer: usize) {
    let me = comm.rank();
    let sizes = [1usize << 20, 70_000, 300_000, 8, 1 << 20];
    let outgoing: Vec<Vec<u8>> =
        sizes.iter().enumerate().map(|(i, &len)| message(me, 500 + i as u32, len)).collect();
    let mut incoming: Vec<Vec<u8>> = sizes.iter().map(|&len| vec![0u8; len]).collect();
    let receives: Vec<_> = incoming
        .iter_mut()
        .enumerate()
        .map(|(i, b)| comm.irecv(b, peer, 500 + i as i32).unwrap())
        .collect();
    let sends: Vec<_> = outgoing
        .iter()
        .enumerate()
        .rev()
        .map(|(i, b)| comm.isend(b, peer, 500 + i as i32).unwrap())
        .collect();
    let statuses = Request::wait_all(receives).unwrap();
    for (i, status) in statuses.iter().enumerate() {
        assert_eq!((status.source, status.tag, status.len), (peer, 500 + i as i32, sizes[i]));
        check_message(&incoming[i], peer, 500 + i as u32);
    }
    Request::wait_all(sends).unwrap();

    let (long, short) = (1usize << 20, 300_000);
    let outgoing = [message(me, 600, long), message(me, 601, 70_000)];
    let (mut head, mut whole) = (vec![0u8; short], vec![0u8; 70_000]);
    let receives =
        [comm.irecv(&mut head, peer, 600).unwrap(), comm.irecv(&mut whole, peer, 601).unwrap()];
    let sends = [
        comm.isend(&outgoing[1], peer, 601).unwrap(),
        comm.isend(&outgoing[0], peer, 600).unwrap(),
    ];
    let error = Request::wait_all(receives).unwrap_err();
    assert_eq!(
        error,
        P2pError::Truncated { message_len: long, buffer_len: short, source: peer as u32, tag: 600 }
    );
    check_message(&head, peer, 600);
    check_message(&whole, peer, 601);
    Request::wait_all(sends).unwrap();
    comm.barrier().unwrap();
}

/// Every rank sends to every other rank at once, long messages included, then receives.
pub(crate) fn exchange(comm: &Comm) {
    let (me, size) = (comm.rank(), comm.size());
    for round in 0..3u32 {
        let outgoing: Vec<Vec<u8>> = (0..size)
            .map(|to| message(me, round * 100 + to as u32, size_of(round + to as u32)))
            .collect();
        let sends: Vec<_> =
            (0..size).map(|to| comm.isend(&outgoing[to], to, round as i32).unwrap()).collect();
        let mut buf = vec![0u8; 300_000];
        for from in (0..size).rev() {
            let status = comm.recv(&mut buf, from, round as i32).unwrap();
            assert_eq!(status.len, size_of(round + me as u32));
            check_message(&buf[..status.len], from, round * 100 + me as u32);
        }
        Request::wait_all(sends).unwrap();
    }
    comm.barrier().unwrap();
}
