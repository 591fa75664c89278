//! The RTR client against a scripted cache.
//!
//! Each test plays the cache itself, on the test's thread: a
//! `TcpListener` on 127.0.0.1 port 0, answering with `Pdu::encode`, while
//! the client runs on its own thread and reports its events through a
//! channel. Every wait is bounded (`WAIT` for a connection, a PDU or an
//! event), and every client is stopped (or dropped, which joins it, when a
//! test fails half-way).

use std::collections::BTreeSet;
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

use ipfib::prefix::AnyPrefix;
use ipfib_rpki::rtr::pdu::code;
use ipfib_rpki::rtr::{Event, Pdu, RtrClient, RtrOptions, Timers};
use ipfib_rpki::{Aspa, Live, RouteOrigin, Rov, Vrp};

/// The longest any one step waits for the other side.
const WAIT: Duration = Duration::from_secs(5);

/// An [`Event`] the test can keep.
#[derive(Clone, Debug, PartialEq)]
enum Ev {
    Data(Data),
    Expired,
    Problem(String),
    Connected(u8),
}

#[derive(Clone, Debug, PartialEq)]
struct Data {
    vrps: BTreeSet<Vrp>,
    aspas: Vec<Aspa>,
    /// (added, removed) of an incremental answer.
    changes: Option<(BTreeSet<Vrp>, BTreeSet<Vrp>)>,
    session: u16,
    serial: u32,
    version: u8,
}

fn spawn(addr: SocketAddr, opts: RtrOptions) -> (RtrClient, Receiver<Ev>) {
    let (tx, rx) = mpsc::channel();
    let client = RtrClient::spawn(addr.to_string(), opts, move |ev| {
        let ev = match ev {
            Event::Data {
                vrps,
                aspas,
                changes,
                session,
                serial,
                version,
            } => Ev::Data(Data {
                vrps: vrps.iter().copied().collect(),
                aspas: aspas.to_vec(),
                changes: changes.map(|c| {
                    (
                        c.added.iter().copied().collect(),
                        c.removed.iter().copied().collect(),
                    )
                }),
                session,
                serial,
                version,
            }),
            Event::Expired => Ev::Expired,
            Event::Problem(p) => Ev::Problem(p),
            Event::Connected { version } => Ev::Connected(version),
        };
        let _ = tx.send(ev);
    });
    (client, rx)
}

/// Options for a test: a short retry so reconnections are quick.
fn quick() -> RtrOptions {
    RtrOptions {
        connect_timeout: Duration::from_secs(2),
        max_retry: Some(Duration::from_millis(50)),
        ..RtrOptions::default()
    }
}

/// The next Data event, skipping connection notes and problems; panics on
/// Expired or when none comes within [`WAIT`].
fn next_data(rx: &Receiver<Ev>) -> Data {
    let deadline = Instant::now() + WAIT;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(Ev::Data(d)) => return d,
            Ok(Ev::Expired) => panic!("Expired while waiting for data"),
            Ok(_) => {}
            Err(e) => panic!("no Data event within {WAIT:?}: {e}"),
        }
    }
}

/// Every event already reported.
fn drain(rx: &Receiver<Ev>) -> Vec<Ev> {
    rx.try_iter().collect()
}

/// Asserts no event reported so far is a Data event.
fn assert_no_data(rx: &Receiver<Ev>, when: &str) {
    let evs = drain(rx);
    assert!(
        !evs.iter().any(|e| matches!(e, Ev::Data(_))),
        "{when}: a Data event was reported: {evs:?}"
    );
}

/// The fake cache.
struct Cache {
    listener: TcpListener,
}

impl Cache {
    fn new() -> Cache {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        listener
            .set_nonblocking(true)
            .expect("non-blocking listener");
        Cache { listener }
    }

    fn addr(&self) -> SocketAddr {
        self.listener.local_addr().expect("listener address")
    }

