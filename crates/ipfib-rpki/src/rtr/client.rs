//! One RTR session to one cache, on its own thread.
//!
//! The client keeps its own VRP and ASPA sets, edits them as PDUs arrive,
//! and hands them out (an [`Event::Data`]) only at End of Data, so a
//! consumer only ever sees whole, consistent sets. A connection lost in
//! the middle of a response leaves the client's sets half-edited: it
//! forgets its session, and the next connection asks for everything again
//! (Reset Query); the consumer keeps the last whole set meanwhile.
//!
//! Timers (RFC 8210 §6): after End of Data the client asks for changes
//! every `refresh` seconds, at most half of `expire` (sooner on a Serial
//! Notify, also one that came while a query was out); a failed connection
//! is retried after `retry`; when no End of Data has arrived for `expire`
//! seconds the data is dropped ([`Event::Expired`]): routes keep their last
//! status until then, then become not-found. Version 1 caches send the
//! timers in End of Data; version 0 uses the RFC's defaults (3600, 600,
//! 7200); [`RtrOptions`] can cap each.
//!
//! Versions: the client offers version 2 (ASPA) and steps down to what the
//! cache answers with (a Cache Response of a lower version, or an Error
//! Report "unsupported version"), down to 0. An Error Report makes it ask
//! again at once, not after `retry`; a lower-version answer to a Serial
//! Query is not applied (serials belong to one version): the client asks
//! again at once for everything, at that version.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::pdu::{code, Pdu, Timers};
use crate::aspa::{Aspa, Aspas};
use crate::vrp::{Vrp, VrpSet};

/// Client settings.
#[derive(Clone, Debug)]
pub struct RtrOptions {
    /// The highest protocol version offered (0, 1 or 2).
    pub version: u8,
    pub connect_timeout: Duration,
    /// Caps on the cache's timers (`None`: the cache's value).
    pub max_refresh: Option<Duration>,
    pub max_retry: Option<Duration>,
    pub max_expire: Option<Duration>,
    /// The most VRPs one cache may hold (a cache sending more is refused:
    /// its connection ends with an error, the last whole set stays in use
    /// until it expires). Real caches held about 800K in 2026.
    pub max_vrps: usize,
    /// The most provider ASNs over all of one cache's ASPAs.
    pub max_aspa_providers: usize,
}

impl Default for RtrOptions {
    fn default() -> Self {
        RtrOptions {
            version: 2,
            connect_timeout: Duration::from_secs(10),
            max_refresh: None,
            max_retry: None,
            max_expire: None,
            max_vrps: 10_000_000,
            max_aspa_providers: 10_000_000,
        }
    }
}

/// What a session reports.
pub enum Event<'a> {
    /// A whole, consistent data set, after an End of Data.
    Data {
        vrps: &'a VrpSet,
        aspas: &'a Aspas,
        /// For an answer to a Serial Query, the VRPs it added and removed
        /// (net, against the previous Data's set); `None` after a whole
        /// set (a Reset Query's answer).
        changes: Option<&'a Changes>,
        session: u16,
        serial: u32,
        version: u8,
    },
    /// No End of Data for the expire interval: stop using this cache's data.
    Expired,
    /// A connection or protocol problem (the session carries on: retry).
    Problem(String),
    /// Connected and asking (for logs and status pages).
    Connected { version: u8 },
}

/// What one incremental answer changed in the VRP set.
#[derive(Clone, Debug, Default)]
pub struct Changes {
    pub added: Vec<Vrp>,
    pub removed: Vec<Vrp>,
}

/// [`Changes`] as they accumulate, net of each other.
#[derive(Default)]
struct Pending {
    added: hashbrown::HashSet<Vrp>,
    removed: hashbrown::HashSet<Vrp>,
}

