//! `POST /api/v1/lookup`: many addresses in one request, answered as
//! newline-delimited JSON in the same order, one `lookup` answer object per
//! address (ARCHITECTURE §4).
//!
//! The body is a JSON array or text, told apart by its first byte that is
//! not whitespace (`[` or `{`: JSON, and only an array is taken):
//! - JSON: each element an address string, or an object
//!   `{"ip": ADDR, "peer": ID_OR_ADDR, "nexthop": ADDR}` (`peer` and
//!   `nexthop` optional) narrowing that address's lookup as the GET
//!   parameters do;
//! - text: one address per line, optionally followed by `peer=P` and
//!   `nexthop=ADDR` words; blank lines are skipped (answered by nothing).
//!
//! The query string's `instance`, `rib`, `peer` and `nexthop` apply to
//! every address (an address's own `peer`/`nexthop` replace the last two).
//!
//! Limits: a body over [`MAX_BODY`] gets 413 (before it is read when its
//! length is declared); a JSON body that does not parse gets 400 naming
//! the byte, before any answer is sent. A bad element (not an address, a
//! bad peer) is answered in its place with `{"ip", "error"}`, as GET
//! answers it with 400, so one bad row does not cost a million answers.
//! At most [`CONCURRENT`] bulk requests are answered at once (the rest
//! wait up to 10 s, then 503), the permit taken before the body is read:
//! each holds its body and a 64 KiB output buffer. Answers stream as the
//! client reads; a client that stops reading for `--http-write-stall`, or
//! reads under 1 MiB/s on average after a minute, ends its answer (the
//! connection is cut, so a partial answer is never taken for a whole one).

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::io::{self, Write};
use std::net::IpAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use futures_util::StreamExt;
use ipfib::prefix::AnyAddr;
use ipfib_rib::Query;
use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{json, Value};

use super::http::{bad, peer_filter, permit, scope, ChannelWriter, Params};
use super::{json as j, Ctx};

/// The largest body taken (ARCHITECTURE §4).
pub const MAX_BODY: usize = 64 << 20;
/// Bulk requests answered at once.
pub const CONCURRENT: usize = 4;

fn too_large() -> Response {
    (
        StatusCode::PAYLOAD_TOO_LARGE,
        Json(json!({ "error": format!("a body of more than {MAX_BODY} bytes") })),
    )
        .into_response()
}

pub(crate) async fn lookup_many(
    State(ctx): State<Arc<Ctx>>,
    Params(q): Params,
    req: Request,
) -> Response {
    let mut base = Query::default();
    if let Err(e) = scope(&q, &mut base) {
        return bad(e);
    }
    if let Some(p) = q.get("peer") {
        match peer_filter(p) {
            Ok(f) => base.peer = Some(f),
            Err(e) => return bad(e),
        }
    }
    if let Some(nh) = q.get("nexthop") {
        match nh.parse::<IpAddr>() {
            Ok(a) => base.next_hop = Some(a),
            Err(_) => return bad(format!("nexthop {nh:?} is not an address")),
        }
    }
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > MAX_BODY as u64) {
        return too_large();
    }
    // The permit first, then the body: at most `CONCURRENT` bodies are
    // held, whatever the number of connections.
    let permit = match permit(
        &ctx.bulk_lock,
        "5",
        "too many bulk lookups in progress; try again later",
    )
    .await
    {
        Ok(p) => p,
        Err(r) => return r,
    };
    let mut body = match read_body(req.into_body(), declared).await {
        Ok(b) => b,
        Err(r) => return r,
    };
    // A UTF-8 byte order mark is not part of the body's text.
    if body.starts_with(&[0xef, 0xbb, 0xbf]) {
        body.drain(..3);
    }
    let json = body
        .iter()
        .find(|b| !b.is_ascii_whitespace())
        .is_some_and(|&b| b == b'[' || b == b'{');
    let (tx, rx) = tokio::sync::mpsc::channel::<io::Result<Bytes>>(4);
    let failed = tx.clone();
    let out = ChannelWriter {
        tx,
        rt: tokio::runtime::Handle::current(),
        stall: ctx.opts.http.write_stall,
    };
    let (checked_tx, checked_rx) = tokio::sync::oneshot::channel::<Result<(), String>>();
    let task_ctx = Arc::clone(&ctx);
    // Off the HTTP runtime (one worker): the JSON check, then the answers.
    tokio::task::spawn_blocking(move || {
        let _permit = permit;
        if json {
            // Syntax checked whole before anything is answered: a body
            // that does not parse gets 400, not a 200 cut short.
            if let Err(e) = check_json(&body) {
                let _ = checked_tx.send(Err(e));
                return;
            }
        }
        if checked_tx.send(Ok(())).is_err() {
            return; // the client went away
        }
        let answered = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            answer_all(&task_ctx, &base, &body, json, out)
        }))
        .unwrap_or_else(|_| Err(io::Error::other("the bulk lookup panicked")));
        if let Err(e) = answered {
            // The body ends with an error: the client sees a cut answer.
            let _ = failed.blocking_send(Err(e));
        }
    });
    match checked_rx.await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => return bad(e),
        Err(_) => {
            return (
                StatusCode::INTERNAL_SERVER_ERROR,
                Json(json!({ "error": "the bulk lookup failed" })),
            )
                .into_response()
        }
    }
    let body =
        futures_util::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|b| (b, rx)) });
    (
        [(header::CONTENT_TYPE, "application/x-ndjson")],
        Body::from_stream(body),
    )
        .into_response()
}