    /// The client's next connection.
    fn accept(&self) -> Conn {
        let deadline = Instant::now() + WAIT;
        loop {
            match self.listener.accept() {
                Ok((s, _)) => {
                    s.set_nonblocking(false).expect("blocking stream");
                    s.set_read_timeout(Some(Duration::from_millis(20)))
                        .expect("read timeout");
                    s.set_nodelay(true).expect("nodelay");
                    return Conn { s, buf: Vec::new() };
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => {
                    assert!(
                        Instant::now() < deadline,
                        "the client did not connect within {WAIT:?}"
                    );
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(e) => panic!("accept: {e}"),
            }
        }
    }
}

/// One connection from the client.
struct Conn {
    s: TcpStream,
    buf: Vec<u8>,
}

/// What one read on a connection gave.
enum Got {
    Bytes,
    Nothing,
    Closed,
}

impl Conn {
    fn read_some(&mut self) -> Got {
        let mut chunk = [0u8; 4096];
        match self.s.read(&mut chunk) {
            Ok(0) => Got::Closed,
            Ok(n) => {
                self.buf.extend_from_slice(&chunk[..n]);
                Got::Bytes
            }
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                Got::Nothing
            }
            Err(e) if e.kind() == ErrorKind::ConnectionReset => Got::Closed,
            Err(e) => panic!("read from the client: {e}"),
        }
    }

    fn send(&mut self, pdus: &[Pdu]) {
        let bytes: Vec<u8> = pdus.iter().flat_map(|p| p.encode()).collect();
        self.send_raw(&bytes);
    }

    fn send_raw(&mut self, bytes: &[u8]) {
        self.s.write_all(bytes).expect("write to the client");
    }

    /// The client's next PDU.
    fn recv(&mut self) -> Pdu {
        let deadline = Instant::now() + WAIT;
        loop {
            if let Some((pdu, n)) = Pdu::decode(&self.buf).expect("the client's PDU decodes") {
                self.buf.drain(..n);
                return pdu;
            }
            assert!(
                Instant::now() < deadline,
                "no PDU from the client within {WAIT:?}"
            );
            if let Got::Closed = self.read_some() {
                panic!("the client closed the connection while a PDU was awaited");
            }
        }
    }

    /// Waits for the client to close the connection, sending nothing more.
    fn closed(mut self) {
        let deadline = Instant::now() + WAIT;
        loop {
            assert!(
                self.buf.is_empty(),
                "the client sent {:?} instead of closing",
                Pdu::decode(&self.buf)
            );
            assert!(
                Instant::now() < deadline,
                "the client did not close the connection within {WAIT:?}"
            );
            if let Got::Closed = self.read_some() {
                return;
            }
        }
    }

    /// Asserts the client sends nothing for `d`.
    /// The cache ends the connection.
    fn closed_by_cache(self) {
        let _ = self.s.shutdown(std::net::Shutdown::Both);
    }

    fn quiet(&mut self, d: Duration) {
        let until = Instant::now() + d;
        while Instant::now() < until {
            if let Got::Closed = self.read_some() {
                panic!("the client closed the connection");
            }
            assert!(
                self.buf.is_empty(),
                "the client sent {:?}",
                Pdu::decode(&self.buf)
            );
        }
    }
}

fn prefix(p: &str) -> AnyPrefix {
    p.parse().expect("a prefix")
}

fn vrp(p: &str, max_len: u8, asn: u32) -> Vrp {
    Vrp::new(prefix(p), max_len, asn).expect("a VRP")
}

fn announce(version: u8, v: Vrp) -> Pdu {
    Pdu::Prefix {
        version,
        announce: true,
        prefix: v.prefix,
        max_len: v.max_len,
        asn: v.asn,
    }
}

fn withdraw(version: u8, v: Vrp) -> Pdu {
    Pdu::Prefix {
        version,
        announce: false,
        prefix: v.prefix,
        max_len: v.max_len,
        asn: v.asn,
    }
}

fn aspa(version: u8, customer: u32, providers: &[u32]) -> Pdu {
    Pdu::Aspa {
        version,
        announce: true,
        customer,
        providers: providers.to_vec(),
    }
}

fn aspa_withdraw(version: u8, customer: u32) -> Pdu {
    Pdu::Aspa {
        version,
        announce: false,
        customer,
        providers: Vec::new(),
    }
}

const TIMERS: Timers = Timers {
    refresh: 3600,
    retry: 600,
    expire: 7200,
};

fn end(version: u8, session: u16, serial: u32) -> Pdu {
    Pdu::EndOfData {
        version,
        session,
        serial,
        timers: (version > 0).then_some(TIMERS),
    }
}

const SESSION: u16 = 7;

/// The first full set: IPv4 and IPv6 prefixes and ASPAs.
fn full_vrps() -> Vec<Vrp> {
    vec![
        vrp("192.0.2.0/24", 24, 64500),
        vrp("198.51.100.0/22", 24, 64501),
        vrp("10.0.0.0/8", 16, 64500),
        vrp("2001:db8::/32", 48, 64502),
        vrp("2001:db8:1::/48", 48, 64500),
    ]
}

/// Answers a Reset Query with [`full_vrps`] and two ASPAs at `serial`, and
/// returns what the client must report.
fn answer_full(conn: &mut Conn, serial: u32) -> Data {
    let mut pdus = vec![Pdu::CacheResponse {
        version: 2,
        session: SESSION,
    }];
    pdus.extend(full_vrps().into_iter().map(|v| announce(2, v)));
    // A Router Key is taken and not kept.
    pdus.push(Pdu::RouterKey { version: 2 });
    pdus.push(aspa(2, 64500, &[64502, 64501]));
    pdus.push(aspa(2, 64503, &[]));
    pdus.push(end(2, SESSION, serial));
    conn.send(&pdus);
    Data {
        changes: None,
        vrps: full_vrps().into_iter().collect(),
        aspas: vec![
            Aspa::new(64500, vec![64501, 64502]),
            Aspa::new(64503, vec![]),
        ],
        session: SESSION,
        serial,
        version: 2,
    }
}

/// Connects, answers the Reset Query with the full set, checks the Data.
fn synced(cache: &Cache, rx: &Receiver<Ev>, serial: u32) -> (Conn, Data) {
    let mut conn = cache.accept();
    assert_eq!(conn.recv(), Pdu::ResetQuery { version: 2 });
    let want = answer_full(&mut conn, serial);
    assert_eq!(next_data(rx), want);
    (conn, want)
}

#[test]
fn reset_query_is_answered_with_prefixes_and_aspas() {
    let cache = Cache::new();
    let (client, rx) = spawn(cache.addr(), quick());
    let (mut conn, _) = synced(&cache, &rx, 42);
    // Nothing else was reported but the connection, and the client sends
    // nothing until its refresh (an hour away).
    let evs = drain(&rx);
    assert!(evs.is_empty(), "{evs:?}");
    conn.quiet(Duration::from_millis(300));
    client.stop();
}

#[test]
fn serial_notify_leads_to_an_incremental_update() {
    let cache = Cache::new();
    let (client, rx) = spawn(cache.addr(), quick());
    let (mut conn, mut want) = synced(&cache, &rx, 42);

    // Two notifies: one query (the second arrives while it is out).
    let notify = Pdu::SerialNotify {
        version: 2,
        session: SESSION,
        serial: 43,
    };
    conn.send(&[notify.clone(), notify]);
    assert_eq!(
        conn.recv(),
        Pdu::SerialQuery {
            version: 2,
            session: SESSION,
            serial: 42
        }
    );
    let gone = [
        vrp("192.0.2.0/24", 24, 64500),
        vrp("2001:db8:1::/48", 48, 64500),
    ];
    let new = [
        vrp("203.0.113.0/24", 24, 64510),
        vrp("2001:db8:2::/48", 64, 64511),
    ];
    let mut pdus = vec![Pdu::CacheResponse {
        version: 2,
        session: SESSION,
    }];
    pdus.extend(gone.iter().map(|&v| withdraw(2, v)));
    pdus.extend(new.iter().map(|&v| announce(2, v)));
    // Net of each other: announced then withdrawn (no change), a VRP held
    // announced again (none), a withdrawal of one never held (none).
    let brief = vrp("198.51.100.0/24", 24, 64512);
    pdus.push(announce(2, brief));
    pdus.push(withdraw(2, brief));
    pdus.push(announce(2, new[0]));
    pdus.push(withdraw(2, vrp("198.18.0.0/15", 15, 64513)));
    pdus.push(aspa_withdraw(2, 64503));
    pdus.push(aspa(2, 64500, &[64520]));
    pdus.push(aspa(2, 64530, &[1, 2]));
    pdus.push(end(2, SESSION, 43));
    conn.send(&pdus);

    for v in &gone {
        want.vrps.remove(v);
    }
    want.vrps.extend(new);
    want.aspas = vec![Aspa::new(64500, vec![64520]), Aspa::new(64530, vec![1, 2])];
    want.serial = 43;
    want.changes = Some((new.into_iter().collect(), gone.into_iter().collect()));
    assert_eq!(next_data(&rx), want);
    // The second notify did not make a second query.
    conn.quiet(Duration::from_millis(300));

    // And the next notify asks from the new serial.
    conn.send(&[Pdu::SerialNotify {
        version: 2,
        session: SESSION,
        serial: 44,
    }]);
    assert_eq!(
        conn.recv(),
        Pdu::SerialQuery {
            version: 2,
            session: SESSION,
            serial: 43
        }
    );
    client.stop();
}

#[test]
fn cache_reset_leads_to_a_reset_query() {
    let cache = Cache::new();
    let (client, rx) = spawn(cache.addr(), quick());
    let (mut conn, _) = synced(&cache, &rx, 42);
    conn.send(&[Pdu::SerialNotify {
        version: 2,
        session: SESSION,
        serial: 43,
    }]);
    assert!(matches!(conn.recv(), Pdu::SerialQuery { serial: 42, .. }));
    conn.send(&[Pdu::CacheReset { version: 2 }]);
    assert_eq!(conn.recv(), Pdu::ResetQuery { version: 2 });
    assert_no_data(&rx, "after a Cache Reset");

    // A new session with a different set: nothing of the old one remains.
    let kept = vrp("10.0.0.0/8", 16, 64500);
    let added = vrp("2001:db8:ff::/48", 48, 64599);
    conn.send(&[
        Pdu::CacheResponse {
            version: 2,
            session: 8,
        },
        announce(2, kept),
        announce(2, added),
        aspa(2, 64599, &[64500]),
        end(2, 8, 1),
    ]);
    assert_eq!(
        next_data(&rx),
        Data {
            changes: None,
            vrps: [kept, added].into_iter().collect(),
            aspas: vec![Aspa::new(64599, vec![64500])],
            session: 8,
            serial: 1,
            version: 2,
        }
    );
    client.stop();
}

#[test]
fn unsupported_version_error_makes_the_client_speak_the_caches_version() {
    let cache = Cache::new();
    // The default retry (600 s before any End of Data): stepping down a
    // version must not wait for it.
    let opts = RtrOptions {
        connect_timeout: Duration::from_secs(2),
        ..RtrOptions::default()
    };
    let (client, rx) = spawn(cache.addr(), opts);
    let mut conn = cache.accept();
    let query = conn.recv();
    assert_eq!(query, Pdu::ResetQuery { version: 2 });
    conn.send(&[Pdu::ErrorReport {
        version: 1,
        code: code::UNSUPPORTED_VERSION,
        pdu: query.encode(),
        text: "version 2 is not supported".into(),
    }]);
    conn.closed();

    let mut conn = cache.accept();
    assert_eq!(conn.recv(), Pdu::ResetQuery { version: 1 });
    let v = vrp("192.0.2.0/24", 24, 64500);
    conn.send(&[
        Pdu::CacheResponse {
            version: 1,
            session: 3,
        },
        announce(1, v),
        end(1, 3, 10),
    ]);
    let data = next_data(&rx);
    assert_eq!(data.version, 1);
    assert_eq!(data.vrps, [v].into_iter().collect());
    assert_eq!((data.session, data.serial), (3, 10));
    // The session stays at version 1.
    conn.send(&[Pdu::SerialNotify {
        version: 1,
        session: 3,
        serial: 11,
    }]);
    assert_eq!(
        conn.recv(),
        Pdu::SerialQuery {
            version: 1,
            session: 3,
            serial: 10
        }
    );
    client.stop();
}

#[test]
fn version_fallback_steps_down_to_zero() {
    let cache = Cache::new();
    let (client, rx) = spawn(cache.addr(), quick());
    // An error at the query's own version: one step down.
    let mut conn = cache.accept();
    assert_eq!(conn.recv(), Pdu::ResetQuery { version: 2 });
    conn.send(&[Pdu::ErrorReport {
        version: 2,
        code: code::UNSUPPORTED_VERSION,
        pdu: Vec::new(),
        text: String::new(),
    }]);
    conn.closed();
    let mut conn = cache.accept();
    assert_eq!(conn.recv(), Pdu::ResetQuery { version: 1 });
    conn.send(&[Pdu::ErrorReport {
        version: 0,
        code: code::UNSUPPORTED_VERSION,
        pdu: Vec::new(),
        text: "version 0 only".into(),
    }]);
    conn.closed();
    let mut conn = cache.accept();
    assert_eq!(conn.recv(), Pdu::ResetQuery { version: 0 });
    let v = vrp("2001:db8::/32", 32, 64500);
    conn.send(&[
        Pdu::CacheResponse {
            version: 0,
            session: 1,
        },
        announce(0, v),
        end(0, 1, 5),
    ]);
    let data = next_data(&rx);
    assert_eq!((data.version, data.session, data.serial), (0, 1, 5));
    assert_eq!(data.vrps, [v].into_iter().collect());
    let evs = drain(&rx);
    assert!(!evs.contains(&Ev::Connected(2)), "{evs:?}");
    client.stop();
}

#[test]
fn a_cache_response_at_a_lower_version_is_adopted() {
    let cache = Cache::new();
    let (client, rx) = spawn(cache.addr(), quick());
    let mut conn = cache.accept();
    assert_eq!(conn.recv(), Pdu::ResetQuery { version: 2 });
    let v = vrp("192.0.2.0/24", 24, 64500);
    conn.send(&[
        Pdu::CacheResponse {
            version: 1,
            session: 9,
        },
        announce(1, v),
        end(1, 9, 100),
    ]);
    let data = next_data(&rx);
    assert_eq!((data.version, data.session, data.serial), (1, 9, 100));
    assert_eq!(data.vrps, [v].into_iter().collect());
    conn.send(&[Pdu::SerialNotify {
        version: 1,
        session: 9,
        serial: 101,
    }]);
    assert_eq!(
        conn.recv(),
        Pdu::SerialQuery {
            version: 1,
            session: 9,
            serial: 100
        }
    );
    // A PDU of the old version inside the response is an error.
    conn.send(&[
        Pdu::CacheResponse {
            version: 1,
            session: 9,
        },
        announce(2, vrp("198.51.100.0/24", 24, 1)),
    ]);
    match conn.recv() {
        Pdu::ErrorReport { code: c, .. } => assert_eq!(c, code::UNEXPECTED_VERSION),
        p => panic!("want an Error Report, got {p:?}"),
    }
    conn.closed();
    assert_no_data(&rx, "after a PDU of another version");
    client.stop();
}

#[test]
fn a_serial_query_answered_at_a_lower_version_is_not_taken_as_a_whole_set() {
    // Session ids and serials belong to one version (RFC 8210 §7): changes
    // answered at another version cannot be applied, and must never be
    // reported as the whole set.
    let cache = Cache::new();
    let (client, rx) = spawn(cache.addr(), quick());
    let (mut conn, _) = synced(&cache, &rx, 42);
    conn.send(&[Pdu::SerialNotify {
        version: 2,
        session: SESSION,
        serial: 43,
    }]);
    assert!(matches!(conn.recv(), Pdu::SerialQuery { version: 2, .. }));
    conn.send(&[
        Pdu::CacheResponse {
            version: 1,
            session: SESSION,
        },
        announce(1, vrp("203.0.113.0/24", 24, 64510)),
        end(1, SESSION, 43),
    ]);
    conn.closed();
    let mut conn = cache.accept();
    assert_eq!(conn.recv(), Pdu::ResetQuery { version: 1 });
    assert_no_data(&rx, "after changes at a lower version");
    let all = vrp("203.0.113.0/24", 24, 64510);
    conn.send(&[
        Pdu::CacheResponse {
            version: 1,
            session: SESSION,
        },
        announce(1, vrp("192.0.2.0/24", 24, 64500)),
        announce(1, all),
        end(1, SESSION, 43),
    ]);
    let data = next_data(&rx);
    assert_eq!(data.version, 1);
    assert_eq!(
        data.vrps,
        [vrp("192.0.2.0/24", 24, 64500), all].into_iter().collect()
    );
    assert!(data.aspas.is_empty());
    client.stop();
}

#[test]
fn a_connection_lost_mid_response_asks_for_everything_again() {
    let cache = Cache::new();
    let (client, rx) = spawn(cache.addr(), quick());
    let (mut conn, _) = synced(&cache, &rx, 42);
    conn.send(&[Pdu::SerialNotify {
        version: 2,
        session: SESSION,
        serial: 43,
    }]);
    assert!(matches!(conn.recv(), Pdu::SerialQuery { serial: 42, .. }));
    // Half a response: a withdrawal, an announcement, half a PDU, gone.
    conn.send(&[
        Pdu::CacheResponse {
            version: 2,
            session: SESSION,
        },
        withdraw(2, vrp("192.0.2.0/24", 24, 64500)),
        announce(2, vrp("203.0.113.0/24", 24, 64510)),
        aspa_withdraw(2, 64500),
    ]);
    let half = announce(2, vrp("198.18.0.0/15", 15, 64511)).encode();
    conn.send_raw(&half[..half.len() / 2]);
    drop(conn);

    let mut conn = cache.accept();
    assert_eq!(conn.recv(), Pdu::ResetQuery { version: 2 });
    assert_no_data(&rx, "after half a response");
    let only = vrp("198.51.100.0/24", 24, 64501);
    conn.send(&[
        Pdu::CacheResponse {
            version: 2,
            session: SESSION,
        },
        announce(2, only),
        end(2, SESSION, 44),
    ]);
    assert_eq!(
        next_data(&rx),
        Data {
            changes: None,
            vrps: [only].into_iter().collect(),
            aspas: Vec::new(),
            session: SESSION,
            serial: 44,
            version: 2,
        }
    );
    client.stop();
}

#[test]
fn data_expires_when_the_cache_goes_away() {
    let cache = Cache::new();
    // The cache's timers, uncapped.
    let opts = RtrOptions {
        connect_timeout: Duration::from_secs(2),
        ..RtrOptions::default()
    };
    let (client, rx) = spawn(cache.addr(), opts);
    let mut conn = cache.accept();
    assert_eq!(conn.recv(), Pdu::ResetQuery { version: 2 });
    let v = vrp("192.0.2.0/24", 24, 64500);
    let sent = Instant::now();
    conn.send(&[
        Pdu::CacheResponse {
            version: 2,
            session: SESSION,
        },
        announce(2, v),
        Pdu::EndOfData {
            version: 2,
            session: SESSION,
            serial: 1,
            timers: Some(Timers {
                refresh: 3600,
                retry: 1,
                expire: 2,
            }),
        },
    ]);
    assert_eq!(next_data(&rx).vrps, [v].into_iter().collect());
    drop(conn);
    drop(cache);

    let deadline = sent + Duration::from_secs(4);
    let mut problems = 0;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(Ev::Expired) => break,
            Ok(Ev::Problem(_)) => problems += 1,
            Ok(Ev::Connected(_)) => {}
            Ok(Ev::Data(d)) => panic!("data from a closed cache: {d:?}"),
            Err(_) => panic!("no Expired event within 4 s of the End of Data"),
        }
    }
    let after = sent.elapsed();
    assert!(
        after >= Duration::from_millis(1500),
        "expired after {after:?}, before the 2 s expire interval"
    );
    assert!(after < Duration::from_secs(3), "expired after {after:?}");
    // The loss and at least one failed reconnection (retry 1 s).
    assert!(problems >= 2, "{problems} problems reported");
    client.stop();
}

