//! The client against a PMI-1 server of the tests' own, one thread per rank, sharing a
//! key-value space and a barrier as hydra's proxy does; and against servers that misbehave.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::sync::{Arc, Barrier, Mutex};
use std::thread;

use super::*;

/// Serves one rank's socket until it closes, in the protocol's own lines.
fn serve(socket: UnixStream, space: Arc<Mutex<HashMap<String, String>>>, barrier: Arc<Barrier>) {
    let mut writer = socket.try_clone().unwrap();
    for line in BufReader::new(socket).lines() {
        let Ok(line) = line else { return };
        let reply = match field(&line, "cmd") {
            Some("init") => "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0".to_string(),
            Some("get_my_kvsname") => "cmd=my_kvsname kvsname=kvs_7_0".to_string(),
            Some("put") => {
                let (key, value) = (field(&line, "key").unwrap(), field(&line, "value").unwrap());
                space.lock().unwrap().insert(key.to_string(), value.to_string());
                "cmd=put_result rc=0 msg=success".to_string()
            }
            Some("barrier_in") => {
                barrier.wait();
                "cmd=barrier_out".to_string()
            }
            Some("get") => match space.lock().unwrap().get(field(&line, "key").unwrap()) {
                Some(value) => format!("cmd=get_result rc=0 msg=success value={value}"),
                None => "cmd=get_result rc=-1 msg=key_not_found".to_string(),
            },
            Some("finalize") => "cmd=finalize_ack".to_string(),
            _ => "cmd=unknown".to_string(),
        };
        if writeln!(writer, "{reply}").is_err() {
            return;
        }
    }
}

#[test]
fn ranks_put_fence_and_read_each_others_values() {
    let size = 3;
    let space = Arc::new(Mutex::new(HashMap::new()));
    let barrier = Arc::new(Barrier::new(size));
    let ranks: Vec<_> = (0..size)
        .map(|rank| {
            let (ours, theirs) = UnixStream::pair().unwrap();
            let (space, barrier) = (space.clone(), barrier.clone());
            thread::spawn(move || serve(theirs, space, barrier));
            thread::spawn(move || {
                let mut pmi =
                    Pmi1Client::connect(ours, rank, size, Duration::from_secs(5)).unwrap();
                pmi.put("addr", &format!("rank {rank} = here")).unwrap();
                pmi.fence().unwrap();
                let all: Vec<String> = (0..size).map(|r| pmi.get(r, "addr").unwrap()).collect();
                assert!(matches!(pmi.get(0, "absent"), Err(PmiError::Refused(_))));
                pmi.finalize().unwrap();
                all
            })
        })
        .collect();
    for handle in ranks {
        let all = handle.join().unwrap();
        assert_eq!(all, ["rank 0 = here", "rank 1 = here", "rank 2 = here"]);
    }
}

#[test]
fn a_silent_launcher_times_out_and_a_closed_one_is_an_error() {
    let (ours, theirs) = UnixStream::pair().unwrap();
    let start = Instant::now();
    let silent = Pmi1Client::connect(ours, 0, 1, Duration::from_millis(200));
    assert!(matches!(silent, Err(PmiError::TimedOut(_))), "{:?}", silent.err());
    assert!(start.elapsed() < Duration::from_secs(2));
    drop(theirs);
    let (ours, theirs) = UnixStream::pair().unwrap();
    drop(theirs);
    let closed = Pmi1Client::connect(ours, 0, 1, Duration::from_secs(1));
    assert!(matches!(closed, Err(PmiError::Io(_))), "{:?}", closed.err());
}

#[test]
fn a_refused_init_or_a_bad_rank_is_an_error_naming_it() {
    let (ours, theirs) = UnixStream::pair().unwrap();
    thread::spawn(move || {
        let mut writer = theirs.try_clone().unwrap();
        let mut line = String::new();
        BufReader::new(theirs).read_line(&mut line).unwrap();
        writeln!(writer, "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=-1").unwrap();
    });
    let refused = Pmi1Client::connect(ours, 0, 2, Duration::from_secs(1));
    assert!(matches!(refused, Err(PmiError::Refused(ref l)) if l.contains("rc=-1")));
    let (ours, _theirs) = UnixStream::pair().unwrap();
    let bad = Pmi1Client::connect(ours, 3, 2, Duration::from_secs(1));
    assert!(matches!(bad, Err(PmiError::NotLaunched(ref m)) if m.contains("PMI_RANK 3")));
}

#[test]
fn values_travel_as_hex_and_replies_are_parsed_by_field() {
    assert_eq!(unhex(&hex(b"a b=c")).as_deref(), Some("a b=c"));
    assert_eq!(unhex("abc"), None, "odd length");
    assert_eq!(unhex("zz"), None);
    assert_eq!(field("cmd=get_result rc=0 value=41", "value"), Some("41"));
    assert_eq!(field("cmd=get_result rc=0", "value"), None);
    assert_eq!(field("cmd=x rcx=1", "rc"), None, "a key is matched whole");
}
