//! The ranks of `commcore bench dpm`'s jobs, by `--role`: each measures with the runtime's
//! dynamic-process calls and rank 0 prints one JSON object of its figures.

use std::time::{Duration, Instant};

use commcore::coll::{Datatype, ReduceOp};
use serde_json::{json, Map, Value};

use super::super::option;
use super::super::stats::median;
use commcore_linux::runtime::{Comm, SpawnOptions, World};

/// How long one dynamic-process step may take before the run counts as a hang.
pub(super) const STEP_TIMEOUT: Duration = Duration::from_secs(20);
/// Ping-pong sizes.
pub(super) const PINGPONG_BYTES: [usize; 2] = [8, 65536];
/// Inter-communicator collectives: (operation, bytes).
const COLLECTIVES: [(&str, usize); 5] =
    [("barrier", 0), ("bcast", 8), ("bcast", 65536), ("allreduce", 8), ("allreduce", 65536)];

type Figures = Result<Value, Box<dyn std::error::Error>>;

/// Runs the rank's role; rank 0 prints the figures.
pub(super) fn main(args: &[String]) -> Result<(), Box<dyn std::error::Error>> {
    let role: String = option(args, "--role")?.ok_or("--role is required in a job")?;
    let reps: usize = option(args, "--reps")?.unwrap_or(10).max(1);
    let file: Option<String> = option(args, "--file")?;
    let mut world = World::init()?;
    let figures = match role.as_str() {
        "spawner" => spawner(&world, reps),
        "spawn-merge" => spawned_merges(&world, reps),
        "child-quiet" => return child(&mut world, |_| Ok(())),
        "child-pingpong" => {
            return child(&mut world, |parent| pingpong_figures(parent, 0, false).map(drop))
        }
        "child-merge" => return child(&mut world, |parent| merges(parent, true, reps).map(drop)),
        "intra" => intra(&world),
        "spawned-pingpong" => spawned_pingpong(&world, reps),
        "accept" | "connect" => {
            let file = file.ok_or("--file is required for accept and connect")?;
            let pingpong_only = option::<String>(args, "--part")?.as_deref() == Some("pingpong");
            connected(&world, role == "accept", &file, reps, pingpong_only)
        }
        "static" => static_merges(&world, reps),
        other => Err(format!("unknown role {other:?}").into()),
    }?;
    if world.rank() == 0 {
        println!("{figures}");
    }
    Ok(())
}

/// Half the round trip of `bytes`-byte messages between rank 0 of `comm` and rank 0 of the
/// other side (`peer`), in µs: the median of 5 batches.
fn pingpong(
    comm: &Comm,
    peer: usize,
    starts: bool,
    bytes: usize,
) -> Result<f64, Box<dyn std::error::Error>> {
    let mut buf = vec![1u8; bytes];
    let iterations = if bytes <= 1024 { 5000 } else { 500 };
    let mut batches = Vec::new();
    for batch in 0..6 {
        let start = Instant::now();
        for _ in 0..iterations {
            if starts {
                comm.send(&buf, peer, 1)?;
                comm.recv(&mut buf, peer, 1)?;
            } else {
                comm.recv(&mut buf, peer, 1)?;
                comm.send(&buf, peer, 1)?;
            }
        }
        if batch > 0 {
            batches.push(start.elapsed().as_secs_f64() / iterations as f64 / 2.0 * 1e6);
        }
    }
    Ok(median(batches))
}

fn pingpong_figures(comm: &Comm, peer: usize, starts: bool) -> Figures {
    let mut out = Map::new();
    for bytes in PINGPONG_BYTES {
        out.insert(bytes.to_string(), json!(pingpong(comm, peer, starts, bytes)?));
    }
    Ok(Value::Object(out))
}

/// A spawned job of the benchmark: meets the parents, does `work` with them, disconnects.
fn child(
    world: &mut World,
    work: impl FnOnce(&Comm) -> Result<(), Box<dyn std::error::Error>>,
) -> Result<(), Box<dyn std::error::Error>> {
    let parent = world.parent().ok_or("a spawned job without parents")?;
    if parent.rank() == 0 || world.size() > 1 {
        work(parent)?;
    }
    world.disconnect_parent()?;
    Ok(())
}

