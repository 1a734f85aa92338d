//! Two groups on different hosts meet over TCP (no shared memory to hand over): every
//! process of both groups listens on a socket of its own, the roots trade the two groups'
//! addresses over the port's TCP connection, and each process runs a link for the pair of
//! groups (a transport with its own token, the port's, and its own numbering: group A's
//! processes first). The link is verbs when every process of both has a device
//! ([`super::meet_verbs`]), else TCP. The engine reaches the other group's processes
//! through that link, and the two leaders agree the context ids over it as over a bridge.

use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

use commcore::av::{Address, Ave, NodeId};
use commcore::port::Token;

use super::bridge_comm::Side;
use super::meet_verbs::{self, OwnVerbs};
use super::DpmError;
use crate::runtime::engine::{message_peer, MessageLink, Peer};
use crate::runtime::registry::{GroupTie, LauncherTie, TieKind};
use crate::runtime::Comm;
use crate::shm::bridge::Bridge;
use crate::tcp::{socket, TcpSettings, TcpTransport};
use crate::transport::verbs::VerbsAddress;
use crate::transport::{TCP, VERBS};

/// Bytes one process takes on the wire: its socket address's text and its verbs address's
/// (empty without a device), each zero-padded, then its node.
const ADDR_BYTES: usize = 128;
const TEXT_BYTES: usize = 56;
const VERBS_BYTES: usize = 68;
const NODE_AT: usize = TEXT_BYTES + VERBS_BYTES;
/// The first bytes of the connecting root's hello over TCP.
pub(super) const HELLO_TCP: &[u8; 8] = b"CCHELLOT";

/// This host's address to listen on: the launcher's for this host (or the interface a
/// foreign launcher's rank chose at start-up), else the loopback.
pub(super) fn host_ip() -> IpAddr {
    crate::tcp::listen_ip().ok().flatten().unwrap_or(Ipv4Addr::LOCALHOST.into())
}

/// A process of a group meeting over TCP: where its link listens, and its node in its own
/// job's numbering (both groups give every process the same node, so they agree on the
/// node layout of a merged communicator).
#[derive(Clone, Copy)]
pub(super) struct Member {
    addr: SocketAddr,
    verbs: Option<VerbsAddress>,
    node: u32,
}

fn encode_members(members: &[Member]) -> Vec<u8> {
    let mut out = vec![0u8; members.len() * ADDR_BYTES];
    for (item, member) in out.chunks_exact_mut(ADDR_BYTES).zip(members) {
        let text = member.addr.to_string();
        item[..text.len()].copy_from_slice(text.as_bytes());
        let verbs = member.verbs.map(|v| v.to_text()).unwrap_or_default();
        item[TEXT_BYTES..TEXT_BYTES + verbs.len()].copy_from_slice(verbs.as_bytes());
        item[NODE_AT..].copy_from_slice(&member.node.to_le_bytes());
    }
    out
}

/// The zero-padded text at the start of `field`.
fn text_of(field: &[u8]) -> Option<&str> {
    let end = field.iter().position(|&b| b == 0).unwrap_or(field.len());
    std::str::from_utf8(&field[..end]).ok()
}

fn decode_members(bytes: &[u8]) -> Result<Vec<Member>, DpmError> {
    let malformed = || DpmError::Port("the other group sent a malformed address".into());
    bytes
        .chunks_exact(ADDR_BYTES)
        .map(|item| {
            let addr = text_of(&item[..TEXT_BYTES]).and_then(|t| t.parse().ok());
            let verbs = match text_of(&item[TEXT_BYTES..NODE_AT]).ok_or_else(malformed)? {
                "" => None,
                text => Some(VerbsAddress::from_text(text).ok_or_else(malformed)?),
            };
            let node = u32::from_le_bytes(item[NODE_AT..].try_into().unwrap_or([0; 4]));
            addr.map(|addr| Member { addr, verbs, node }).ok_or_else(malformed)
        })
        .collect()
}

