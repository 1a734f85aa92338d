#![no_main]
//! Arbitrary bytes read as a port name: parsing never panics, and whatever parses is the
//! one canonical spelling, so encoding it gives the same bytes back; a buffer one byte too
//! short is refused with the size needed.

use commcore::port::{PortError, PortName, PORT_NAME_MAX};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &[u8]| {
    let Ok(port) = PortName::parse(text) else { return };
    let mut buf = [0u8; PORT_NAME_MAX];
    let len = port.encode(&mut buf).expect("a parsed port encodes");
    assert_eq!(&buf[..len], text);
    assert_eq!(port.encode(&mut buf[..len - 1]), Err(PortError::BufferTooSmall { needed: len }));
    assert_eq!(PortName::parse(&buf[..len]), Ok(port));
});