#[test]
fn malformed_pdus_get_an_error_report_and_a_reconnection() {
    let cache = Cache::new();
    let (client, rx) = spawn(cache.addr(), quick());

    let good = announce(2, vrp("10.0.0.0/8", 8, 64500)).encode();
    // An IPv4 Prefix PDU of 16 bytes (its length says so).
    let mut short = good[..16].to_vec();
    short[7] = 16;
    // Host bits: 10.0.0.1/8.
    let mut host_bits = good.clone();
    host_bits[15] = 1;
    // A length under the header's 8 bytes.
    let tiny = vec![2, 4, 0, 0, 0, 0, 0, 4];
    // PDU type 5 (none).
    let unknown = vec![2, 5, 0, 0, 0, 0, 0, 8];
    // A max length under the prefix length.
    let mut max_len = good.clone();
    max_len[10] = 7;
    // (what, bytes, code, whether the PDU's extent is known).
    let cases: [(&str, Vec<u8>, u16, bool); 5] = [
        ("short length", short, code::CORRUPT_DATA, true),
        ("host bits", host_bits, code::CORRUPT_DATA, true),
        ("length under 8", tiny, code::CORRUPT_DATA, false),
        ("unknown type", unknown, code::UNSUPPORTED_PDU_TYPE, true),
        ("max length", max_len, code::CORRUPT_DATA, true),
    ];
    for (what, bad, want, framed) in cases {
        let mut conn = cache.accept();
        assert_eq!(conn.recv(), Pdu::ResetQuery { version: 2 }, "{what}");
        let mut bytes = Pdu::CacheResponse {
            version: 2,
            session: SESSION,
        }
        .encode();
        bytes.extend_from_slice(&good);
        bytes.extend_from_slice(&bad);
        // What follows the bad PDU is never taken.
        bytes.extend_from_slice(&end(2, SESSION, 1).encode());
        conn.send_raw(&bytes);
        match conn.recv() {
            Pdu::ErrorReport {
                version,
                code: c,
                pdu,
                text,
            } => {
                assert_eq!(version, 2, "{what}");
                assert_eq!(c, want, "{what}: {text}");
                if framed {
                    assert_eq!(pdu, bad, "{what}: the PDU in error, and only it");
                } else {
                    assert!(pdu.starts_with(&bad), "{what}: {pdu:?}");
                }
            }
            p => panic!("{what}: want an Error Report, got {p:?}"),
        }
        conn.closed();
        assert_no_data(&rx, what);
    }

    // The client still takes a good answer, and only it.
    let (_conn, _) = synced(&cache, &rx, 2);
    client.stop();
}

