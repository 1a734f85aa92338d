//! The verbs transport on a real device: pairs of processes (this one and a forked child)
//! connect on demand or eagerly, ping-pong, move 1 MiB messages by RDMA read both ways, and
//! meet a peer that dies and one that stops receiving. Prints one line,
//! `VERBS-RESULT {json}`, with `ok`, the device and each scenario's outcome. Times are
//! printed but, on an emulated machine, are not figures. Exits 2 when there is no device.
//! `VERBS_CHECK_ONLY=NAME` runs one scenario.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

use commcore::wire::{Header, Kind};
use commcore_linux::transport::verbs::ibverbs::IbvDevice;
use commcore_linux::transport::verbs::{
    ConnectMode, PeerFault, VerbsAddress, VerbsError, VerbsSettings, VerbsTransport,
};

type Transport = VerbsTransport<IbvDevice>;

const ROUNDS: usize = 200;
const LONG: usize = 1 << 20;

fn header(source: usize, tag: i32, len: usize) -> Header {
    Header {
        kind: Kind::Eager,
        context: 1,
        source: source as u32,
        tag,
        sequence: 0,
        length: len as u64,
    }
}

/// Waits up to 20 s for one message; returns it with its long payload read.
fn receive(t: &mut Transport, from: usize) -> Result<(Header, Vec<u8>), String> {
    let start = Instant::now();
    loop {
        let mut got = None;
        t.poll(|a| got = Some((a.from, a.header, a.payload.to_vec(), a.remote)))
            .map_err(|e| e.to_string())?;
        if let Some((peer, header, mut payload, remote)) = got {
            if peer != from {
                return Err(format!("a message from {peer}, expected {from}"));
            }
            if let Some(remote) = remote {
                payload = vec![0; header.length as usize];
                t.read_remote(from, remote, &mut payload).map_err(|e| e.to_string())?;
            }
            return Ok((header, payload));
        }
        if start.elapsed() > Duration::from_secs(20) {
            return Err("no message within 20 s".into());
        }
        std::thread::sleep(Duration::from_micros(50));
    }
}

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed)).collect()
}