fn spawn(
    comm: &Comm,
    role: &str,
    children: usize,
    reps: usize,
) -> Result<Comm, Box<dyn std::error::Error>> {
    let me = std::env::current_exe()?.to_string_lossy().into_owned();
    let options = SpawnOptions { timeout: STEP_TIMEOUT, ..SpawnOptions::default() };
    let reps = reps.to_string();
    let args = ["bench", "dpm", "--role", role, "--reps", &reps];
    Ok(comm.spawn(&me, &args, children, &options, 0)?)
}

/// Spawn latency of 1 and 4 children (the parent root's time in spawn; the children only
/// meet their parents and disconnect), and the spawn rate (spawn + disconnect of 1 child, 10
/// back to back).
fn spawner(world: &World, reps: usize) -> Figures {
    let comm = world.comm();
    let mut series = Vec::new();
    for children in [1usize, 4] {
        let mut times = Vec::new();
        for _ in 0..reps {
            let start = Instant::now();
            let inter = spawn(comm, "child-quiet", children, reps)?;
            times.push(start.elapsed().as_secs_f64() * 1e3);
            inter.disconnect()?;
        }
        let first = times[0];
        let sorted = super::super::stats::sorted(times);
        series.push(json!({
            "children": children,
            "first_ms": first,
            "median_ms": super::super::stats::quantile(&sorted, 0.5),
            "p90_ms": super::super::stats::quantile(&sorted, 0.9),
        }));
    }
    let start = Instant::now();
    for _ in 0..10 {
        spawn(comm, "child-quiet", 1, reps)?.disconnect()?;
    }
    let rate = 10.0 / start.elapsed().as_secs_f64();
    Ok(json!({ "spawn": series, "spawn_rate_per_s": rate }))
}

/// Ping-pong with a spawned child.
fn spawned_pingpong(world: &World, reps: usize) -> Figures {
    let inter = spawn(world.comm(), "child-pingpong", 1, reps)?;
    let pingpong = pingpong_figures(&inter, 0, true)?;
    inter.disconnect()?;
    Ok(json!({ "pingpong": pingpong }))
}

/// Merges of a group of this job's size with as many spawned children.
fn spawned_merges(world: &World, reps: usize) -> Figures {
    let inter = spawn(world.comm(), "child-merge", world.size(), reps)?;
    let us = merges(&inter, false, reps)?;
    inter.disconnect()?;
    let n = world.size();
    Ok(
        json!({ "merge_spawned": { "group_a": n, "group_b": n, "how": "spawned", "median_us": us } }),
    )
}

/// Ping-pong between ranks 0 and 1 of the world.
fn intra(world: &World) -> Figures {
    let comm = world.comm();
    let figures = if comm.rank() < 2 {
        pingpong_figures(comm, 1 - comm.rank(), comm.rank() == 0)?
    } else {
        Value::Null
    };
    comm.barrier()?;
    Ok(json!({ "pingpong": figures }))
}

/// The median time per call of `op` on an inter-communicator, at its local rank 0.
fn collective(
    inter: &Comm,
    accept_side: bool,
    op: &str,
    bytes: usize,
) -> Result<f64, Box<dyn std::error::Error>> {
    let mut buf = vec![0u8; bytes];
    let mut out = vec![0u8; bytes];
    let root = if accept_side {
        commcore::coll::Root::Rank(0)
    } else if inter.rank() == 0 {
        commcore::coll::Root::Here
    } else {
        commcore::coll::Root::Elsewhere
    };
    let mut batches = Vec::new();
    for batch in 0..6 {
        let start = Instant::now();
        for _ in 0..200 {
            match op {
                "barrier" => inter.barrier()?,
                "bcast" => inter.bcast_root(&mut buf, root)?,
                _ => inter.allreduce(&buf, &mut out, Datatype::U64, ReduceOp::Sum)?,
            }
        }
        if batch > 0 {
            batches.push(start.elapsed().as_secs_f64() / 200.0 * 1e6);
        }
    }
    Ok(median(batches))
}