#[test]
fn live_publishes_each_update() {
    let cache = Cache::new();
    let live = Live::new(Vec::new());
    live.add_rtr(cache.addr().to_string(), quick());
    let route = prefix("192.0.2.0/24");
    assert_eq!(
        live.load().vrps.validate(&route, RouteOrigin::As(64500)),
        Rov::NotFound
    );

    /// Waits for a snapshot with the source at `serial`.
    fn published(live: &Live, serial: u32) -> std::sync::Arc<ipfib_rpki::Snapshot> {
        let deadline = Instant::now() + WAIT;
        loop {
            let snap = live.load();
            if snap.sources[0].serial == Some((SESSION, serial)) {
                return snap;
            }
            assert!(
                Instant::now() < deadline,
                "serial {serial} not published within {WAIT:?}: {:?}",
                snap.sources
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    let mut conn = cache.accept();
    assert_eq!(conn.recv(), Pdu::ResetQuery { version: 2 });
    conn.send(&[
        Pdu::CacheResponse {
            version: 2,
            session: SESSION,
        },
        announce(2, vrp("192.0.2.0/24", 24, 64500)),
        aspa(2, 64500, &[64501]),
        end(2, SESSION, 1),
    ]);
    let snap = published(&live, 1);
    assert_eq!(
        snap.vrps.validate(&route, RouteOrigin::As(64500)),
        Rov::Valid
    );
    assert_eq!(
        snap.vrps.validate(&route, RouteOrigin::As(64501)),
        Rov::InvalidOrigin
    );
    assert_eq!(snap.aspas.get(64500), Some(&[64501][..]));
    let s = &snap.sources[0];
    assert_eq!(s.state, "synced");
    assert_eq!((s.vrps, s.aspas, s.version), (1, 1, Some(2)));
    let generation = snap.generation;

    conn.send(&[Pdu::SerialNotify {
        version: 2,
        session: SESSION,
        serial: 2,
    }]);
    assert!(matches!(conn.recv(), Pdu::SerialQuery { serial: 1, .. }));
    conn.send(&[
        Pdu::CacheResponse {
            version: 2,
            session: SESSION,
        },
        withdraw(2, vrp("192.0.2.0/24", 24, 64500)),
        announce(2, vrp("192.0.2.0/23", 23, 64501)),
        aspa_withdraw(2, 64500),
        end(2, SESSION, 2),
    ]);
    let snap = published(&live, 2);
    assert!(snap.generation > generation);
    assert_eq!(
        snap.vrps.validate(&route, RouteOrigin::As(64500)),
        Rov::InvalidOrigin
    );
    assert_eq!(
        snap.vrps.validate(&route, RouteOrigin::As(64501)),
        Rov::InvalidLength
    );
    assert_eq!(
        snap.vrps
            .validate(&prefix("192.0.2.0/23"), RouteOrigin::As(64501)),
        Rov::Valid
    );
    assert!(snap.aspas.is_empty());
    live.stop();
}

#[test]
fn a_cache_over_the_limits_is_refused() {
    let cache = Cache::new();
    let opts = RtrOptions {
        max_vrps: 3,
        max_aspa_providers: 4,
        ..quick()
    };
    let (client, rx) = spawn(cache.addr(), opts);
    let cases: [(&str, Vec<Pdu>); 2] = [
        (
            "VRPs",
            ["10.0.0.0/8", "11.0.0.0/8", "12.0.0.0/8", "13.0.0.0/8"]
                .iter()
                .map(|p| announce(2, vrp(p, 8, 64500)))
                .collect(),
        ),
        (
            "ASPA providers",
            vec![
                aspa(2, 1, &[2, 3, 3]),
                aspa(2, 1, &[2, 3]),
                aspa(2, 4, &[5, 6, 7]),
            ],
        ),
    ];
    for (what, pdus) in cases {
        let mut conn = cache.accept();
        assert_eq!(conn.recv(), Pdu::ResetQuery { version: 2 }, "{what}");
        let mut all = vec![Pdu::CacheResponse {
            version: 2,
            session: SESSION,
        }];
        all.extend(pdus);
        all.push(end(2, SESSION, 1));
        conn.send(&all);
        match conn.recv() {
            Pdu::ErrorReport { code: c, text, .. } => {
                assert_eq!(c, code::INTERNAL_ERROR, "{what}: {text}");
                assert!(text.contains("more than"), "{what}: {text}");
            }
            p => panic!("{what}: want an Error Report, got {p:?}"),
        }
        conn.closed();
        assert_no_data(&rx, what);
    }
    // At the limits exactly (a duplicate provider counted once, a
    // replaced ASPA's providers given back): taken.
    let mut conn = cache.accept();
    assert_eq!(conn.recv(), Pdu::ResetQuery { version: 2 });
    conn.send(&[
        Pdu::CacheResponse {
            version: 2,
            session: SESSION,
        },
        announce(2, vrp("10.0.0.0/8", 8, 64500)),
        announce(2, vrp("11.0.0.0/8", 8, 64500)),
        announce(2, vrp("12.0.0.0/8", 8, 64500)),
        announce(2, vrp("12.0.0.0/8", 8, 64500)),
        aspa(2, 1, &[2, 3, 3]),
        aspa(2, 1, &[2, 3, 4]),
        aspa_withdraw(2, 1),
        aspa(2, 4, &[5, 6, 7, 8]),
        end(2, SESSION, 1),
    ]);
    let d = next_data(&rx);
    assert_eq!(d.vrps.len(), 3);
    assert_eq!(d.aspas.len(), 1);
    client.stop();
}

/// An ASPA announced with no providers counts one against
/// `max_aspa_providers` (it still holds a customer): a cache cannot make
/// the client hold any number of customers.
#[test]
fn empty_provider_aspas_count_against_the_limit() {
    let cache = Cache::new();
    let opts = RtrOptions {
        max_aspa_providers: 4,
        ..quick()
    };
    let (client, rx) = spawn(cache.addr(), opts);
    let mut conn = cache.accept();
    assert_eq!(conn.recv(), Pdu::ResetQuery { version: 2 });
    let mut all = vec![Pdu::CacheResponse {
        version: 2,
        session: SESSION,
    }];
    all.extend((1..=10_000).map(|c| aspa(2, c, &[])));
    all.push(end(2, SESSION, 1));
    conn.send(&all);
    // Refused like any cache over the limit: an Error Report, no Data.
    match conn.recv() {
        Pdu::ErrorReport { code: c, text, .. } => {
            assert_eq!(c, code::INTERNAL_ERROR, "{text}");
        }
        p => panic!("want an Error Report, got {p:?}"),
    }
    conn.closed();
    assert_no_data(&rx, "10,000 ASPAs with max_aspa_providers = 4");
    client.stop();
}

/// An expire interval shorter than the refresh interval (a cache's
/// timers, or `--rtr-expire 600` against a cache refreshing hourly): the
/// client refreshes at half the expire interval, so the data never
/// expires while the cache answers.
#[test]
fn refresh_comes_before_expiry() {
    let cache = Cache::new();
    let opts = RtrOptions {
        max_expire: Some(Duration::from_millis(500)),
        ..quick()
    };
    let (client, rx) = spawn(cache.addr(), opts);
    // End of Data says refresh 3600, expire 7200; the cap makes it 0.5 s.
    let (mut conn, _) = synced(&cache, &rx, 42);
    let deadline = Instant::now() + WAIT;
    loop {
        match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(Ev::Expired) => break,
            Ok(_) => {}
            Err(e) => panic!("no expiry: {e}"),
        }
    }
    // The client should have asked (refresh capped under expire) before
    // dropping the data; it asks nothing for the next hour.
    let asked = (|| {
        let until = Instant::now() + Duration::from_secs(2);
        while Instant::now() < until {
            if let Got::Closed = conn.read_some() {
                return false;
            }
            if !conn.buf.is_empty() {
                return true;
            }
        }
        false
    })();
    client.stop();
    assert!(asked, "data expired and no query was sent to refresh it");
}

/// A Serial Notify for a newer serial that arrives while a response is
/// being received is asked for right after End of Data, not at the next
/// refresh (an hour by default).
#[test]
fn serial_notify_during_a_response_is_asked_after_it() {
    let cache = Cache::new();
    let (client, rx) = spawn(cache.addr(), quick());
    let (mut conn, _) = synced(&cache, &rx, 42);
    conn.send(&[Pdu::SerialNotify {
        version: 2,
        session: SESSION,
        serial: 43,
    }]);
    assert!(matches!(conn.recv(), Pdu::SerialQuery { serial: 42, .. }));
    conn.send(&[
        Pdu::CacheResponse {
            version: 2,
            session: SESSION,
        },
        announce(2, vrp("203.0.113.0/24", 24, 64510)),
        // The cache has moved on while answering.
        Pdu::SerialNotify {
            version: 2,
            session: SESSION,
            serial: 44,
        },
        end(2, SESSION, 43),
    ]);
    assert_eq!(next_data(&rx).serial, 43);
    let asked = (|| {
        let until = Instant::now() + Duration::from_secs(2);
        while Instant::now() < until {
            if let Got::Closed = conn.read_some() {
                return false;
            }
            if !conn.buf.is_empty() {
                return true;
            }
        }
        false
    })();
    client.stop();
    assert!(
        asked,
        "serial 44 was announced, no Serial Query followed End of Data 43"
    );
}

/// The data expires while a Serial Query is out (a cache slow to answer):
/// the answer on its way holds changes since serial 42, which must never
/// pass for the whole set; the client ends the connection and asks for
/// everything.
#[test]
fn an_incremental_answer_after_expiry_is_not_a_whole_set() {
    let cache = Cache::new();
    let opts = RtrOptions {
        max_expire: Some(Duration::from_millis(500)),
        ..quick()
    };
    let (client, rx) = spawn(cache.addr(), opts);
    let (mut conn, _) = synced(&cache, &rx, 42);
    conn.send(&[Pdu::SerialNotify {
        version: 2,
        session: SESSION,
        serial: 43,
    }]);
    assert!(matches!(conn.recv(), Pdu::SerialQuery { serial: 42, .. }));
    // The cache takes its time: the data expires meanwhile.
    let deadline = Instant::now() + WAIT;
    loop {
        match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(Ev::Expired) => break,
            Ok(_) => {}
            Err(e) => panic!("no expiry: {e}"),
        }
    }
    // Now the answer to the Serial Query: one change since 42.
    let added = vrp("203.0.113.0/24", 24, 64510);
    let _ = conn.s.write_all(
        &[
            Pdu::CacheResponse {
                version: 2,
                session: SESSION,
            },
            announce(2, added),
            end(2, SESSION, 43),
        ]
        .iter()
        .flat_map(|p| p.encode())
        .collect::<Vec<u8>>(),
    );
    // Either no Data (the client asks for everything again) or the whole
    // set at 43; never the delta alone.
    let got = (|| {
        let deadline = Instant::now() + Duration::from_secs(2);
        loop {
            match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                Ok(Ev::Data(d)) => return Some(d),
                Ok(_) => {}
                Err(_) => return None,
            }
        }
    })();
    client.stop();
    if let Some(d) = got {
        assert!(
            d.vrps.len() > 1,
            "serial {}: the changes since 42 were taken as the whole set: {:?}",
            d.serial,
            d.vrps
        );
    }
}