/// A JSON body parses, and its top level is an array; the error names the
/// byte.
fn check_json(body: &[u8]) -> Result<(), String> {
    let mut de = serde_json::Deserializer::from_slice(body);
    let checked = <IgnoredAny as serde::Deserialize>::deserialize(&mut de).and_then(|_| de.end());
    if let Err(e) = checked {
        return Err(format!(
            "the body is not a JSON array: {e} (byte {})",
            offset(body, e.line(), e.column())
        ));
    }
    if body.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'[') {
        return Err("the body is a JSON value but not an array".into());
    }
    // The elements as the answers will read them: what the syntax check
    // skips (strings that are not UTF-8, lone surrogates) is found here,
    // before any answer is sent.
    match walk_json(body, &mut |_| Ok(())) {
        Err(Walk::Json(e)) => Err(format!(
            "the body is not a JSON array of addresses: {e} (byte {})",
            offset(body, e.line(), e.column())
        )),
        _ => Ok(()),
    }
}

/// The body, at most [`MAX_BODY`] bytes (413 past it).
async fn read_body(body: Body, declared: Option<u64>) -> Result<Vec<u8>, Response> {
    let mut stream = body.into_data_stream();
    let mut got = Vec::with_capacity(declared.map_or(64 << 10, |n| n as usize));
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| bad(format!("reading the body: {e}")))?;
        if got.len() + chunk.len() > MAX_BODY {
            return Err(too_large());
        }
        got.extend_from_slice(&chunk);
    }
    Ok(got)
}

/// A byte offset from serde_json's line and column (both 1-based).
fn offset(body: &[u8], line: usize, column: usize) -> usize {
    let line_start = body
        .split_inclusive(|&b| b == b'\n')
        .take(line.saturating_sub(1))
        .map(<[u8]>::len)
        .sum::<usize>();
    line_start + column.saturating_sub(1)
}

/// One element of the body.
#[derive(Debug, PartialEq, Eq)]
enum Item<'a> {
    Ask {
        ip: Cow<'a, str>,
        peer: Option<Cow<'a, str>>,
        nexthop: Option<Cow<'a, str>>,
    },
    /// Not an address or an object of the documented keys: answered with
    /// this error.
    Bad {
        ip: Option<Cow<'a, str>>,
        error: String,
    },
}

/// Every answer of the body, in order, through `out`.
fn answer_all(
    ctx: &Ctx,
    base: &Query,
    body: &[u8],
    json: bool,
    out: ChannelWriter,
) -> io::Result<()> {
    let mut out = io::BufWriter::with_capacity(
        64 << 10,
        Paced {
            inner: out,
            start: Instant::now(),
            written: 0,
        },
    );
    let mut line = Vec::with_capacity(1024);
    let mut writer = RouteWriter::default();
    let mut looked_up = 0u64;
    let mut each = |item: Item<'_>| -> io::Result<()> {
        line.clear();
        looked_up += u64::from(answer(ctx, base, &item, &mut writer, &mut line));
        line.push(b'\n');
        out.write_all(&line)
    };
    let done = if json {
        each_json(body, &mut each)
    } else {
        each_line(body, &mut each)
    };
    ctx.metrics
        .bulk_addresses
        .fetch_add(looked_up, Ordering::Relaxed);
    done?;
    out.flush()
}

