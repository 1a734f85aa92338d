//! Jobs whose ranks talk over verbs through the runtime: started without arguments it
//! launches itself twice (the launcher's exchange carries the verbs addresses):
//! - three processes on one host with `COMMCORE_TRANSPORT=verbs`, every pair over verbs;
//! - four processes on two hosts (network namespaces) with the default choice: shared
//!   memory within a host and verbs between them, which every rank checks in its address
//!   vector.
//!
//! In each, rank 0 and the first rank of another host (rank 1 in the first job) echo
//! messages of 8 B, 20 kB (by copy past the eager size) and 1 MiB (RDMA read into the
//! receive's buffer), checking every byte; then every rank takes part in a barrier, a 1 MiB
//! broadcast and an allreduce of 100,000 words, checked. In the second, the two hosts'
//! ranks then meet as two groups (one accepts on a port, the other connects), which reach
//! each other over verbs: 8 B and 1 MiB across, a merge and its allreduce. Prints one line,
//! `VERBS-WORLD-RESULT {...}`. Needs a device (the guest of `scripts/verbs-guest.sh`).

use commcore::coll::{Datatype, ReduceOp};
use commcore_linux::launch::{run_job, JobSpec};
use commcore_linux::runtime::{Comm, World};
use commcore_linux::transport::{SHARED_MEMORY, VERBS};

const SIZES: [usize; 3] = [8, 20_000, 1 << 20];
/// The forced job's ranks, and the automatic job's ranks and hosts.
const RANKS: usize = 3;
const AUTO_RANKS: usize = 4;
const AUTO_HOSTS: usize = 2;
/// Set in the automatic job's ranks.
const ENV_AUTO: &str = "VERBS_WORLD_AUTO";
/// How long accept and connect wait for the other group.
const MEET_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

fn main() -> std::process::ExitCode {
    if std::env::var_os("COMMCORE_RANK").is_some() {
        return match rank() {
            Ok(()) => std::process::ExitCode::SUCCESS,
            Err(error) => {
                eprintln!("verbs_world: {error}");
                std::process::ExitCode::FAILURE
            }
        };
    }
    let program = std::env::current_exe().expect("the program's own path");
    let mut forced = JobSpec::new(RANKS, &program);
    forced.env.push(("COMMCORE_TRANSPORT".into(), "verbs".into()));
    let mut auto = JobSpec::new(AUTO_RANKS, &program);
    auto.hosts = AUTO_HOSTS;
    auto.env.push((ENV_AUTO.into(), "1".into()));
    let run = |mut spec: JobSpec| {
        // Emulated RDMA on a loaded machine: the forced job once took over 60 s.
        spec.timeout = Some(std::time::Duration::from_secs(180));
        match run_job(&spec) {
            Ok(_) => (true, String::new()),
            Err(failure) => (false, failure.to_string().replace('"', "'")),
        }
    };
    let (forced_ok, forced_error) = run(forced);
    let (auto_ok, auto_error) = run(auto);
    let ok = forced_ok && auto_ok;
    println!(
        "VERBS-WORLD-RESULT {{\"ok\": {ok}, \"ranks\": {RANKS}, \"error\": \"{forced_error}\", \
         \"automatic\": {{\"ok\": {auto_ok}, \"ranks\": {AUTO_RANKS}, \"hosts\": {AUTO_HOSTS}, \
         \"error\": \"{auto_error}\"}}}}"
    );
    if ok {
        std::process::ExitCode::SUCCESS
    } else {
        std::process::ExitCode::FAILURE
    }
}

/// Checks how this rank reaches every other: the forced job, verbs to all; the automatic
/// one, shared memory within its host and verbs to the other host (one link, no TCP).
fn check_routes(world: &World, auto: bool) -> Result<(), String> {
    if world.tcp_links() != 1 {
        return Err(format!("{} message links, not the one verbs link", world.tcp_links()));
    }
    let me = world.comm().rank();
    for (peer, entry) in world.address_vector().iter().enumerate().filter(|&(p, _)| p != me) {
        let same_host = world.host_of(peer) == world.host_of(me);
        let want = if auto && same_host { SHARED_MEMORY } else { VERBS };
        if entry.transport() != want {
            return Err(format!(
                "rank {peer} is reached through {:?}, not {want:?}",
                entry.transport()
            ));
        }
    }
    Ok(())
}