/// A restarted cache (a new session id in the answer to a Serial Query):
/// the client asks for everything at once, not after the retry interval
/// (600 s here) with the old session's data in use meanwhile.
#[test]
fn a_new_session_is_asked_for_everything_at_once() {
    let cache = Cache::new();
    let opts = RtrOptions {
        connect_timeout: Duration::from_secs(2),
        ..RtrOptions::default()
    };
    let (client, rx) = spawn(cache.addr(), opts);
    let (mut conn, _) = synced(&cache, &rx, 42);
    conn.send(&[Pdu::SerialNotify {
        version: 2,
        session: SESSION,
        serial: 43,
    }]);
    assert!(matches!(conn.recv(), Pdu::SerialQuery { serial: 42, .. }));
    conn.send(&[Pdu::CacheResponse {
        version: 2,
        session: SESSION + 1,
    }]);
    let mut conn = cache.accept();
    assert_eq!(conn.recv(), Pdu::ResetQuery { version: 2 });
    client.stop();
}

/// A Serial Notify of another version decides nothing; a cache that
/// answers at a lower version is asked for everything at it, and the same
/// session and serial at another version is another data set (version 1
/// has no ASPAs): `Live` does not keep the version 2 ASPAs as "a refresh
/// that changed nothing".
#[test]
fn live_takes_the_same_serial_at_another_version() {
    let cache = Cache::new();
    let live = Live::new(Vec::new());
    live.add_rtr(cache.addr().to_string(), quick());
    let (mut conn, _) = {
        let mut conn = cache.accept();
        assert_eq!(conn.recv(), Pdu::ResetQuery { version: 2 });
        let d = answer_full(&mut conn, 42);
        (conn, d)
    };
    let deadline = Instant::now() + WAIT;
    while live.load().sources[0].serial != Some((SESSION, 42)) {
        assert!(Instant::now() < deadline, "serial 42 not published");
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(!live.load().aspas.is_empty());
    // A stray Serial Notify of version 1 changes nothing: no query, no
    // reconnection, the session stays at version 2.
    conn.send(&[Pdu::SerialNotify {
        version: 1,
        session: SESSION,
        serial: 42,
    }]);
    conn.quiet(Duration::from_millis(300));
    // The cache restarts speaking version 1: the client reconnects, offers
    // version 2 (it holds a serial, so it asks for changes), and the
    // cache answers at version 1: the client asks for everything at it,
    // and gets the set at the same session and serial, without ASPAs.
    conn.closed_by_cache();
    let mut conn = cache.accept();
    assert_eq!(
        conn.recv(),
        Pdu::SerialQuery {
            version: 2,
            session: SESSION,
            serial: 42
        }
    );
    conn.send(&[Pdu::CacheResponse {
        version: 1,
        session: SESSION,
    }]);
    let mut conn = cache.accept();
    assert_eq!(conn.recv(), Pdu::ResetQuery { version: 1 });
    let mut pdus = vec![Pdu::CacheResponse {
        version: 1,
        session: SESSION,
    }];
    pdus.extend(full_vrps().into_iter().map(|v| announce(1, v)));
    pdus.push(end(1, SESSION, 42));
    conn.send(&pdus);
    let deadline = Instant::now() + Duration::from_secs(2);
    // Wait for the version 1 data (or give up after 2 s).
    while !live.load().aspas.is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    let snap = live.load();
    live.stop();
    assert_eq!(snap.sources[0].version, Some(1), "{:?}", snap.sources);
    assert!(
        snap.aspas.is_empty(),
        "version 2 ASPAs kept: {:?}",
        snap.aspas.to_vec()
    );
}

/// An End of Data of another session than its Cache Response is refused
/// (an Error Report, no Data); a malformed Error Report from the cache is
/// not answered with one (RFC 8210 §5.11), the connection just ends.
#[test]
fn end_of_data_of_another_session_and_bad_error_reports() {
    let cache = Cache::new();
    let (client, rx) = spawn(cache.addr(), quick());
    let mut conn = cache.accept();
    assert_eq!(conn.recv(), Pdu::ResetQuery { version: 2 });
    conn.send(&[
        Pdu::CacheResponse {
            version: 2,
            session: SESSION,
        },
        announce(2, vrp("10.0.0.0/8", 8, 64500)),
        end(2, SESSION.wrapping_add(1), 1),
    ]);
    match conn.recv() {
        Pdu::ErrorReport { code: c, text, .. } => {
            assert_eq!(c, code::CORRUPT_DATA, "{text}");
            assert!(text.contains("session"), "{text}");
        }
        p => panic!("want an Error Report, got {p:?}"),
    }
    conn.closed();
    assert_no_data(&rx, "End of Data of another session");

    let mut conn = cache.accept();
    assert_eq!(conn.recv(), Pdu::ResetQuery { version: 2 });
    // An Error Report whose inner PDU length overruns it.
    let mut bad = Pdu::ErrorReport {
        version: 2,
        code: 2,
        pdu: vec![1, 2],
        text: "x".into(),
    }
    .encode();
    bad[11] = 200;
    conn.send_raw(&bad);
    // No answer: the connection ends without an Error Report.
    conn.closed();
    assert_no_data(&rx, "a malformed Error Report");
    let (_conn, _) = synced(&cache, &rx, 3);
    client.stop();
}