/// This process's side of a pair: open, exchange addresses over `sock`, then `body`.
fn side(
    rank: usize,
    mode: ConnectMode,
    sock: UnixStream,
    body: &str,
) -> Result<serde_like::Obj, String> {
    let device = IbvDevice::open().map_err(|e| e.to_string())?;
    let mut settings = VerbsSettings::new(0xc0ffee);
    settings.connect = mode;
    settings.send_timeout = Duration::from_millis(500);
    let mut t =
        Transport::new(device, 0, rank, settings, 7 + rank as u64).map_err(|e| e.to_string())?;
    let mut writer = sock.try_clone().map_err(|e| e.to_string())?;
    writeln!(writer, "{}", t.address().to_text()).map_err(|e| e.to_string())?;
    let mut line = String::new();
    let mut reader = BufReader::new(sock);
    reader.read_line(&mut line).map_err(|e| e.to_string())?;
    let peer = VerbsAddress::from_text(line.trim()).ok_or("a malformed peer address")?;
    let mut addrs = vec![t.address(), peer];
    if rank == 1 {
        addrs.swap(0, 1);
    }
    let start = Instant::now();
    t.set_peers(addrs).map_err(|e| e.to_string())?;
    if mode == ConnectMode::Eager {
        t.wait_connected().map_err(|e| e.to_string())?;
    }
    let mut out = serde_like::Obj::default();
    out.num("set_up_us", start.elapsed().as_micros() as f64);
    let other = 1 - rank;
    match body {
        "pingpong" | "latency" => {
            let first = Instant::now();
            let mut rtt = Duration::ZERO;
            for i in 0..ROUNDS {
                let t0 = Instant::now();
                let data = [i as u8; 8];
                if rank == 0 {
                    t.send(1, &header(0, i as i32, 8), &data).map_err(|e| e.to_string())?;
                    let (h, p) = receive(&mut t, 1)?;
                    if h.tag != i as i32 || p != data {
                        return Err(format!("round {i}: wrong echo"));
                    }
                } else {
                    let (h, p) = receive(&mut t, 0)?;
                    t.send(0, &h, &p).map_err(|e| e.to_string())?;
                }
                if i == 0 {
                    out.num("first_message_us", first.elapsed().as_micros() as f64);
                } else {
                    rtt += t0.elapsed();
                }
            }
            out.num("pingpong_8b_half_rtt_us", rtt.as_micros() as f64 / (2 * (ROUNDS - 1)) as f64);
            if body == "latency" {
                return Ok(out);
            }
            // 1 MiB each way by RDMA read.
            let mine = pattern(LONG, rank as u8);
            for turn in 0..2 {
                if turn == rank {
                    t.send(other, &header(rank, 1000, LONG), &mine).map_err(|e| e.to_string())?;
                } else {
                    let (_, p) = receive(&mut t, other)?;
                    if p != pattern(LONG, other as u8) {
                        return Err("the 1 MiB message arrived changed".into());
                    }
                }
            }
            out.flag("long_1mib_both_ways", true);
            let r = t.resources();
            out.num("queue_pairs", r.queue_pairs as f64);
            out.num("registered_bytes", r.registered_bytes as f64);
            let reg = t.reg_stats();
            out.num("reg_misses", reg.misses as f64);
            t.finish().map_err(|e| e.to_string())?;
        }
        "peer_dies" => {
            if rank == 1 {
                let (h, p) = receive(&mut t, 0)?;
                t.send(0, &h, &p).map_err(|e| e.to_string())?;
                // Die holding the connection: the kernel reclaims the queue pair.
                // SAFETY: raising SIGKILL on this process ends it at once.
                unsafe { libc::kill(libc::getpid(), libc::SIGKILL) };
            }
            t.send(1, &header(0, 0, 8), &[1; 8]).map_err(|e| e.to_string())?;
            receive(&mut t, 1)?;
            std::thread::sleep(Duration::from_millis(200)); // the child is gone by now
            let died = Instant::now();
            let err = loop {
                let sent = t.send(1, &header(0, 1, 8), &[2; 8]).and_then(|()| t.progress());
                if let Err(e) = sent {
                    break e;
                }
                if died.elapsed() > Duration::from_secs(30) {
                    return Err("no error 30 s after the peer died".into());
                }
                std::thread::sleep(Duration::from_millis(1));
            };
            let gone = |f| matches!(f, PeerFault::Gone(_) | PeerFault::Unresponsive { .. });
            let named = matches!(err, VerbsError::Peer { rank: 1, fault } if gone(fault));
            out.flag("error_names_rank", named);
            out.num("detected_after_ms", died.elapsed().as_millis() as f64);
            out.text("error", &err.to_string());
            if !named {
                return Err(format!("unexpected error: {err}"));
            }
        }
        "stops_receiving" => {
            if rank == 1 {
                let (h, p) = receive(&mut t, 0)?;
                t.send(0, &h, &p).map_err(|e| e.to_string())?;
                std::thread::sleep(Duration::from_secs(3)); // takes nothing meanwhile
                return Ok(out);
            }
            t.send(1, &header(0, 0, 8), &[1; 8]).map_err(|e| e.to_string())?;
            receive(&mut t, 1)?;
            let mut sent = 0;
            let err = loop {
                match t.send(1, &header(0, 1, 4096), &[3; 4096]) {
                    Ok(()) => sent += 1,
                    Err(e) => break e,
                }
                if sent > 100_000 {
                    return Err("no back-pressure".into());
                }
            };
            let named = matches!(
                err,
                VerbsError::Peer { rank: 1, fault: PeerFault::StoppedReading { .. } }
            );
            out.flag("error_names_rank", named);
            out.num("messages_before_error", sent as f64);
            if !named {
                return Err(format!("unexpected error: {err}"));
            }
        }
        other => return Err(format!("no scenario {other}")),
    }
    Ok(out)
}

/// Runs `body` on a pair: this process is rank 0, a forked child rank 1.
fn pair(mode: ConnectMode, body: &str) -> Result<serde_like::Obj, String> {
    let (a, b) = UnixStream::pair().map_err(|e| e.to_string())?;
    // SAFETY: no other thread runs here; the child only runs `side` and exits.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err("fork failed".into());
    }
    if pid == 0 {
        drop(a);
        let code = match side(1, mode, b, body) {
            Ok(_) => 0,
            Err(e) => {
                eprintln!("verbs_check: rank 1 ({body}): {e}");
                1
            }
        };
        // SAFETY: ends the child without running the parent's exit handlers.
        unsafe { libc::_exit(code) };
    }
    drop(b);
    let result = side(0, mode, a, body);
    let mut status = 0;
    let start = Instant::now();
    loop {
        // SAFETY: waits for our own child.
        let done = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
        if done == pid {
            break;
        }
        if start.elapsed() > Duration::from_secs(30) {
            // SAFETY: kills and reaps our own child.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
                libc::waitpid(pid, &mut status, 0);
            }
            return Err("rank 1 did not end within 30 s".into());
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let killed_on_purpose = body == "peer_dies" && libc::WIFSIGNALED(status);
    let exited_well = libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0;
    if !(killed_on_purpose || exited_well) {
        return Err(format!("rank 1 failed (status {status:#x})"));
    }
    result
}