/// One rank: echo each size ten times between rank 0 and the first rank of another host
/// (rank 1 when all share one), checking every byte; then the collectives.
fn rank() -> Result<(), Box<dyn std::error::Error>> {
    let world = World::init()?;
    let auto = std::env::var_os(ENV_AUTO).is_some();
    check_routes(&world, auto)?;
    let comm = world.comm();
    let partner = (1..comm.size())
        .find(|&r| !auto || world.host_of(r) != world.host_of(0))
        .ok_or("no rank on another host")?;
    for size in SIZES {
        let mut buf = vec![0u8; size];
        for round in 0..10u8 {
            let fill = |buf: &mut [u8], from: u8| {
                buf.iter_mut().enumerate().for_each(|(i, b)| *b = (i as u8) ^ round ^ from);
            };
            let check = |buf: &[u8], from: u8| {
                buf.iter().enumerate().all(|(i, &b)| b == (i as u8) ^ round ^ from)
            };
            if comm.rank() == 0 {
                fill(&mut buf, 0);
                comm.send(&buf, partner, 1)?;
                comm.recv(&mut buf, partner, 2)?;
                if !check(&buf, 1) {
                    return Err(format!("{size} B came back changed in round {round}").into());
                }
            } else if comm.rank() == partner {
                comm.recv(&mut buf, 0, 1)?;
                if !check(&buf, 0) {
                    return Err(format!("{size} B arrived changed in round {round}").into());
                }
                fill(&mut buf, 1);
                comm.send(&buf, 0, 2)?;
            }
        }
        comm.barrier()?;
    }
    let mut block: Vec<u8> = (0..1 << 20).map(|i| (i % 241) as u8).collect();
    if comm.rank() != 0 {
        block.fill(0);
    }
    comm.bcast(&mut block, 0)?;
    if block.iter().enumerate().any(|(i, &b)| b != (i % 241) as u8) {
        return Err("the broadcast arrived changed".into());
    }
    let words: Vec<u8> =
        (0..100_000u64).flat_map(|i| (i + comm.rank() as u64).to_le_bytes()).collect();
    let mut sums = vec![0u8; words.len()];
    comm.allreduce(&words, &mut sums, Datatype::U64, ReduceOp::Sum)?;
    let ranks = comm.size() as u64;
    let expected = |i: u64| ranks * i + ranks * (ranks - 1) / 2;
    let wrong = sums
        .chunks_exact(8)
        .enumerate()
        .any(|(i, w)| u64::from_le_bytes(w.try_into().unwrap_or_default()) != expected(i as u64));
    if wrong {
        return Err("the allreduce's sums are wrong".into());
    }
    if auto {
        meet_across_hosts(&world)?;
    }
    Ok(())
}

/// Host 0's ranks accept on a port and host 1's connect: two groups on two hosts, every
/// process with a device, so their link is verbs. Each rank trades 8 B and 1 MiB with the
/// rank of the same number in the other group, then the merged communicator sums ranks.
fn meet_across_hosts(world: &World) -> Result<(), Box<dyn std::error::Error>> {
    let comm = world.comm();
    let host = world.host_of(comm.rank()).ok_or("a rank without a host")?;
    let side = comm.split(host as i32, 0)?.ok_or("a rank outside the split")?;
    let mut name = [0u8; 256];
    let port = if comm.rank() == 0 { world.open_port()? } else { String::new() };
    name[..port.len()].copy_from_slice(port.as_bytes());
    comm.bcast(&mut name, 0)?;
    let port = String::from_utf8_lossy(&name).trim_end_matches('\0').to_string();
    let inter = if host == 0 {
        side.accept(&port, 0, MEET_TIMEOUT)?
    } else {
        side.connect(&port, 0, MEET_TIMEOUT)?
    };
    let remote = inter.remote_size().ok_or("not an inter-communicator")?;
    if let Some(r) = (0..remote).find(|&r| inter.transport_to(r) != Some(VERBS)) {
        return Err(format!("the other group's rank {r} is not reached over verbs").into());
    }
    let me = side.rank();
    let peer = me % remote;
    for size in [8, 1 << 20] {
        let out: Vec<u8> = (0..size).map(|i| (i % 251) as u8 ^ host as u8).collect();
        let mut back = vec![0u8; size];
        inter.sendrecv(&out, peer, 3, &mut back, peer, 3)?;
        if back.iter().enumerate().any(|(i, &b)| b != (i % 251) as u8 ^ (1 - host) as u8) {
            return Err(format!("{size} B across the groups arrived changed").into());
        }
    }
    let merged: Comm = inter.intercomm_merge(host == 1)?;
    let mut sum = [0u8; 8];
    merged.allreduce(
        &(merged.rank() as u64).to_le_bytes(),
        &mut sum,
        Datatype::U64,
        ReduceOp::Sum,
    )?;
    let n = merged.size() as u64;
    if u64::from_le_bytes(sum) != n * (n - 1) / 2 {
        return Err("the merged communicator's sum is wrong".into());
    }
    drop(merged);
    inter.disconnect()?;
    if comm.rank() == 0 {
        world.close_port(&port)?;
    }
    Ok(())
}