/// Reads exactly `len` bytes before `deadline`.
pub(super) fn read_all(
    stream: &mut TcpStream,
    len: usize,
    deadline: Instant,
) -> Result<Vec<u8>, DpmError> {
    let left = deadline.saturating_duration_since(Instant::now()).max(Duration::from_millis(1));
    stream.set_read_timeout(Some(left)).map_err(|e| DpmError::Port(e.to_string()))?;
    let mut buf = vec![0u8; len];
    stream
        .read_exact(&mut buf)
        .map_err(|e| DpmError::TimedOut(format!("the other root did not answer ({e})")))?;
    Ok(buf)
}

/// What a process brings to a meeting: its listener for a TCP link and, with a device,
/// its verbs transport.
struct Own {
    listener: TcpListener,
    verbs: Option<OwnVerbs>,
    seed: u64,
}

/// A process's listener for a TCP link (and its verbs transport, with a device), and every
/// member of its group (collective).
fn listen_all(
    comm: &Comm,
    token: Token,
    deadline: Instant,
) -> Result<(Own, Vec<Member>), DpmError> {
    let listened = socket::listen(host_ip());
    let fabric = &comm.runtime.fabric;
    let seed = u64::from(std::process::id()) ^ (comm.rank() as u64).rotate_left(32);
    let verbs = meet_verbs::open(token, deadline, seed);
    let node = fabric.nodes[fabric.rank];
    let mine = match &listened {
        Ok(listener) => listener.local_addr().ok().map(|addr| Member {
            addr,
            verbs: verbs.as_ref().map(meet_verbs::address),
            node,
        }),
        Err(_) => None,
    };
    let mine_bytes = encode_members(&mine.into_iter().collect::<Vec<_>>());
    let mut item = vec![0u8; ADDR_BYTES];
    item[..mine_bytes.len()].copy_from_slice(&mine_bytes);
    let mut all = vec![0u8; ADDR_BYTES * comm.size()];
    comm.allgather(&item, &mut all)?;
    let addrs = decode_members(&all)
        .map_err(|_| DpmError::Port("a process of the group could not listen".into()))?;
    let listener = listened.map_err(|e| DpmError::Port(format!("cannot listen: {e}")))?;
    Ok((Own { listener, verbs, seed }, addrs))
}

impl Comm {
    /// The connecting group's side, its root reaching the accepting root at `target` once
    /// the group listens: sends the hello (token, our size, our leader, our members), takes
    /// the answer, and builds the inter-communicator (collective). `watch`: the launcher's
    /// failure word for the two groups, if it keeps one.
    pub(super) fn connect_tcp(
        &self,
        root: usize,
        target: Option<SocketAddr>,
        (token, deadline): (Token, Instant),
        watch: Option<Arc<Bridge>>,
    ) -> Result<Comm, DpmError> {
        let (own, ours) = listen_all(self, token, deadline)?;
        let answer = match target {
            Some(target) if self.rank() == root => {
                hello_and_answer(target, token, root, &ours, deadline).map(|(leader, theirs)| {
                    let mut bytes = (leader as u32).to_le_bytes().to_vec();
                    bytes.extend_from_slice(&encode_members(&theirs));
                    bytes
                })
            }
            _ => Ok(Vec::new()),
        };
        let answer = self.bcast_outcome(root, answer)?;
        let leader = u32::from_le_bytes(answer[..4].try_into().unwrap_or([0; 4])) as usize;
        let theirs = decode_members(&answer[4..])?;
        let members = (theirs, ours);
        let ties = (LauncherTie::None, watch);
        self.link_intercomm(Side::B, (root, leader), own, members, (token, deadline), ties)
    }

