//! The dynamic-process paper's comparison on a device: spawn of 1 and of 4 children onto
//! another host, and an 8 B ping-pong between parent and child, with verbs connections
//! made on demand (over UD, at a pair's first message) against all of them made when the
//! groups meet (`COMMCORE_VERBS_CONNECT=eager`, all-to-all RC).
//!
//! Started without arguments it runs jobs of two parents on two hosts, alternating the two
//! modes `ROUNDS` times (interleaved, so that both see the same machine), and prints one
//! line, `VERBS-SPAWN-RESULT {...}`, with each mode's medians and their ratios. Every
//! process has a device, so parents and children meet over verbs, which each checks. Needs
//! a device (the guest of `scripts/verbs-guest.sh`); there the times are emulation, and
//! only their ratios mean anything.

use std::time::{Duration, Instant};

use commcore_linux::launch::{run_job, JobSpec};
use commcore_linux::runtime::{Comm, SpawnOptions, World};
use commcore_linux::transport::VERBS;

/// Jobs per mode.
const ROUNDS: usize = 3;
/// Round trips timed per spawn.
const ROUND_TRIPS: usize = 50;
const MODES: [&str; 2] = ["on_demand", "eager"];
const CHILDREN: [usize; 2] = [1, 4];
const ENV_CONNECT: &str = "COMMCORE_VERBS_CONNECT";

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let outcome = match args.get(1).map(String::as_str) {
        Some("child") => child(),
        Some("parent") => parent(),
        _ => return compare(),
    };
    match outcome {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("verbs_spawn: {error}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// One figure of one job: spawn time in ms and half round trip in µs, per child count.
type Figures = Vec<(f64, f64)>;

/// Runs the jobs, alternating modes, and prints the medians and ratios.
fn compare() -> std::process::ExitCode {
    let program = std::env::current_exe().expect("the program's own path");
    let mut figures: [Vec<Figures>; 2] = [Vec::new(), Vec::new()];
    let mut error = String::new();
    for _ in 0..ROUNDS {
        for (m, mode) in MODES.iter().enumerate() {
            let mut spec = JobSpec::new(2, &program);
            spec.args = vec!["parent".into()];
            spec.hosts = 2;
            spec.env.push((ENV_CONNECT.into(), (*mode).into()));
            spec.timeout = Some(Duration::from_secs(120));
            spec.capture_rank0_stdout = true;
            match run_job(&spec) {
                Ok(out) => match parse(&String::from_utf8_lossy(&out.rank0_stdout)) {
                    Some(f) => figures[m].push(f),
                    None => error = format!("{mode}: rank 0 printed no figures"),
                },
                Err(failure) => error = format!("{mode}: {failure}").replace('"', "'"),
            }
        }
    }
    let ok = error.is_empty() && figures.iter().all(|f| f.len() == ROUNDS);
    let median = |mode: usize, i: usize, pick: fn(&(f64, f64)) -> f64| {
        let mut v: Vec<f64> = figures[mode].iter().map(|f| pick(&f[i])).collect();
        v.sort_by(f64::total_cmp);
        v.get(v.len() / 2).copied().unwrap_or(0.0)
    };
    let mut rows = Vec::new();
    for (i, children) in CHILDREN.iter().enumerate() {
        let spawn = [median(0, i, |f| f.0), median(1, i, |f| f.0)];
        let pong = [median(0, i, |f| f.1), median(1, i, |f| f.1)];
        let ratio = |v: [f64; 2]| if v[1] > 0.0 { v[0] / v[1] } else { 0.0 };
        rows.push(format!(
            "{{\"children\": {children}, \"spawn_ms\": {{\"on_demand\": {:.1}, \"eager\": {:.1}, \
             \"ratio\": {:.2}}}, \"pingpong_8b_half_rtt_us\": {{\"on_demand\": {:.1}, \
             \"eager\": {:.1}, \"ratio\": {:.2}}}}}",
            spawn[0],
            spawn[1],
            ratio(spawn),
            pong[0],
            pong[1],
            ratio(pong)
        ));
    }
    println!(
        "VERBS-SPAWN-RESULT {{\"ok\": {ok}, \"emulated_times\": true, \"runs_per_mode\": {ROUNDS}, \
         \"rows\": [{}], \"error\": \"{error}\"}}",
        rows.join(", ")
    );
    if ok {
        std::process::ExitCode::SUCCESS
    } else {
        std::process::ExitCode::FAILURE
    }
}

/// Reads rank 0's `FIGURES children spawn_ms half_rtt_us` lines, in `CHILDREN` order.
fn parse(out: &str) -> Option<Figures> {
    let figures: Figures = out
        .lines()
        .filter_map(|l| l.strip_prefix("FIGURES "))
        .filter_map(|l| {
            let v: Vec<f64> = l.split(' ').filter_map(|x| x.parse().ok()).collect();
            (v.len() == 3).then(|| (v[1], v[2]))
        })
        .collect();
    (figures.len() == CHILDREN.len()).then_some(figures)
}

/// The parents: spawn each count of children onto host 1, time it, ping-pong with child 0.
fn parent() -> Result<(), Box<dyn std::error::Error>> {
    let world = World::init()?;
    let comm = world.comm();
    let program = std::env::current_exe()?.to_string_lossy().into_owned();
    // The children connect as their parents do.
    let mode = std::env::var(ENV_CONNECT).unwrap_or_default();
    let options = SpawnOptions {
        host: Some(1),
        timeout: Duration::from_secs(60),
        env: vec![(ENV_CONNECT.into(), mode)],
        ..SpawnOptions::default()
    };
    for children in CHILDREN {
        comm.barrier()?;
        let start = Instant::now();
        let inter = comm.spawn(&program, &["child"], children, &options, 0)?;
        let spawn_ms = start.elapsed().as_secs_f64() * 1e3;
        check_verbs(&inter)?;
        let half_rtt_us = if comm.rank() == 0 { ping_pong(&inter, true)? } else { 0.0 };
        inter.disconnect()?;
        if comm.rank() == 0 {
            println!("FIGURES {children} {spawn_ms:.3} {half_rtt_us:.3}");
        }
    }
    Ok(())
}

/// A child: its parent's rank 0 ping-pongs with child 0.
fn child() -> Result<(), Box<dyn std::error::Error>> {
    let mut world = World::init()?;
    let parent = world.parent().ok_or("a spawned job has a parent")?;
    check_verbs(parent)?;
    if world.comm().rank() == 0 {
        ping_pong(parent, false)?;
    }
    world.disconnect_parent()?;
    Ok(())
}

/// Every process of the other group is reached over verbs.
fn check_verbs(inter: &Comm) -> Result<(), String> {
    let remote = inter.remote_size().ok_or("not an inter-communicator")?;
    match (0..remote).find(|&r| inter.transport_to(r) != Some(VERBS)) {
        Some(r) => Err(format!("the other group's rank {r} is not reached over verbs")),
        None => Ok(()),
    }
}

/// 8 B round trips with rank 0 of the other group (the first one untimed); the half
/// round trip in µs on the side that leads.
fn ping_pong(inter: &Comm, lead: bool) -> Result<f64, Box<dyn std::error::Error>> {
    let mut buf = [0u8; 8];
    let mut start = Instant::now();
    for trip in 0..=ROUND_TRIPS {
        if trip == 1 {
            start = Instant::now();
        }
        if lead {
            inter.send(&buf, 0, 7)?;
            inter.recv(&mut buf, 0, 7)?;
        } else {
            inter.recv(&mut buf, 0, 7)?;
            inter.send(&buf, 0, 7)?;
        }
    }
    Ok(start.elapsed().as_secs_f64() * 1e6 / (2 * ROUND_TRIPS) as f64)
}