/// A running session; stopped (and its thread joined) by [`RtrClient::stop`]
/// or on drop.
pub struct RtrClient {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl RtrClient {
    /// Starts a session to the cache at `addr` (`host:port`), reporting to
    /// `on_event` from the session's thread.
    pub fn spawn(
        addr: String,
        opts: RtrOptions,
        on_event: impl FnMut(Event<'_>) + Send + 'static,
    ) -> RtrClient {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name(format!("rtr {addr}"))
            .spawn(move || Session::new(addr, opts, flag, Box::new(on_event)).run())
            .expect("spawn the RTR thread");
        RtrClient {
            stop,
            thread: Some(thread),
        }
    }

    /// Stops the session (within the read tick, 200 ms) and joins it.
    pub fn stop(mut self) {
        self.halt();
    }

    /// Tells the session to stop without waiting for it (stop many at
    /// once: signal each, then [`RtrClient::stop`] each).
    pub fn signal(&self) {
        self.stop.store(true, Ordering::Relaxed);
    }

    fn halt(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            // Dropped from its own thread (its event sink held the last
            // owner): the flag ends the loop, there is nothing to join.
            if t.thread().id() != std::thread::current().id() {
                let _ = t.join();
            }
        }
    }
}

impl Drop for RtrClient {
    fn drop(&mut self) {
        self.halt();
    }
}

/// RFC 8210 §6's defaults, for version 0 caches.
const DEFAULT_TIMERS: Timers = Timers {
    refresh: 3600,
    retry: 600,
    expire: 7200,
};

/// How often a blocked read wakes to check timers and the stop flag.
const TICK: Duration = Duration::from_millis(200);

type Sink = Box<dyn FnMut(Event<'_>) + Send>;

struct Session {
    addr: String,
    opts: RtrOptions,
    stop: Arc<AtomicBool>,
    sink: Sink,
    version: u8,
    vrps: VrpSet,
    aspas: Aspas,
    /// (session id, serial) of the last End of Data, while the sets match it.
    state: Option<(u16, u32)>,
    timers: Timers,
    /// When the last End of Data arrived; `None` when no data is held.
    last_data: Option<Instant>,
    /// Provider ASNs over all of `aspas` (bounded by `max_aspa_providers`;
    /// an ASPA without providers counts one).
    aspa_providers: usize,
    /// Inside an answer to a Serial Query: what it changed so far.
    pending: Option<Pending>,
    /// The session id of the Cache Response being answered.
    response_session: Option<u16>,
    /// The serial of a Serial Notify that came while a query was out
    /// (this connection): asked for after End of Data unless it brought it.
    notified: Option<u32>,
}

/// How one connection ended.
enum End {
    Stopped,
    Problem(String),
    /// The version was lowered: ask again at once, at the new version
    /// (8210bis §7: the router sends another query with the cache's
    /// version), not after the retry interval. Versions only go down, so
    /// this happens at most twice in a row.
    Downgraded(String),
    /// Ask for everything again at once (not after the retry interval).
    Again(String),
}

impl Session {
    fn new(addr: String, opts: RtrOptions, stop: Arc<AtomicBool>, sink: Sink) -> Session {
        Session {
            version: opts.version.min(2),
            addr,
            opts,
            stop,
            sink,
            vrps: VrpSet::new(),
            aspas: Aspas::new(),
            state: None,
            timers: DEFAULT_TIMERS,
            last_data: None,
            aspa_providers: 0,
            pending: None,
            response_session: None,
            notified: None,
        }
    }

    fn capped(&self, secs: u32, cap: Option<Duration>) -> Duration {
        let d = Duration::from_secs(secs.max(1) as u64);
        cap.map_or(d, |c| d.min(c))
    }
    /// Refresh, at most half the expire interval: a query goes out (and
    /// has time to be answered) before the data would be dropped.
    fn refresh(&self) -> Duration {
        self.capped(self.timers.refresh, self.opts.max_refresh)
            .min(self.expire() / 2)
    }
    fn retry(&self) -> Duration {
        self.capped(self.timers.retry, self.opts.max_retry)
    }
    fn expire(&self) -> Duration {
        self.capped(self.timers.expire, self.opts.max_expire)
    }

    fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// Drops the data once it is older than the expire interval; true
    /// when it did.
    fn check_expiry(&mut self) -> bool {
        if let Some(t) = self.last_data {
            if t.elapsed() >= self.expire() {
                self.last_data = None;
                self.state = None;
                self.vrps.clear();
                self.aspas.clear();
                self.aspa_providers = 0;
                (self.sink)(Event::Expired);
                return true;
            }
        }
        false
    }

    fn run(mut self) {
        while !self.stopped() {
            match self.connect() {
                Ok(stream) => match self.serve(stream) {
                    End::Stopped => return,
                    End::Problem(p) => (self.sink)(Event::Problem(p)),
                    End::Downgraded(p) | End::Again(p) => {
                        (self.sink)(Event::Problem(p));
                        continue;
                    }
                },
                Err(p) => (self.sink)(Event::Problem(p)),
            }
            // The next connection asks for everything (no serial held):
            // it offers the highest version again, so a cache upgraded
            // since, or one PDU of an older version, does not keep the
            // session at a lower version (and without ASPA) for good.
            if self.state.is_none() {
                self.version = self.opts.version.min(2);
            }
            let until = Instant::now() + self.retry();
            while Instant::now() < until && !self.stopped() {
                self.check_expiry();
                std::thread::sleep(TICK.min(until.saturating_duration_since(Instant::now())));
            }
        }
    }

    fn connect(&self) -> Result<TcpStream, String> {
        let addrs = self
            .addr
            .to_socket_addrs()
            .map_err(|e| format!("{}: {e}", self.addr))?;
        let mut last = format!("{}: no address", self.addr);
        for a in addrs {
            match TcpStream::connect_timeout(&a, self.opts.connect_timeout) {
                Ok(s) => return Ok(s),
                Err(e) => last = format!("connect to {a}: {e}"),
            }
        }
        Err(last)
    }

    fn query(&self) -> Pdu {
        match self.state {
            Some((session, serial)) => Pdu::SerialQuery {
                version: self.version,
                session,
                serial,
            },
            None => Pdu::ResetQuery {
                version: self.version,
            },
        }
    }

    /// Sends an Error Report for `err` (best effort) and ends the connection.
    fn fail(&self, s: &mut TcpStream, code: u16, pdu: &[u8], what: String) -> End {
        let report = Pdu::ErrorReport {
            version: self.version,
            code,
            pdu: pdu.to_vec(),
            text: what.clone(),
        };
        let _ = s.write_all(&report.encode());
        End::Problem(what)
    }

    fn serve(&mut self, mut s: TcpStream) -> End {
        let _ = s.set_nodelay(true);
        self.notified = None;
        if let Err(e) = s.set_read_timeout(Some(TICK)) {
            return End::Problem(format!("socket: {e}"));
        }
        if let Err(e) = s.write_all(&self.query().encode()) {
            return End::Problem(format!("send query: {e}"));
        }
        (self.sink)(Event::Connected {
            version: self.version,
        });
        let mut buf: Vec<u8> = Vec::with_capacity(1 << 16);
        let mut chunk = vec![0u8; 1 << 16];
        // Inside a response (Cache Response seen, End of Data not yet).
        let mut in_response = false;
        // A query is out and not yet answered.
        let mut asked = true;
        let mut next_refresh: Option<Instant> = None;
        loop {
            if self.stopped() {
                return End::Stopped;
            }
            if self.check_expiry() && (asked || in_response) {
                // The answer on its way is relative to the serial just
                // forgotten (changes since it): applied to the emptied
                // sets it would pass for a whole set. Ask for everything.
                return End::Again(
                    "the data expired while a query was out: asking for everything".into(),
                );
            }
            if !asked && next_refresh.is_some_and(|t| Instant::now() >= t) {
                if let Err(e) = s.write_all(&self.query().encode()) {
                    return End::Problem(format!("send query: {e}"));
                }
                asked = true;
                next_refresh = None;
            }
            match s.read(&mut chunk) {
                Ok(0) => return End::Problem("the cache closed the connection".into()),
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
                Err(e)
                    if e.kind() == std::io::ErrorKind::WouldBlock
                        || e.kind() == std::io::ErrorKind::TimedOut =>
                {
                    continue
                }
                Err(e) => return End::Problem(format!("read: {e}")),
            }
            let mut at = 0;
            loop {
                let (pdu, used) = match Pdu::decode(&buf[at..]) {
                    Ok(Some(x)) => x,
                    Ok(None) => break,
                    Err(e) => {
                        self.state = None;
                        // The PDU in error, and only it, when its length
                        // is known (a bad field); else what is there of it.
                        let end = match Pdu::frame_len(&buf[at..]) {
                            Ok(Some(len)) if at + len <= buf.len() => at + len,
                            _ => buf.len().min(at + 64),
                        };
                        let bad = buf[at..end].to_vec();
                        // RFC 8210 §5.11: an Error Report is never
                        // answered with one.
                        if bad.get(1) == Some(&super::pdu::ERROR_REPORT) {
                            return End::Problem(format!("a malformed Error Report: {}", e.what));
                        }
                        return self.fail(&mut s, e.code, &bad, e.what);
                    }
                };
                let raw = buf[at..at + used].to_vec();
                at += used;
                match self.handle(&mut s, pdu, &raw, &mut in_response, &mut asked) {
                    Ok(Some(refresh)) => next_refresh = Some(refresh),
                    Ok(None) => {}
                    Err(end) => return end,
                }
            }
            buf.drain(..at);
        }
    }

    /// Handles one PDU; `Ok(Some(t))` after an End of Data (refresh at `t`).
    fn handle(
        &mut self,
        s: &mut TcpStream,
        pdu: Pdu,
        raw: &[u8],
        in_response: &mut bool,
        asked: &mut bool,
    ) -> Result<Option<Instant>, End> {
        let v = pdu.version();
        if v != self.version && matches!(pdu, Pdu::SerialNotify { .. }) {
            // A notify decides nothing: the version is negotiated by the
            // query and its Cache Response, not by a stray notify.
            return Ok(None);
        }
        if v != self.version && !matches!(pdu, Pdu::ErrorReport { .. }) {
            if v < self.version && !*in_response && matches!(pdu, Pdu::CacheResponse { .. }) {
                // The cache speaks an older version: adopt it.
                self.version = v;
                if self.state.take().is_some() {
                    // An answer to a Serial Query: session ids and serials
                    // belong to one version (RFC 8210 §7), so changes
                    // answered at another cannot be applied to our sets
                    // (and taken as a whole set they would drop all the
                    // rest). Ask for everything at the new version.
                    return Err(End::Downgraded(format!(
                        "the cache answered at version {v}: asking for everything at it"
                    )));
                }
            } else {
                return Err(self.fail(
                    s,
                    code::UNEXPECTED_VERSION,
                    raw,
                    format!("PDU of version {v} in a version {} session", self.version),
                ));
            }
        }
        match pdu {
            Pdu::CacheResponse { session, .. } => {
                if *in_response {
                    return Err(self.fail(
                        s,
                        code::CORRUPT_DATA,
                        raw,
                        "Cache Response inside a response".into(),
                    ));
                }
                match self.state {
                    // An answer to a Serial Query: changes follow.
                    Some((sid, _)) if sid == session => self.pending = Some(Pending::default()),
                    Some((sid, _)) => {
                        // RFC 8210 §5.1: the session ends; our serial means
                        // nothing to the new one, ask it for everything now.
                        self.state = None;
                        return Err(End::Again(format!(
                            "the cache changed session {sid} to {session}: asking for everything"
                        )));
                    }
                    None => {
                        self.vrps.clear();
                        self.aspas.clear();
                        self.aspa_providers = 0;
                        self.pending = None;
                    }
                }
                // Until End of Data the sets match no serial: a connection
                // lost now makes the next one ask for everything.
                self.state = None;
                self.response_session = Some(session);
                *in_response = true;
            }
            Pdu::Prefix {
                announce,
                prefix,
                max_len,
                asn,
                ..
            } => {
                if !*in_response {
                    return Err(self.fail(
                        s,
                        code::CORRUPT_DATA,
                        raw,
                        "Prefix PDU outside a response".into(),
                    ));
                }
                let vrp = Vrp {
                    prefix,
                    max_len,
                    asn,
                };
                // Duplicates and unknown withdrawals are tolerated (a
                // cache that repeats itself still describes one set).
                if announce {
                    if self.vrps.len() >= self.opts.max_vrps && !self.vrps.contains(&vrp) {
                        self.state = None;
                        let what = format!("the cache sent more than {} VRPs", self.opts.max_vrps);
                        return Err(self.fail(s, code::INTERNAL_ERROR, raw, what));
                    }
                    if self.vrps.insert(vrp) {
                        if let Some(p) = &mut self.pending {
                            if !p.removed.remove(&vrp) {
                                p.added.insert(vrp);
                            }
                        }
                    }
                } else if self.vrps.remove(&vrp) {
                    if let Some(p) = &mut self.pending {
                        if !p.added.remove(&vrp) {
                            p.removed.insert(vrp);
                        }
                    }
                }
            }
            Pdu::Aspa {
                announce,
                customer,
                providers,
                ..
            } => {
                if !*in_response {
                    return Err(self.fail(
                        s,
                        code::CORRUPT_DATA,
                        raw,
                        "ASPA PDU outside a response".into(),
                    ));
                }
                // Each ASPA counts its providers, and at least one: an
                // ASPA without providers still holds a customer.
                let weight = |p: &[u32]| p.len().max(1);
                if announce {
                    let before = self.aspas.get(customer).map_or(0, weight);
                    let total = self.aspa_providers - before + weight(&providers);
                    if total > self.opts.max_aspa_providers {
                        self.state = None;
                        let what = format!(
                            "the cache sent more than {} ASPA providers",
                            self.opts.max_aspa_providers
                        );
                        return Err(self.fail(s, code::INTERNAL_ERROR, raw, what));
                    }
                    self.aspas.insert(Aspa::new(customer, providers));
                    // Counted as held (duplicates removed), not as sent.
                    let now = self.aspas.get(customer).map_or(0, weight);
                    self.aspa_providers = self.aspa_providers - before + now;
                } else {
                    let before = self.aspas.get(customer).map_or(0, weight);
                    self.aspas.remove(customer);
                    self.aspa_providers -= before;
                }
            }
            Pdu::RouterKey { .. } => {}
            Pdu::EndOfData {
                session,
                serial,
                timers,
                version,
            } => {
                if !*in_response {
                    return Err(self.fail(
                        s,
                        code::CORRUPT_DATA,
                        raw,
                        "End of Data outside a response".into(),
                    ));
                }
                if self.response_session != Some(session) {
                    let what = format!(
                        "End of Data of session {session} in a response of session {:?}",
                        self.response_session
                    );
                    return Err(self.fail(s, code::CORRUPT_DATA, raw, what));
                }
                *in_response = false;
                *asked = false;
                self.state = Some((session, serial));
                // RFC 8210 §6's maxima: a cache cannot make the client
                // wait 136 years to refresh or to reconnect.
                self.timers = timers.map_or(DEFAULT_TIMERS, |t| Timers {
                    refresh: t.refresh.min(86_400),
                    retry: t.retry.min(7_200),
                    expire: t.expire.min(172_800),
                });
                self.last_data = Some(Instant::now());
                let changes = self.pending.take().map(|p| Changes {
                    added: p.added.into_iter().collect(),
                    removed: p.removed.into_iter().collect(),
                });
                (self.sink)(Event::Data {
                    vrps: &self.vrps,
                    aspas: &self.aspas,
                    changes: changes.as_ref(),
                    session,
                    serial,
                    version,
                });
                // A Serial Notify of a serial this answer did not bring:
                // ask again now rather than at the refresh.
                if self.notified.take().is_some_and(|n| n != serial) {
                    return Ok(Some(Instant::now()));
                }
                return Ok(Some(Instant::now() + self.refresh()));
            }
            Pdu::CacheReset { .. } => {
                // The cache cannot answer our serial: ask for everything.
                self.state = None;
                let q = self.query().encode();
                s.write_all(&q)
                    .map_err(|e| End::Problem(format!("send Reset Query: {e}")))?;
                *asked = true;
            }
            Pdu::SerialNotify { serial, .. } => {
                if !*asked && !*in_response && self.state.is_some() {
                    let q = self.query().encode();
                    s.write_all(&q)
                        .map_err(|e| End::Problem(format!("send Serial Query: {e}")))?;
                    *asked = true;
                } else {
                    self.notified = Some(serial);
                }
            }
            Pdu::ErrorReport {
                code: c,
                text,
                version,
                ..
            } => {
                if c == code::UNSUPPORTED_VERSION || c == code::UNEXPECTED_VERSION {
                    let next = if version < self.version {
                        version
                    } else {
                        self.version.saturating_sub(1)
                    };
                    if next < self.version {
                        self.version = next;
                        self.state = None;
                        return Err(End::Downgraded(format!(
                            "the cache does not speak this version ({text}): trying version {next}"
                        )));
                    }
                }
                if *in_response {
                    self.state = None;
                }
                return Err(End::Problem(format!(
                    "the cache reported error {c}: {text}"
                )));
            }
            Pdu::SerialQuery { .. } | Pdu::ResetQuery { .. } => {
                return Err(self.fail(
                    s,
                    code::INVALID_REQUEST,
                    raw,
                    "a query from the cache".into(),
                ));
            }
        }
        Ok(None)
    }
}