/// One side of two independently started jobs: `reps` accept/connect + disconnect cycles,
/// then over one connection the ping-pong, the inter-communicator collectives and merges
/// (with `pingpong_only`, one connection and its ping-pong).
fn connected(world: &World, accept: bool, file: &str, reps: usize, pingpong_only: bool) -> Figures {
    let comm = world.comm();
    let meet = |round: usize| -> Result<Comm, Box<dyn std::error::Error>> {
        let path = format!("{file}.{round}");
        if accept {
            let name = world.open_port()?;
            if comm.rank() == 0 {
                std::fs::write(format!("{path}.tmp"), &name)?;
                std::fs::rename(format!("{path}.tmp"), &path)?;
            }
            let inter = comm.accept(&name, 0, STEP_TIMEOUT)?;
            world.close_port(&name)?;
            Ok(inter)
        } else {
            let start = Instant::now();
            let name = loop {
                match std::fs::read_to_string(&path) {
                    Ok(name) => break name,
                    Err(_) if start.elapsed() < STEP_TIMEOUT => {
                        std::thread::sleep(Duration::from_micros(200))
                    }
                    Err(e) => return Err(format!("no port name in {path}: {e}").into()),
                }
            };
            Ok(comm.connect(&name, 0, STEP_TIMEOUT)?)
        }
    };
    let mut cycles = Vec::new();
    let reps = if pingpong_only { 0 } else { reps };
    for round in 0..reps {
        let start = Instant::now();
        let inter = meet(round)?;
        cycles.push(start.elapsed().as_secs_f64() * 1e6);
        inter.disconnect()?;
    }
    let inter = meet(reps)?;
    let pingpong =
        if comm.rank() == 0 { pingpong_figures(&inter, 0, accept)? } else { Value::Null };
    inter.barrier()?;
    if pingpong_only {
        inter.disconnect()?;
        return Ok(json!({ "pingpong": pingpong }));
    }
    let mut colls = Vec::new();
    for (op, bytes) in COLLECTIVES {
        let us = collective(&inter, accept, op, bytes)?;
        colls.push(json!({ "op": op, "bytes": bytes, "median_us": us }));
    }
    let merge = merges(&inter, !accept, reps)?;
    inter.disconnect()?;
    Ok(json!({
        "accept_connect_us": median(cycles),
        "pingpong": pingpong,
        "intercomm_coll": colls,
        "merge": merge,
    }))
}

/// The median time of merges (each freed at once) of `inter`, in µs: 100 times `reps`
/// (a merge takes microseconds; a few would measure the first calls' page faults).
fn merges(inter: &Comm, high: bool, reps: usize) -> Result<f64, Box<dyn std::error::Error>> {
    let mut times = Vec::new();
    for _ in 0..100 * reps {
        inter.barrier()?;
        let start = Instant::now();
        let merged = inter.intercomm_merge(high)?;
        times.push(start.elapsed().as_secs_f64() * 1e6);
        drop(merged);
    }
    Ok(median(times))
}

/// Merges of inter-communicators made within one job (`MPI_Intercomm_create`): 1+1 and 2+2.
fn static_merges(world: &World, reps: usize) -> Figures {
    let comm = world.comm();
    let mut out = Vec::new();
    for half in [1usize, 2] {
        let color = i32::from(comm.rank() >= half);
        let Some(group) = comm.split(
            if comm.rank() < 2 * half { color } else { commcore_linux::runtime::UNDEFINED },
            0,
        )?
        else {
            comm.barrier()?;
            continue;
        };
        let remote_leader = if color == 0 { half } else { 0 };
        let inter = group.intercomm_create(0, comm, remote_leader, 7)?;
        let us = merges(&inter, color == 1, reps)?;
        out.push(json!({ "group_a": half, "group_b": half, "how": "static", "median_us": us }));
        comm.barrier()?;
    }
    Ok(json!({ "merge_static": out }))
}