/// An answer's minimum pace: after a minute, on average 1 MiB a second.
/// The write-stall timeout bounds each write; this bounds the whole
/// answer, so a client reading a few bytes a second does not hold one of
/// the `CONCURRENT` slots for a day.
struct Paced<W> {
    inner: W,
    start: Instant,
    written: u64,
}

const PACE_GRACE: Duration = Duration::from_secs(60);
const PACE_BYTES_PER_SEC: u64 = 1 << 20;

impl<W: Write> Write for Paced<W> {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        let allowed = PACE_GRACE + Duration::from_secs(self.written / PACE_BYTES_PER_SEC);
        if self.start.elapsed() > allowed {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "the client reads the answer too slowly (under 1 MiB/s on average)",
            ));
        }
        let n = self.inner.write(b)?;
        self.written += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// One element's answer object (no newline); whether it was looked up.
fn answer(
    ctx: &Ctx,
    base: &Query,
    item: &Item<'_>,
    writer: &mut RouteWriter,
    out: &mut Vec<u8>,
) -> bool {
    let error = |out: &mut Vec<u8>, ip: Option<&str>, error: &str| {
        let _ = serde_json::to_writer(&mut *out, &json!({ "ip": ip, "error": error }));
        false
    };
    let (ip_text, peer, nexthop) = match item {
        Item::Bad { ip, error: e } => return error(out, ip.as_deref(), e),
        Item::Ask { ip, peer, nexthop } => (ip, peer, nexthop),
    };
    let Some(ip) = parse_ip(ip_text) else {
        return error(out, Some(ip_text), "bad address");
    };
    let mut q = base.clone();
    if let Some(p) = peer {
        match peer_filter(p) {
            Ok(f) => q.peer = Some(f),
            Err(e) => return error(out, Some(ip_text), &e),
        }
    }
    if let Some(nh) = nexthop {
        match nh.parse::<IpAddr>() {
            Ok(a) => q.next_hop = Some(a),
            Err(_) => {
                return error(
                    out,
                    Some(ip_text),
                    &format!("nexthop {nh:?} is not an address"),
                )
            }
        }
    }
    match ctx.rib.lookup(AnyAddr::unmapped(ip), &q) {
        Some(r) => writer.write(&r, ip, out),
        None => {
            // As `json!({"ip", "error"})` writes it (keys in order).
            out.extend_from_slice(br#"{"error":"no route","ip":""#);
            push_ip(out, ip);
            out.extend_from_slice(br#""}"#);
        }
    }
    true
}

/// Route answers as the JSON of [`j::route`] plus `ip`, byte for byte,
/// written from cached pieces: the parts that depend only on the route's
/// attribute set, or only on its peer, are serialised once per request
/// (keyed by the `Arc` they are held in, which the cache keeps alive, so
/// a key is never reused by another set). A route then costs two map
/// probes, four copies, and the address, path id and prefix written.
///
/// The pieces follow `serde_json`'s key order (sorted):
/// `{"as_path","communities","ip"` | `"large_communities","local_pref",
/// "med","next_hop","origin","origin_asn","path_id"` | `"peer",
/// "peer_address","peer_asn","peer_bgp_id","peer_type","prefix"` | `"rd",
/// "rib","stale"}`; a test checks the bytes against `serde_json` of [`j::route`].
pub(crate) struct RouteWriter {
    attrs: PtrMap<ipfib_rib::attrs::AttrSet>,
    peers: PtrMap<ipfib_rib::PeerInfo>,
    /// Bytes of cached pieces, and the most kept before the caches start
    /// again (a piece of an attribute set with thousands of communities
    /// is hundreds of KB).
    bytes: usize,
    max_bytes: usize,
}

impl Default for RouteWriter {
    fn default() -> Self {
        RouteWriter {
            attrs: PtrMap::default(),
            peers: PtrMap::default(),
            bytes: 0,
            max_bytes: 16 << 20,
        }
    }
}

/// Two pieces of JSON around one field's value, and what they were
/// written from (held, so its address stays its own).
struct Piece<T> {
    _held: Arc<T>,
    bytes: Vec<u8>,
    split: usize,
}

/// `"key":VALUE`, with a comma before it unless one or the object's
/// opening brace is there.
fn field(out: &mut Vec<u8>, key: &str, v: &Value) {
    if !matches!(out.last(), Some(b'{' | b',')) {
        out.push(b',');
    }
    let _ = serde_json::to_writer(&mut *out, key);
    out.push(b':');
    let _ = serde_json::to_writer(&mut *out, v);
}

impl RouteWriter {
    pub(crate) fn write(&mut self, r: &ipfib_rib::Route, ip: IpAddr, out: &mut Vec<u8>) {
        if self.bytes > self.max_bytes {
            self.attrs.clear();
            self.peers.clear();
            self.bytes = 0;
        }
        let bytes = &mut self.bytes;
        let a = self
            .attrs
            .entry(Arc::as_ptr(&r.attrs) as usize)
            .or_insert_with(|| {
                let mut b = vec![b'{'];
                field(&mut b, "as_path", &j::as_path(r));
                field(&mut b, "communities", &j::communities(r));
                b.extend_from_slice(br#","ip":""#);
                let split = b.len();
                b.push(b'"');
                let x = &r.attrs;
                field(&mut b, "large_communities", &j::large_communities(r));
                field(&mut b, "local_pref", &json!(x.local_pref));
                field(&mut b, "med", &json!(x.med));
                field(
                    &mut b,
                    "next_hop",
                    &json!(x.next_hop.map(|a| a.to_string())),
                );
                field(&mut b, "origin", &json!(x.origin.as_str()));
                field(&mut b, "origin_asn", &json!(x.as_path.origin_asn()));
                b.extend_from_slice(br#","path_id":"#);
                *bytes += b.len();
                Piece {
                    _held: Arc::clone(&r.attrs),
                    bytes: b,
                    split,
                }
            });
        let p = self
            .peers
            .entry(Arc::as_ptr(&r.peer) as usize)
            .or_insert_with(|| {
                let k = &r.peer.key;
                // After the path id.
                let mut b = vec![b','];
                field(&mut b, "peer", &json!(r.peer.id));
                field(&mut b, "peer_address", &json!(k.address.to_string()));
                field(&mut b, "peer_asn", &json!(k.asn));
                field(
                    &mut b,
                    "peer_bgp_id",
                    &json!(std::net::Ipv4Addr::from(k.bgp_id).to_string()),
                );
                field(
                    &mut b,
                    "peer_type",
                    &json!(ipfib_rib::instance::peer_type_name(k.peer_type)),
                );
                b.extend_from_slice(br#","prefix":""#);
                let split = b.len();
                b.push(b'"');
                field(&mut b, "rd", &json!(j::rd(&r.peer)));
                field(&mut b, "rib", &json!(k.rib.as_str()));
                field(&mut b, "stale", &json!(r.peer.stale));
                b.push(b'}');
                *bytes += b.len();
                Piece {
                    _held: Arc::clone(&r.peer),
                    bytes: b,
                    split,
                }
            });
        let (a1, a2) = a.bytes.split_at(a.split);
        let (p1, p2) = p.bytes.split_at(p.split);
        out.extend_from_slice(a1);
        push_ip(out, ip);
        out.extend_from_slice(a2);
        push_u32(out, r.path_id);
        out.extend_from_slice(p1);
        match r.prefix {
            ipfib::prefix::AnyPrefix::V4(p) => {
                push_ip(out, IpAddr::V4(p.addr().into()));
                out.push(b'/');
                push_u32(out, u32::from(p.len()));
            }
            p @ ipfib::prefix::AnyPrefix::V6(_) => {
                let _ = write!(out, "{p}");
            }
        }
        out.extend_from_slice(p2);
    }
}

/// An address as GET parses it (`IpAddr`'s grammar, no surrounding
/// whitespace; an IPv4-mapped IPv6 address stays IPv6 in the answer's
/// `ip`); plain IPv4 text through the core's allocation-free parser.
fn parse_ip(text: &str) -> Option<IpAddr> {
    if !text.contains(':') {
        if let Some(AnyAddr::V4(a)) = AnyAddr::parse_ascii(text.as_bytes()) {
            return Some(IpAddr::V4(a.into()));
        }
    }
    text.parse().ok()
}

/// `n` in decimal, as `Display` writes it.
fn push_u32(out: &mut Vec<u8>, mut n: u32) {
    let mut buf = [0u8; 10];
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&buf[i..]);
}

/// An address as `Display` writes it (IPv4 without the formatter).
fn push_ip(out: &mut Vec<u8>, ip: IpAddr) {
    match ip {
        IpAddr::V4(a) => {
            for (i, o) in a.octets().into_iter().enumerate() {
                if i > 0 {
                    out.push(b'.');
                }
                push_u32(out, u32::from(o));
            }
        }
        IpAddr::V6(a) => {
            let _ = write!(out, "{a}");
        }
    }
}

/// Pieces by the address of what they were written from (foldhash: the
/// default SipHash costs more than the rest of a cached piece's lookup).
type PtrMap<T> = HashMap<usize, Piece<T>, foldhash::fast::RandomState>;

/// Text lines: `ADDR [peer=P] [nexthop=ADDR]`, blank lines skipped.
fn each_line(body: &[u8], f: &mut dyn FnMut(Item<'_>) -> io::Result<()>) -> io::Result<()> {
    for raw in body.split(|&b| b == b'\n') {
        let text = String::from_utf8_lossy(raw);
        let mut words = text.split_ascii_whitespace();
        let Some(ip) = words.next() else { continue };
        let (mut peer, mut nexthop, mut error) = (None, None, None);
        for w in words {
            match w.split_once('=') {
                Some(("peer", v)) if peer.is_none() => peer = Some(Cow::Borrowed(v)),
                Some(("nexthop", v)) if nexthop.is_none() => nexthop = Some(Cow::Borrowed(v)),
                _ => {
                    error = Some(format!(
                        "{w:?}: expected peer=P or nexthop=ADDR after the address, each at most once"
                    ));
                    break;
                }
            }
        }
        let item = match error {
            Some(error) => Item::Bad {
                ip: Some(Cow::Borrowed(ip)),
                error,
            },
            None => Item::Ask {
                ip: Cow::Borrowed(ip),
                peer,
                nexthop,
            },
        };
        // `text` may be an owned lossy copy: the item lives for this call.
        f(item)?;
    }
    Ok(())
}

/// The elements of a JSON array (already checked to parse), one at a
/// time, none held after its answer.
fn each_json(body: &[u8], f: &mut dyn FnMut(Item<'_>) -> io::Result<()>) -> io::Result<()> {
    walk_json(body, f).map_err(|e| match e {
        Walk::Stopped(e) => e,
        // `check_json` walked the same elements first: not reached.
        Walk::Json(e) => io::Error::other(format!("the body is not a JSON array: {e}")),
    })
}

/// Why a walk of the elements ended early.
enum Walk {
    /// The JSON itself (a string that is not UTF-8, a lone surrogate).
    Json(serde_json::Error),
    /// `f` failed (the client went away).
    Stopped(io::Error),
}

fn walk_json(body: &[u8], f: &mut dyn FnMut(Item<'_>) -> io::Result<()>) -> Result<(), Walk> {
    let mut de = serde_json::Deserializer::from_slice(body);
    let mut stopped = None;
    let r = de::Deserializer::deserialize_seq(
        &mut de,
        Each {
            f,
            stopped: &mut stopped,
        },
    );
    match (r, stopped) {
        (_, Some(e)) => Err(Walk::Stopped(e)),
        (Ok(()), None) => Ok(()),
        (Err(e), None) => Err(Walk::Json(e)),
    }
}

struct Each<'f, 's> {
    f: &'f mut dyn FnMut(Item<'_>) -> io::Result<()>,
    stopped: &'s mut Option<io::Error>,
}

impl<'de> Visitor<'de> for Each<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON array")
    }

    fn visit_seq<S: SeqAccess<'de>>(self, mut seq: S) -> Result<(), S::Error> {
        while let Some(item) = seq.next_element_seed(ItemSeed)? {
            if let Err(e) = (self.f)(item) {
                *self.stopped = Some(e);
                return Err(de::Error::custom("the client went away"));
            }
        }
        Ok(())
    }
}

/// An element: an address string or an object of `ip`, `peer`,
/// `nexthop`; anything else a [`Item::Bad`] (never a parse error: the
/// body parsed).
struct ItemSeed;

impl<'de> DeserializeSeed<'de> for ItemSeed {
    type Value = Item<'de>;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Item<'de>, D::Error> {
        d.deserialize_any(ItemVisitor)
    }
}

struct ItemVisitor;

/// What an element that is not an address or an object is answered with.
fn not_an_item<'a>(what: &str) -> Item<'a> {
    Item::Bad {
        ip: None,
        error: format!("{what}: expected an address or an object with \"ip\""),
    }
}

impl<'de> Visitor<'de> for ItemVisitor {
    type Value = Item<'de>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an address or an object with \"ip\"")
    }

    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Item<'de>, E> {
        Ok(Item::Ask {
            ip: Cow::Borrowed(v),
            peer: None,
            nexthop: None,
        })
    }

    fn visit_str<E>(self, v: &str) -> Result<Item<'de>, E> {
        Ok(Item::Ask {
            ip: Cow::Owned(v.to_string()),
            peer: None,
            nexthop: None,
        })
    }

    fn visit_bool<E>(self, _: bool) -> Result<Item<'de>, E> {
        Ok(not_an_item("a boolean"))
    }
    fn visit_i64<E>(self, _: i64) -> Result<Item<'de>, E> {
        Ok(not_an_item("a number"))
    }
    fn visit_u64<E>(self, _: u64) -> Result<Item<'de>, E> {
        Ok(not_an_item("a number"))
    }
    fn visit_f64<E>(self, _: f64) -> Result<Item<'de>, E> {
        Ok(not_an_item("a number"))
    }
    fn visit_unit<E>(self) -> Result<Item<'de>, E> {
        Ok(not_an_item("null"))
    }

    fn visit_seq<S: SeqAccess<'de>>(self, mut seq: S) -> Result<Item<'de>, S::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(not_an_item("an array"))
    }

    fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Item<'de>, M::Error> {
        let mut fields: HashMap<Cow<'de, str>, Option<Cow<'de, str>>> = HashMap::new();
        let mut error = None;
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            let value = match map.next_value_seed(TextSeed)? {
                Text::Str(t) => Some(t),
                // A number is a peer id, not an address.
                Text::Num(t) if key == "peer" => Some(t),
                Text::Num(_) | Text::Other => None,
            };
            let known = matches!(&*key, "ip" | "peer" | "nexthop");
            if error.is_none() {
                if !known {
                    error = Some(format!(
                        "key {key:?}: expected only \"ip\", \"peer\" and \"nexthop\""
                    ));
                } else if fields.contains_key(&key) {
                    error = Some(format!("key {key:?} given more than once"));
                } else if value.is_none() {
                    error = Some(if key == "peer" {
                        "key \"peer\": expected a peer id or an address".to_string()
                    } else {
                        format!("key {key:?}: expected an address as a string")
                    });
                }
            }
            if known {
                fields.entry(key).or_insert(value);
            }
        }
        let ip = fields.remove("ip").flatten();
        if let Some(error) = error {
            return Ok(Item::Bad { ip, error });
        }
        let Some(ip) = ip else {
            return Ok(Item::Bad {
                ip: None,
                error: "an object without \"ip\"".into(),
            });
        };
        Ok(Item::Ask {
            ip,
            peer: fields.remove("peer").flatten(),
            nexthop: fields.remove("nexthop").flatten(),
        })
    }
}

