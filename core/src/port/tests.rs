use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::string::String;
use std::vec::Vec;

use proptest::prelude::*;

use super::*;

const TOKEN: Token = Token([0xa5; TOKEN_BYTES]);

fn encoded(port: &PortName<'_>) -> Vec<u8> {
    let mut buf = [0u8; PORT_NAME_MAX];
    let len = port.encode(&mut buf).expect("a valid port encodes");
    buf[..len].to_vec()
}

#[test]
fn a_port_reads_as_documented() {
    let port = PortName {
        unix: Some("commcore/port-7"),
        tcp: Some(SocketAddr::from((Ipv4Addr::new(10, 0, 0, 2), 4000))),
        token: Token(core::array::from_fn(|i| i as u8)),
    };
    let text = encoded(&port);
    assert_eq!(
        text,
        b"commcore-port:1;unix=commcore/port-7;tcp=10.0.0.2:4000;token=000102030405060708090a0b0c0d0e0f"
    );
    assert_eq!(PortName::parse(&text), Ok(port));
}

#[test]
fn a_small_buffer_names_the_size_needed() {
    let port = PortName { unix: Some("p"), tcp: None, token: TOKEN };
    let needed = encoded(&port).len();
    let mut buf = [0u8; 64];
    assert_eq!(port.encode(&mut buf[..needed - 1]), Err(PortError::BufferTooSmall { needed }));
    assert_eq!(port.encode(&mut buf[..needed]), Ok(needed));
}

#[test]
fn a_port_without_address_or_with_a_bad_name_is_refused_on_encode() {
    let mut buf = [0u8; PORT_NAME_MAX];
    let none = PortName { unix: None, tcp: None, token: TOKEN };
    assert_eq!(none.encode(&mut buf), Err(PortError::NoAddress));
    let bad = PortName { unix: Some("a;token=00"), tcp: None, token: TOKEN };
    assert_eq!(bad.encode(&mut buf), Err(PortError::BadValue(Field::Unix)));
}

#[test]
fn malformed_names_get_their_error_kind() {
    let token = "token=00112233445566778899aabbccddeeff";
    let cases: &[(String, PortError)] = &[
        (std::format!("mpi-port:1;unix=a;{token}"), PortError::NotAPort),
        (std::format!("commcore-port:2;unix=a;{token}"), PortError::UnsupportedVersion),
        (std::format!("commcore-port:1;{token}"), PortError::NoAddress),
        (std::format!("commcore-port:1;tcp=1.2.3.4:5;unix=a;{token}"), PortError::Layout),
        (std::format!("commcore-port:1;unix=a;{token};x=1"), PortError::Layout),
        ("commcore-port:1;unix=a".into(), PortError::Layout),
        (std::format!("commcore-port:1;unix=;{token}"), PortError::BadValue(Field::Unix)),
        (std::format!("commcore-port:1;tcp=1.2.3.4;{token}"), PortError::BadValue(Field::Tcp)),
        (std::format!("commcore-port:1;tcp=1.2.3.4:0;{token}"), PortError::BadValue(Field::Tcp)),
        (std::format!("commcore-port:1;tcp=[::0001]:80;{token}"), PortError::BadValue(Field::Tcp)),
        (std::format!("commcore-port:1;tcp=01.2.3.4:80;{token}"), PortError::BadValue(Field::Tcp)),
        (
            "commcore-port:1;unix=a;token=00112233445566778899AABBCCDDEEFF".into(),
            PortError::BadValue(Field::Token),
        ),
        ("commcore-port:1;unix=a;token=0011".into(), PortError::BadValue(Field::Token)),
        (std::format!("commcore-port:1;unix=a b;{token}"), PortError::NotPrintable { at: 22 }),
        ("x".repeat(PORT_NAME_MAX + 1), PortError::TooLong { len: PORT_NAME_MAX + 1 }),
    ];
    for (text, error) in cases {
        assert_eq!(PortName::parse(text.as_bytes()), Err(*error), "{text}");
        assert!(!std::format!("{error}").is_empty());
    }
}

#[test]
fn tokens_match_only_themselves() {
    let mut other = TOKEN;
    assert!(TOKEN.matches(&other));
    for i in 0..TOKEN_BYTES {
        other.0[i] ^= 1;
        assert!(!TOKEN.matches(&other), "a difference in byte {i} is seen");
        other.0[i] ^= 1;
    }
    assert_eq!(std::format!("{TOKEN:?}"), "Token(..)");
}

fn any_socket_addr() -> impl Strategy<Value = SocketAddr> {
    prop_oneof![
        (any::<u32>(), 1..=u16::MAX).prop_map(|(ip, p)| SocketAddr::from((Ipv4Addr::from(ip), p))),
        (any::<u128>(), 1..=u16::MAX).prop_map(|(ip, p)| SocketAddr::from((Ipv6Addr::from(ip), p))),
    ]
}

fn any_port() -> impl Strategy<Value = (Option<String>, Option<SocketAddr>, [u8; 16])> {
    (
        proptest::option::of("[A-Za-z0-9._/-]{1,107}"),
        proptest::option::of(any_socket_addr()),
        any::<[u8; 16]>(),
    )
        .prop_filter("one address at least", |(u, t, _)| u.is_some() || t.is_some())
}

proptest! {
    // Slow under miri, and core has no unsafe code for it to check here.
    #[test]
    #[cfg_attr(miri, ignore)]
    fn every_port_round_trips((unix, tcp, token) in any_port()) {
        let port = PortName { unix: unix.as_deref(), tcp, token: Token(token) };
        let text = encoded(&port);
        prop_assert!(text.len() <= PORT_NAME_MAX);
        prop_assert_eq!(PortName::parse(&text), Ok(port));
    }

    #[test]
    #[cfg_attr(miri, ignore)]
    fn every_truncation_is_an_error((unix, tcp, token) in any_port()) {
        let port = PortName { unix: unix.as_deref(), tcp, token: Token(token) };
        let text = encoded(&port);
        for len in 0..text.len() {
            prop_assert!(PortName::parse(&text[..len]).is_err(), "prefix of {} bytes", len);
        }
    }

    #[test]
    #[cfg_attr(miri, ignore)]
    fn every_corruption_is_an_error_or_another_valid_port(
        (unix, tcp, token) in any_port(), at in any::<usize>(), byte in any::<u8>()
    ) {
        let port = PortName { unix: unix.as_deref(), tcp, token: Token(token) };
        let mut text = encoded(&port);
        let at = at % text.len();
        prop_assume!(text[at] != byte);
        text[at] = byte;
        // A changed byte either breaks the name or spells a different, canonical port
        // (another name, address digit or token digit): never the same port, never a panic.
        if let Ok(other) = PortName::parse(&text) {
            prop_assert_ne!(other, port);
            prop_assert_eq!(encoded(&other), text);
        }
    }

    #[test]
    #[cfg_attr(miri, ignore)]
    fn arbitrary_bytes_never_panic(text in proptest::collection::vec(any::<u8>(), 0..1100)) {
        if let Ok(port) = PortName::parse(&text) {
            prop_assert_eq!(encoded(&port), text);
        }
    }
}
