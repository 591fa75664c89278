#![no_main]
//! RTR PDUs (`ipfib_rpki::rtr::pdu`) on arbitrary bytes, read as a stream
//! the way the client reads a cache's answer: `Pdu::decode` from the front,
//! again after the bytes each PDU took, until more bytes are needed or an
//! error ends the connection. Besides not panicking, every decoded PDU
//! must survive a round trip: its encoding decodes to the same PDU, whole,
//! and encodes to the same bytes again.

use ipfib_rpki::rtr::pdu::{Pdu, MAX_PDU};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut at = 0;
    loop {
        let rest = &data[at..];
        match Pdu::decode(rest) {
            Ok(Some((pdu, used))) => {
                assert!((8..=MAX_PDU as usize).contains(&used) && used <= rest.len());
                assert_eq!(pdu.version(), rest[0]);
                let bytes = pdu.encode();
                let (again, len) = Pdu::decode(&bytes)
                    .unwrap_or_else(|e| panic!("{pdu:?} encoded does not decode: {e}"))
                    .unwrap_or_else(|| panic!("{pdu:?} encoded is not whole"));
                assert_eq!(again, pdu);
                assert_eq!(len, bytes.len());
                assert_eq!(again.encode(), bytes);
                match pdu {
                    // The key is checked for size, not kept.
                    Pdu::RouterKey { .. } => assert_eq!(len, 32),
                    // Text that is not UTF-8 is kept lossily, each bad
                    // sequence as U+FFFD (3 bytes, never fewer).
                    Pdu::ErrorReport { .. } => assert!(len >= used),
                    _ => assert_eq!(len, used),
                }
                at += used;
            }
            Ok(None) => {
                // Only ever for an unfinished PDU.
                if let Some(len) = Pdu::frame_len(rest).expect("the frame decoded before") {
                    assert!(rest.len() < len);
                } else {
                    assert!(rest.len() < 8);
                }
                break;
            }
            Err(e) => {
                assert!(e.code <= 9, "Error Report code {}", e.code);
                break;
            }
        }
    }
});