/// A field's value: a string, an unsigned number (a peer id) as digits,
/// or something else.
enum Text<'a> {
    Str(Cow<'a, str>),
    Num(Cow<'a, str>),
    Other,
}

struct TextSeed;

impl<'de> DeserializeSeed<'de> for TextSeed {
    type Value = Text<'de>;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Text<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string or a peer id")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Text::Str(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Text::Str(Cow::Owned(v.to_string())))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Self::Value, E> {
                Ok(Text::Num(Cow::Owned(v.to_string())))
            }
            fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
                Ok(Text::Other)
            }
            fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
                Ok(Text::Other)
            }
            fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
                Ok(Text::Other)
            }
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(Text::Other)
            }
            fn visit_seq<S: SeqAccess<'de>>(self, mut s: S) -> Result<Self::Value, S::Error> {
                while s.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Text::Other)
            }
            fn visit_map<M: MapAccess<'de>>(self, mut m: M) -> Result<Self::Value, M::Error> {
                while m.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Text::Other)
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn items_json(body: &str) -> Vec<String> {
        let mut got = Vec::new();
        each_json(body.as_bytes(), &mut |i| {
            got.push(format!("{i:?}"));
            Ok(())
        })
        .unwrap();
        got
    }

    fn items_text(body: &[u8]) -> Vec<String> {
        let mut got = Vec::new();
        each_line(body, &mut |i| {
            got.push(format!("{i:?}"));
            Ok(())
        })
        .unwrap();
        got
    }

    #[test]
    fn json_elements() {
        let got = items_json(
            r#"[ "10.0.0.1", {"ip": "10.0.0.2", "peer": 3}, {"ip":"1.1.1.1","nexthop":"2.2.2.2","peer":"192.0.2.1"},
                 5, null, [1, [2]], {"ip": 1}, {"peer": "1"}, {"ip": "1.1.1.1", "x": {"a": [1]}},
                 {"ip": "1.1.1.1", "ip": "2.2.2.2"}, "\u0031.2.3.4", {"ip": "1.1.1.1", "peer": -1}]"#,
        );
        let want = [
            r#"Ask { ip: "10.0.0.1", peer: None, nexthop: None }"#,
            r#"Ask { ip: "10.0.0.2", peer: Some("3"), nexthop: None }"#,
            r#"Ask { ip: "1.1.1.1", peer: Some("192.0.2.1"), nexthop: Some("2.2.2.2") }"#,
            r#"Bad { ip: None, error: "a number: expected an address or an object with \"ip\"" }"#,
            r#"Bad { ip: None, error: "null: expected an address or an object with \"ip\"" }"#,
            r#"Bad { ip: None, error: "an array: expected an address or an object with \"ip\"" }"#,
            r#"Bad { ip: None, error: "key \"ip\": expected an address as a string" }"#,
            r#"Bad { ip: None, error: "an object without \"ip\"" }"#,
            r#"Bad { ip: Some("1.1.1.1"), error: "key \"x\": expected only \"ip\", \"peer\" and \"nexthop\"" }"#,
            r#"Bad { ip: Some("1.1.1.1"), error: "key \"ip\" given more than once" }"#,
            r#"Ask { ip: "1.2.3.4", peer: None, nexthop: None }"#,
            r#"Bad { ip: Some("1.1.1.1"), error: "key \"peer\": expected a peer id or an address" }"#,
        ];
        assert_eq!(got, want);
        assert!(items_json("[]").is_empty());
    }

    #[test]
    fn text_lines() {
        let got = items_text(
            b"10.0.0.1\n\n  \r\n 10.0.0.2 peer=3 nexthop=1.1.1.1\r\n10.0.0.3 foo\nbad peer=1 peer=2\n\xffx",
        );
        let want = [
            r#"Ask { ip: "10.0.0.1", peer: None, nexthop: None }"#,
            r#"Ask { ip: "10.0.0.2", peer: Some("3"), nexthop: Some("1.1.1.1") }"#,
            r#"Bad { ip: Some("10.0.0.3"), error: "\"foo\": expected peer=P or nexthop=ADDR after the address, each at most once" }"#,
            r#"Bad { ip: Some("bad"), error: "\"peer=2\": expected peer=P or nexthop=ADDR after the address, each at most once" }"#,
            "Ask { ip: \"\u{fffd}x\", peer: None, nexthop: None }",
        ];
        assert_eq!(got, want);
    }

    /// The cached pieces give `serde_json`'s bytes of [`j::route`] plus
    /// `ip`, for routes of every shape (AS sets, communities, IPv6 next
    /// hops, route distinguishers, missing MED), with the caches both
    /// filled and cleared.
    #[test]
    fn written_routes_are_serde_json_bytes() {
        use ipfib_rib::attrs::{AttrsRef, AS_SEQUENCE, AS_SET};
        use ipfib_rib::{AsPath, Origin, PeerKey, Rib, RibKind};
        let rib = Rib::new();
        let mut peers = Vec::new();
        for (i, (addr, peer_type, rd, kind)) in [
            ("192.0.2.1", 0u8, 0u64, RibKind::PrePolicy),
            (
                "2001:db8::7",
                1,
                (1 << 48) | (65000u64 << 16) | 7,
                RibKind::PostPolicy,
            ),
            ("198.51.100.9", 3, 0, RibKind::LocRib),
            ("192.0.2.1", 0, 0, RibKind::Mrt),
        ]
        .into_iter()
        .enumerate()
        {
            let key = PeerKey {
                peer_type,
                distinguisher: rd,
                address: addr.parse().unwrap(),
                asn: 64500 + i as u32,
                bgp_id: 0x0a00_0001 + i as u32,
                rib: kind,
            };
            peers.push(rib.add_peer(1, key).unwrap());
        }
        let mut want = Vec::new();
        for n in 0..400u32 {
            let path = AsPath::encode([
                (AS_SEQUENCE, &[64496, 64497 + n % 5][..]),
                (AS_SET, &[n, n + 1][..n as usize % 3]),
            ]);
            let comms: Vec<u32> = (0..n % 4).map(|c| (65000 << 16) | c).collect();
            let large: Vec<[u32; 3]> = (0..n % 3).map(|c| [n, c, u32::MAX]).collect();
            let nh = if n % 2 == 0 {
                "192.0.2.254"
            } else {
                "2001:db8::fe"
            };
            let a = AttrsRef {
                as_path: &path,
                communities: &comms,
                large_communities: &large,
                next_hop: (n % 7 != 0).then(|| nh.parse().unwrap()),
                origin: [Origin::Igp, Origin::Egp, Origin::Incomplete][n as usize % 3],
                med: (n % 2 == 1).then_some(n),
                local_pref: (n % 5 == 1).then_some(100 + n),
            };
            let prefix = format!("10.{}.{}.0/24", n / 256, n % 256).parse().unwrap();
            let peer = &peers[n as usize % peers.len()];
            rib.announce(peer, prefix, n % 3, &rib.intern(&a)).unwrap();
            want.push(prefix);
        }
        let mut v6 = Vec::new();
        for (i, p) in ["2001:db8:1::/48", "::/0"].iter().enumerate() {
            let prefix = p.parse().unwrap();
            let path = AsPath::encode([(AS_SEQUENCE, &[65001u32][..])]);
            let a = AttrsRef {
                as_path: &path,
                communities: &[],
                large_communities: &[],
                next_hop: Some("2001:db8::1".parse().unwrap()),
                origin: Origin::Igp,
                med: None,
                local_pref: None,
            };
            rib.announce(&peers[i], prefix, 0, &rib.intern(&a)).unwrap();
            v6.push(prefix);
        }
        rib.sync();
        let mut writer = RouteWriter::default();
        let q = Query::everything();
        let mut checked = 0;
        for round in 0..4 {
            if round == 2 {
                writer = RouteWriter::default();
            }
            if round == 3 {
                // Caches cleared every few routes.
                writer.max_bytes = 2000;
            }
            for p in want.iter().chain(&v6) {
                let ip = match p {
                    ipfib::prefix::AnyPrefix::V4(x) => IpAddr::V4(x.addr().into()),
                    ipfib::prefix::AnyPrefix::V6(x) => IpAddr::V6(x.addr().into()),
                };
                let r = rib.lookup(AnyAddr::unmapped(ip), &q).unwrap();
                let mut v = j::route(&r);
                v["ip"] = Value::String(ip.to_string());
                let mut got = Vec::new();
                writer.write(&r, ip, &mut got);
                assert_eq!(
                    String::from_utf8(got).unwrap(),
                    serde_json::to_string(&v).unwrap()
                );
                checked += 1;
            }
        }
        assert_eq!(checked, 4 * 402);
    }

    #[test]
    fn fast_text_is_display() {
        for ip in [
            "0.0.0.0",
            "255.255.255.255",
            "10.0.0.1",
            "::",
            "::ffff:1.2.3.4",
            "2001:db8::1",
        ] {
            let ip: IpAddr = ip.parse().unwrap();
            let mut b = Vec::new();
            push_ip(&mut b, ip);
            assert_eq!(String::from_utf8(b).unwrap(), ip.to_string());
        }
        for n in [0, 1, 9, 10, 99, 100, 4_294_967_295, 1_000_000] {
            let mut b = Vec::new();
            push_u32(&mut b, n);
            assert_eq!(String::from_utf8(b).unwrap(), n.to_string());
        }
        for (text, want) in [
            ("1.2.3.4", Some("1.2.3.4")),
            (" 1.2.3.4 ", None),
            ("::ffff:1.2.3.4", Some("::ffff:1.2.3.4")),
            ("01.2.3.4", None),
            ("1.2.3", None),
            ("", None),
        ] {
            assert_eq!(
                parse_ip(text).map(|i| i.to_string()).as_deref(),
                want,
                "{text}"
            );
            if let Some(w) = want {
                assert_eq!(parse_ip(text), w.parse().ok());
            }
        }
    }

    #[test]
    fn offsets() {
        let body = b"[1,\n 2,\n x]";
        let e = serde_json::from_slice::<IgnoredAny>(body).unwrap_err();
        assert_eq!(body[offset(body, e.line(), e.column())], b'x');
    }
}
