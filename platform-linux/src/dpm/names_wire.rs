//! The name service's line protocol, shared by the client ([`super::names`]) and the
//! server ([`super::nameserver`]).
//!
//! One request line, one reply line, ASCII, fields separated by one space:
//!
//! ```text
//! publish NAME PORT   ->  ok            | err already-published | err full
//! lookup NAME         ->  ok PORT       | err not-published
//! unpublish NAME      ->  ok            | err not-published     | err not-owner
//! anything else       ->  err bad-request (and the server closes the connection)
//! ```
//!
//! A name is owned by the connection that published it and is removed when that
//! connection closes, so a job that dies leaves nothing published.

/// Bytes a service name holds at most.
pub const NAME_MAX: usize = 255;
/// Bytes a published port holds at most (`MPI_MAX_PORT_NAME` less the NUL).
pub const PORT_MAX: usize = 1023;
/// Bytes a request or reply line holds at most, newline included.
pub const LINE_MAX: usize = "unpublish ".len() + NAME_MAX + 1 + PORT_MAX + 1;

/// A request from a client.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Request<'a> {
    /// Publish `port` under `name`.
    Publish {
        /// The service name.
        name: &'a str,
        /// The port it reaches.
        port: &'a str,
    },
    /// Look `name` up.
    Lookup(&'a str),
    /// Remove `name` (only its publisher may).
    Unpublish(&'a str),
}

/// A refusal from the server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// No such name is published.
    NotPublished,
    /// The name is already published (by anyone).
    AlreadyPublished,
    /// The name was published by another connection.
    NotOwner,
    /// The server holds as many names or connections as it accepts.
    Full,
    /// The request was not one this protocol knows.
    BadRequest,
}

impl Refusal {
    const ALL: [Refusal; 5] = [
        Refusal::NotPublished,
        Refusal::AlreadyPublished,
        Refusal::NotOwner,
        Refusal::Full,
        Refusal::BadRequest,
    ];

    fn word(self) -> &'static str {
        match self {
            Refusal::NotPublished => "not-published",
            Refusal::AlreadyPublished => "already-published",
            Refusal::NotOwner => "not-owner",
            Refusal::Full => "full",
            Refusal::BadRequest => "bad-request",
        }
    }
}

/// Whether `text` may be a name (`max` = [`NAME_MAX`]) or a port (`max` = [`PORT_MAX`]):
/// 1 to `max` bytes of printable ASCII without spaces.
pub fn valid_field(text: &str, max: usize) -> bool {
    !text.is_empty() && text.len() <= max && text.bytes().all(|b| b.is_ascii_graphic())
}

impl Request<'_> {
    /// The request as a line, newline included.
    pub fn to_line(&self) -> String {
        match self {
            Request::Publish { name, port } => format!("publish {name} {port}\n"),
            Request::Lookup(name) => format!("lookup {name}\n"),
            Request::Unpublish(name) => format!("unpublish {name}\n"),
        }
    }
}

/// Reads a request line (without its newline); `None` when it is not a valid request.
pub fn parse_request(line: &str) -> Option<Request<'_>> {
    let mut words = line.split(' ');
    let request = match (words.next()?, words.next(), words.next()) {
        ("publish", Some(name), Some(port)) if valid_field(port, PORT_MAX) => {
            Request::Publish { name, port }
        }
        ("lookup", Some(name), None) => Request::Lookup(name),
        ("unpublish", Some(name), None) => Request::Unpublish(name),
        _ => return None,
    };
    let name = match request {
        Request::Publish { name, .. } | Request::Lookup(name) | Request::Unpublish(name) => name,
    };
    (words.next().is_none() && valid_field(name, NAME_MAX)).then_some(request)
}

/// The reply line for an outcome: `ok`, `ok PORT` or `err WORD`, newline included.
pub fn reply_line(outcome: Result<Option<&str>, Refusal>) -> String {
    match outcome {
        Ok(None) => "ok\n".into(),
        Ok(Some(port)) => format!("ok {port}\n"),
        Err(refusal) => format!("err {}\n", refusal.word()),
    }
}

/// Reads a reply line (without its newline); `None` when it is not a valid reply.
pub fn parse_reply(line: &str) -> Option<Result<Option<&str>, Refusal>> {
    if line == "ok" {
        return Some(Ok(None));
    }
    if let Some(port) = line.strip_prefix("ok ") {
        return valid_field(port, PORT_MAX).then_some(Ok(Some(port)));
    }
    let word = line.strip_prefix("err ")?;
    Refusal::ALL.into_iter().find(|r| r.word() == word).map(Err)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_round_trip_and_bad_ones_are_refused() {
        let requests = [
            Request::Publish { name: "ocean", port: "commcore-port:1;unix=a;token=00" },
            Request::Lookup("ocean"),
            Request::Unpublish("ocean"),
        ];
        for request in requests {
            let line = request.to_line();
            assert_eq!(parse_request(line.trim_end_matches('\n')), Some(request));
        }
        let long = "n".repeat(NAME_MAX + 1);
        let bad = ["", "lookup", "lookup a b", "publish a", "publish a b c", "get a", "lookup  a"];
        for line in bad.iter().copied().chain([format!("lookup {long}").as_str()]) {
            assert_eq!(parse_request(line), None, "{line:?}");
        }
        assert_eq!(parse_request("lookup a\u{7f}"), None);
    }

    #[test]
    fn replies_round_trip_and_bad_ones_are_refused() {
        let outcomes = [Ok(None), Ok(Some("p"))].into_iter().chain(Refusal::ALL.map(Err));
        for outcome in outcomes {
            let line = reply_line(outcome);
            assert!(line.len() <= LINE_MAX);
            assert_eq!(parse_reply(line.trim_end_matches('\n')), Some(outcome));
        }
        for line in ["", "ok ", "err", "err nope", "okp", "ok a b"] {
            assert_eq!(parse_reply(line), None, "{line:?}");
        }
    }
}