fn main() {
    let name = match IbvDevice::open() {
        Ok(device) => device.name().to_string(),
        Err(e) => {
            println!("VERBS-RESULT {{\"ok\": false, \"device\": null, \"error\": \"{e}\"}}");
            std::process::exit(2);
        }
    };
    let mut all_ok = true;
    let mut tests = Vec::new();
    let runs = [
        ("on_demand_pingpong", ConnectMode::OnDemand, "pingpong"),
        ("eager_pingpong", ConnectMode::Eager, "pingpong"),
        ("peer_dies", ConnectMode::OnDemand, "peer_dies"),
        ("stops_receiving", ConnectMode::OnDemand, "stops_receiving"),
    ];
    let only = std::env::var("VERBS_CHECK_ONLY").unwrap_or_default();
    for (label, mode, body) in runs.into_iter().filter(|r| only.is_empty() || only == r.0) {
        let entry = match pair(mode, body) {
            Ok(obj) => format!("\"{label}\": {{\"ok\": true, {}}}", obj.body()),
            Err(e) => {
                all_ok = false;
                format!("\"{label}\": {{\"ok\": false, \"error\": \"{}\"}}", e.replace('"', "'"))
            }
        };
        tests.push(entry);
    }
    let comparison = if only.is_empty() { compare() } else { "null".into() };
    println!(
        "VERBS-RESULT {{\"ok\": {all_ok}, \"device\": \"{name}\", \"emulated_times\": true, \"tests\": {{{}}}, \"on_demand_vs_eager\": {comparison}}}",
        tests.join(", ")
    );
    std::process::exit(if all_ok { 0 } else { 1 });
}

/// The paper's comparison, interleaved: pairs connected on demand (UD handshake at the
/// first message) against pairs connected all-to-all at start-up, 5 of each in turn: the
/// time until the first reply (set-up included) and the 8 B half round trip, medians, and
/// their ratios. Emulated times: the ratio is the figure, not the microseconds.
fn compare() -> String {
    let mut first = [Vec::new(), Vec::new()];
    let mut half_rtt = [Vec::new(), Vec::new()];
    for _ in 0..5 {
        for (i, mode) in [ConnectMode::OnDemand, ConnectMode::Eager].into_iter().enumerate() {
            let obj = match pair(mode, "latency") {
                Ok(obj) => obj,
                Err(e) => return format!("{{\"error\": \"{}\"}}", e.replace('"', "'")),
            };
            let get = |key: &str| obj.get(key).unwrap_or(f64::NAN);
            first[i].push(get("set_up_us") + get("first_message_us"));
            half_rtt[i].push(get("pingpong_8b_half_rtt_us"));
        }
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let [mut fo, mut fe] = first;
    let [mut ho, mut he] = half_rtt;
    let (fo, fe, ho, he) = (median(&mut fo), median(&mut fe), median(&mut ho), median(&mut he));
    format!(
        "{{\"runs\": 5, \"first_reply_us\": {{\"on_demand\": {fo:.0}, \"eager\": {fe:.0}, \"ratio\": {:.2}}}, \"pingpong_8b_half_rtt_us\": {{\"on_demand\": {ho:.1}, \"eager\": {he:.1}, \"ratio\": {:.2}}}}}",
        fo / fe,
        ho / he
    )
}

/// A tiny JSON object writer (the example has no serde).
mod serde_like {
    #[derive(Default)]
    pub struct Obj(Vec<String>);

    impl Obj {
        pub fn num(&mut self, key: &str, v: f64) {
            self.0.push(format!("\"{key}\": {v:.1}"));
        }
        pub fn flag(&mut self, key: &str, v: bool) {
            self.0.push(format!("\"{key}\": {v}"));
        }
        pub fn text(&mut self, key: &str, v: &str) {
            self.0.push(format!("\"{key}\": \"{}\"", v.replace('"', "'")));
        }
        /// The number stored under `key`.
        pub fn get(&self, key: &str) -> Option<f64> {
            let prefix = format!("\"{key}\": ");
            self.0.iter().find_map(|e| e.strip_prefix(&prefix)?.parse().ok())
        }
        pub fn body(&self) -> String {
            self.0.join(", ")
        }
    }
}