    /// The accepting group's side, its root holding `stream` from a connecting root whose
    /// hello (after the magic and token, already checked) said `size` and `leader`; the
    /// root keeps `launcher` as the new group's tie to the launcher, and `watch` is the
    /// launcher's failure word for the two groups, if it keeps one.
    pub(super) fn accept_tcp(
        &self,
        root: usize,
        hello: Option<(TcpStream, usize, usize, Vec<Member>)>,
        (token, deadline): (Token, Instant),
        (launcher, watch): (LauncherTie, Option<Arc<Bridge>>),
    ) -> Result<Comm, DpmError> {
        let (own, ours) = listen_all(self, token, deadline)?;
        let heard = match hello {
            Some((mut stream, _, leader, theirs)) if self.rank() == root => {
                let mut reply = super::ports::ACCEPTED.to_vec();
                reply.extend_from_slice(&(self.size() as u32).to_le_bytes());
                reply.extend_from_slice(&(root as u32).to_le_bytes());
                reply.extend_from_slice(&encode_members(&ours));
                stream
                    .write_all(&reply)
                    .map_err(|e| DpmError::Port(format!("the connecting root went away: {e}")))
                    .map(|()| {
                        let mut bytes = (leader as u32).to_le_bytes().to_vec();
                        bytes.extend_from_slice(&encode_members(&theirs));
                        bytes
                    })
            }
            _ => Ok(Vec::new()),
        };
        let heard = self.bcast_outcome(root, heard)?;
        let leader = u32::from_le_bytes(heard[..4].try_into().unwrap_or([0; 4])) as usize;
        let theirs = decode_members(&heard[4..])?;
        let members = (ours, theirs);
        let ties = (launcher, watch);
        self.link_intercomm(Side::A, (root, leader), own, members, (token, deadline), ties)
    }

    /// Runs the link for groups A and B (`members`: A's, then B's) and builds the
    /// inter-communicator over it; `leaders` are A's and B's leader ranks, `ties` the new
    /// group's tie to the launcher and the failure word the link watches.
    fn link_intercomm(
        &self,
        side: Side,
        leaders: (usize, usize),
        own: Own,
        members: (Vec<Member>, Vec<Member>),
        (token, deadline): (Token, Instant),
        (launcher, watch): (LauncherTie, Option<Arc<Bridge>>),
    ) -> Result<Comm, DpmError> {
        let (a, b) = (members.0.len(), members.1.len());
        let (me, theirs, our_leader, their_leader) = match side {
            Side::A => (self.rank(), a..a + b, leaders.0, a + leaders.1),
            Side::B => (a + self.rank(), 0..a, leaders.1, leaders.0),
        };
        let members: Vec<Member> = members.0.into_iter().chain(members.1).collect();
        let cannot = |e: String| DpmError::Port(format!("cannot start the link: {e}"));
        let verbs: Option<Vec<VerbsAddress>> = members.iter().map(|m| m.verbs).collect();
        let (made, selector) = match (own.verbs, verbs) {
            (Some(transport), Some(peers)) => {
                let made = meet_verbs::link(transport, (me, own.seed), peers, watch);
                (made.map_err(cannot)?, VERBS)
            }
            _ => {
                let all: Vec<SocketAddr> = members.iter().map(|m| m.addr).collect();
                let mut settings = TcpSettings::new(u128::from_le_bytes(token.0));
                settings.spin = Duration::ZERO;
                let left = deadline.saturating_duration_since(Instant::now());
                settings.handshake.timeout = (left.as_micros() as u64).max(100_000);
                let transport = TcpTransport::new(me, all, own.listener, settings, own.seed)
                    .map_err(|e| cannot(e.to_string()))?;
                (MessageLink::tcp_watching(transport, watch), TCP)
            }
        };
        let runtime = &self.runtime;
        let link = runtime.engine().add_message_link(made);
        runtime.links_made.store(true, std::sync::atomic::Ordering::Relaxed);
        let av: Vec<Ave> = theirs
            .clone()
            .map(|slot| {
                let node = NodeId(members[slot].node);
                Ave::new(Address::Inline(message_peer(link, slot) as u64), selector, node)
            })
            .collect::<Result<_, _>>()
            .map_err(|e| DpmError::Handover(format!("address vector: {e:?}")))?;
        // The group's entries live as long as the process (a few bytes per process met).
        let av: &'static [Ave] = Box::leak(av.into_boxed_slice());
        let tie = GroupTie { kind: TieKind::Link { link }, launcher: launcher.clone() };
        let pgid = match runtime.registry.register(av, tie) {
            Ok(pgid) => pgid,
            Err(error) => {
                runtime.untie(vec![GroupTie { kind: TieKind::Link { link }, launcher }]);
                return Err(DpmError::Handover(format!("process groups: {error}")));
            }
        };
        let leader_peer = Peer::Message(message_peer(link, their_leader));
        let built = self.intercomm_over(pgid, av, self.rank() == our_leader, leader_peer, side);
        if built.is_err() {
            if let Some(tie) = runtime.registry.abandon(pgid) {
                runtime.untie(vec![tie]);
            }
        }
        built
    }
}

