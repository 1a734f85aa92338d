//! Threads that start a spawn's children side by side.
//!
//! `Command::spawn` returns only once the child has exec'd, so children started one after
//! another each wait for the one before: four children took 8 of a 15 ms spawn. Started
//! from several threads, their forks and execs overlap. The threads live as long as the
//! launcher, because `PR_SET_PDEATHSIG` kills a child when the *thread* that forked it
//! exits, not the process.

use std::io;
use std::process::{Child, Command};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

/// Threads in the pool: beyond the CPUs of a small machine, more only queue.
const STARTERS: usize = 4;

/// A command to start, with its index in the request and where its outcome goes.
type Task = (usize, Command, Sender<(usize, io::Result<Child>)>);

/// The pool's queue; `None` when no thread could be made (commands then start in turn).
fn queue() -> Option<&'static Mutex<Sender<Task>>> {
    static QUEUE: OnceLock<Option<Mutex<Sender<Task>>>> = OnceLock::new();
    QUEUE
        .get_or_init(|| {
            let (sender, receiver) = mpsc::channel::<Task>();
            let receiver = Arc::new(Mutex::new(receiver));
            let made = (0..STARTERS)
                .filter(|_| {
                    let receiver = receiver.clone();
                    std::thread::Builder::new()
                        .name("commcore-starter".into())
                        .spawn(move || serve(&receiver))
                        .is_ok()
                })
                .count();
            (made > 0).then(|| Mutex::new(sender))
        })
        .as_ref()
}

/// A starter's loop: it never returns while the launcher runs (see the module's note).
fn serve(tasks: &Mutex<Receiver<Task>>) {
    loop {
        let task = tasks.lock().unwrap_or_else(PoisonError::into_inner).recv();
        let Ok((index, mut command, reply)) = task else { return };
        // The requester waits for every outcome; if it is gone there is nobody to tell,
        // and the child is reaped with its job.
        let _ = reply.send((index, command.spawn()));
    }
}

/// Starts every command, several at a time; the outcomes in the order of `commands`.
pub(super) fn start_all(commands: Vec<Command>) -> Vec<io::Result<Child>> {
    let count = commands.len();
    let Some(queue) = queue().filter(|_| count > 1) else {
        return commands.into_iter().map(|mut c| c.spawn()).collect();
    };
    let (reply, outcomes) = mpsc::channel();
    let mut results: Vec<Option<io::Result<Child>>> = (0..count).map(|_| None).collect();
    {
        let queue = queue.lock().unwrap_or_else(PoisonError::into_inner);
        for (index, command) in commands.into_iter().enumerate() {
            if let Err(mpsc::SendError((index, mut command, _))) =
                queue.send((index, command, reply.clone()))
            {
                results[index] = Some(command.spawn());
            }
        }
    }
    drop(reply);
    // Every task sent answers once (a starter ends only when the queue is gone).
    while let Ok((index, outcome)) = outcomes.recv() {
        results[index] = Some(outcome);
    }
    results
        .into_iter()
        .map(|r| r.unwrap_or_else(|| Err(io::Error::other("the starter thread ended"))))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcomes_come_back_in_the_order_of_the_commands() {
        let mut commands: Vec<Command> =
            ["true", "/nonexistent/program", "true"].iter().map(Command::new).collect();
        commands[2].arg("third");
        let outcomes = start_all(commands);
        assert_eq!(outcomes.len(), 3);
        assert!(outcomes[0].is_ok());
        assert_eq!(outcomes[1].as_ref().err().map(io::Error::kind), Some(io::ErrorKind::NotFound));
        for outcome in outcomes.into_iter().flatten() {
            let mut child = outcome;
            assert!(child.wait().expect("a child to reap").success());
        }
    }
}