/// The connecting root's exchange: reaches the accepting root at `target`, says hello
/// (token, our size, our leader `root`, our members) and reads the answer.
fn hello_and_answer(
    target: SocketAddr,
    token: Token,
    root: usize,
    ours: &[Member],
    deadline: Instant,
) -> Result<(usize, Vec<Member>), DpmError> {
    let left = deadline.saturating_duration_since(Instant::now()).max(Duration::from_millis(1));
    let mut stream = TcpStream::connect_timeout(&target, left).map_err(|e| {
        DpmError::Port(format!("cannot reach the port ({e}): it is closed or unreachable"))
    })?;
    let _ = stream.set_nodelay(true);
    let mut hello = HELLO_TCP.to_vec();
    hello.extend_from_slice(&token.0);
    hello.extend_from_slice(&(ours.len() as u32).to_le_bytes());
    hello.extend_from_slice(&(root as u32).to_le_bytes());
    hello.extend_from_slice(&encode_members(ours));
    stream.write_all(&hello).map_err(|e| DpmError::Port(format!("the port went away: {e}")))?;
    read_answer(&mut stream, deadline)
}

/// The accepting root's answer: its size, its leader and its group's addresses.
fn read_answer(
    stream: &mut TcpStream,
    deadline: Instant,
) -> Result<(usize, Vec<Member>), DpmError> {
    let head = read_all(stream, 16, deadline)?;
    if &head[..8] == super::ports::REFUSED {
        return Err(DpmError::Port("the port refused the connection (its token differs)".into()));
    }
    if &head[..8] != super::ports::ACCEPTED {
        return Err(DpmError::Port("the port answered with something else".into()));
    }
    let size = u32::from_le_bytes(head[8..12].try_into().unwrap_or([0; 4])) as usize;
    let leader = u32::from_le_bytes(head[12..16].try_into().unwrap_or([0; 4])) as usize;
    if size == 0 || size > crate::shm::layout::MAX_RANKS || leader >= size {
        return Err(DpmError::Port("the accepting group's size is out of range".into()));
    }
    let theirs = decode_members(&read_all(stream, size * ADDR_BYTES, deadline)?)?;
    Ok((leader, theirs))
}

/// The rest of a TCP hello after its magic: token, size and leader, then the addresses.
pub(super) fn read_hello(
    stream: &mut TcpStream,
    deadline: Instant,
) -> Result<(Token, usize, usize, Vec<Member>), DpmError> {
    let head = read_all(stream, commcore::port::TOKEN_BYTES + 8, deadline)?;
    let mut token = [0u8; commcore::port::TOKEN_BYTES];
    token.copy_from_slice(&head[..commcore::port::TOKEN_BYTES]);
    let at = commcore::port::TOKEN_BYTES;
    let size = u32::from_le_bytes(head[at..at + 4].try_into().unwrap_or([0; 4])) as usize;
    let leader = u32::from_le_bytes(head[at + 4..at + 8].try_into().unwrap_or([0; 4])) as usize;
    if size == 0 || size > crate::shm::layout::MAX_RANKS || leader >= size {
        return Err(DpmError::Port("the connecting group's size is out of range".into()));
    }
    let addrs = decode_members(&read_all(stream, size * ADDR_BYTES, deadline)?)?;
    Ok((Token(token), size, leader, addrs))
}
