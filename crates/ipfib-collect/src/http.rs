//! The HTTP API (ARCHITECTURE §4): a thin layer over the RIB's own API.

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::extract::{FromRequestParts, Request, State};
use axum::http::{header, request::Parts, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use ipfib::prefix::{AnyAddr, AnyPrefix};
use ipfib_rib::{Instance, Match, PeerFilter, Query, RibSet};
use serde_json::{json, Value};

use super::paging::{self, Cursor};
use super::{json as j, Ctx};

type P = Params;

/// A request's query parameters, each given at most once: a repeated one
/// (`?ip=1.1.1.1&ip=2.2.2.2`) is refused with 400 rather than answered
/// for one of them, which the caller could not tell from the answer.
pub struct Params(pub HashMap<String, String>);

impl<S: Send + Sync> FromRequestParts<S> for Params {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Response> {
        params(parts.uri.query().unwrap_or(""))
            .map(Params)
            .map_err(bad)
    }
}

/// `raw` (a URI's query, percent-encoded) as a map; an error naming the
/// first repeated or undecodable parameter.
pub fn params(raw: &str) -> Result<HashMap<String, String>, String> {
    let pairs: Vec<(String, String)> =
        serde_urlencoded::from_str(raw).map_err(|e| format!("bad query string: {e}"))?;
    let mut map = HashMap::with_capacity(pairs.len());
    for (k, v) in pairs {
        if map.contains_key(&k) {
            return Err(format!("parameter {k:?} given more than once"));
        }
        map.insert(k, v);
    }
    Ok(map)
}

pub fn router(ctx: Arc<Ctx>) -> Router {
    Router::new()
        .route("/", get(page))
        .route("/page.js", get(page_js))
        .route("/page.css", get(page_css))
        .route("/api/v1/lookup", get(lookup).post(super::bulk::lookup_many))
        .route("/api/v1/routes", get(routes))
        .route("/api/v1/peers", get(peers))
        .route("/api/v1/rpki", get(rpki_status))
        .route("/metrics", get(metrics))
        .route("/api/v1/dump.mrt", get(dump_mrt))
        .layer(axum::middleware::from_fn_with_state(
            Arc::clone(&ctx),
            guard,
        ))
        .with_state(ctx)
}

pub(crate) fn bad(msg: String) -> Response {
    (StatusCode::BAD_REQUEST, Json(json!({ "error": msg }))).into_response()
}

/// What the page and its assets may do: its own script and style, API
/// calls to this origin, no framing.
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/// Every request: the Host allow-list (DNS rebinding), the bearer token
/// (API and metrics), the request timeout, the security headers.
async fn guard(State(ctx): State<Arc<Ctx>>, req: Request, next: Next) -> Response {
    // Every request, whatever its fate (refused here, a bad query, 404).
    ctx.metrics.http_requests.fetch_add(1, Ordering::Relaxed);
    let deny = |status: StatusCode, msg: &str| {
        ctx.metrics.http_denied.fetch_add(1, Ordering::Relaxed);
        (status, Json(json!({ "error": msg }))).into_response()
    };
    // HTTP/1.1 requires Host (RFC 9112 §3.2: a request without one is a
    // 400); HTTP/1.0 may omit it and meets the allow-list below.
    if req.version() == axum::http::Version::HTTP_11 && !req.headers().contains_key(header::HOST) {
        return deny(
            StatusCode::BAD_REQUEST,
            "an HTTP/1.1 request needs a Host header",
        );
    }
    // Two Host headers: which one a proxy in front read is anyone's guess
    // (RFC 9112 §3.2: 400).
    if req.headers().get_all(header::HOST).iter().nth(1).is_some() {
        return deny(StatusCode::BAD_REQUEST, "more than one Host header");
    }
    let host = req
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("");
    // An absolute-form target (`GET http://name/...`) names the host the
    // client meant, over the Host header (RFC 9112 §3.2.2): both must pass.
    // A target with user information (`http://a@b/`) is refused outright
    // (nothing here takes it, and it hides which host is meant).
    let target_ok = match req.uri().authority() {
        None => true,
        Some(a) => !a.as_str().contains('@') && host_allowed(&ctx.opts.hosts, a.as_str()),
    };
    if !target_ok || !host_allowed(&ctx.opts.hosts, host) {
        return deny(StatusCode::MISDIRECTED_REQUEST, "Host not allowed");
    }
    let path = req.uri().path();
    if let Some(token) = &ctx.opts.token {
        if path.starts_with("/api/") || path == "/metrics" {
            let given = req
                .headers()
                .get(header::AUTHORIZATION)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.strip_prefix("Bearer "))
                .map(str::trim);
            if !given.is_some_and(|g| same(g.as_bytes(), token.as_bytes())) {
                let mut r = deny(StatusCode::UNAUTHORIZED, "a bearer token is required");
                r.headers_mut()
                    .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
                return r;
            }
        }
    }
    let limit = ctx.opts.http.request_timeout;
    let mut r = match tokio::time::timeout(limit, next.run(req)).await {
        Ok(r) => r,
        Err(_) => (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(json!({ "error": format!("no answer within {limit:?}") })),
        )
            .into_response(),
    };
    let h = r.headers_mut();
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    r
}

/// Equal bytes, in time that depends on the lengths only (a token is not
/// found a byte at a time by timing).
fn same(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let diff = a.iter().zip(b).fold(0u8, |d, (x, y)| d | (x ^ y));
    std::hint::black_box(diff) == 0
}

/// The default Host allow-list: `--http-host` names; without them, on a
/// loopback `--http` address, `localhost`; otherwise any host. IP
/// literals are always allowed (DNS rebinding needs a name).
pub fn allowed_hosts(flags: &[String], http: SocketAddr) -> Vec<String> {
    if !flags.is_empty() {
        return flags
            .iter()
            .map(|h| h.trim().to_ascii_lowercase())
            .collect();
    }
    if http.ip().is_loopback() {
        return vec!["localhost".into()];
    }
    Vec::new()
}

/// Whether a `Host` header value is allowed: any IP literal; a name in
/// `hosts` (with the header's port, or without it when the entry has
/// none) or a subdomain of `localhost` when `localhost` is listed.
pub fn host_allowed(hosts: &[String], value: &str) -> bool {
    if hosts.is_empty() {
        return true;
    }
    let value = value.trim().to_ascii_lowercase();
    let name = if let Some(rest) = value.strip_prefix('[') {
        // [v6] or [v6]:port, nothing else after the bracket
        return rest.split_once(']').is_some_and(|(a, after)| {
            let port_ok = after.is_empty()
                || after
                    .strip_prefix(':')
                    .is_some_and(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
            port_ok && a.parse::<std::net::Ipv6Addr>().is_ok()
        });
    } else {
        match value.rsplit_once(':') {
            Some((n, port)) if !port.is_empty() && port.bytes().all(|b| b.is_ascii_digit()) => n,
            _ => value.as_str(),
        }
    };
    if name.parse::<std::net::Ipv4Addr>().is_ok() {
        return true;
    }
    hosts
        .iter()
        .any(|h| h == &value || h == name || (h == "localhost" && name.ends_with(".localhost")))
}

async fn page() -> Response {
    (
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        include_str!("page.html"),
    )
        .into_response()
}

async fn page_js() -> Response {
    (
        [(header::CONTENT_TYPE, "text/javascript; charset=utf-8")],
        include_str!("page.js"),
    )
        .into_response()
}

async fn page_css() -> Response {
    (
        [(header::CONTENT_TYPE, "text/css; charset=utf-8")],
        include_str!("page.css"),
    )
        .into_response()
}

/// `peer=ID` (a peer id) or `peer=ADDR` (every peer with that address).
pub(crate) fn peer_filter(v: &str) -> Result<PeerFilter, String> {
    if let Ok(id) = v.parse::<u32>() {
        return Ok(PeerFilter::Id(id));
    }
    v.parse::<IpAddr>()
        .map(PeerFilter::Address)
        .map_err(|_| format!("peer {v:?} is neither a peer id nor an address"))
}

/// `instance=` (a route distinguisher, `all`; default the global
/// instance) and `rib=` (a comma list of RIB kinds) into `query`.
pub(crate) fn scope(q: &HashMap<String, String>, query: &mut Query) -> Result<(), String> {
    if let Some(i) = q.get("instance") {
        query.instance = Instance::parse(i)?;
    }
    if let Some(r) = q.get("rib") {
        query.ribs = RibSet::parse(r)?;
    }
    Ok(())
}

async fn lookup(State(ctx): State<Arc<Ctx>>, Params(q): P) -> Response {
    let Some(ip_text) = q.get("ip") else {
        return bad("missing ip=ADDR".into());
    };
    let Ok(ip) = ip_text.parse::<IpAddr>() else {
        return (
            StatusCode::BAD_REQUEST,
            Json(json!({ "ip": ip_text, "error": "bad address" })),
        )
            .into_response();
    };
    let mut query = Query::default();
    if let Err(e) = scope(&q, &mut query) {
        return bad(e);
    }
    if let Some(p) = q.get("peer") {
        match peer_filter(p) {
            Ok(f) => query.peer = Some(f),
            Err(e) => return bad(e),
        }
    }
    if let Some(nh) = q.get("nexthop") {
        match nh.parse::<IpAddr>() {
            Ok(a) => query.next_hop = Some(a),
            Err(_) => return bad(format!("nexthop {nh:?} is not an address")),
        }
    }
    let t = Instant::now();
    let found = ctx.rib.lookup(AnyAddr::unmapped(ip), &query);
    ctx.metrics.observe_lookup(t.elapsed());
    match found {
        Some(r) => {
            let mut v = j::route(&r);
            if let Some(live) = &ctx.rpki {
                super::rpki::annotate(&mut v, &live.load(), &r, true);
            }
            v["ip"] = Value::String(ip.to_string());
            Json(v).into_response()
        }
        None => (
            StatusCode::NOT_FOUND,
            Json(json!({ "ip": ip.to_string(), "error": "no route" })),
        )
            .into_response(),
    }
}

async fn routes(State(ctx): State<Arc<Ctx>>, Params(q): P) -> Response {
    let Some(text) = q.get("prefix") else {
        return bad("missing prefix=P".into());
    };
    // An address alone is its host prefix.
    let prefix = match ipfib_rib::target::parse_prefix_or_addr(text) {
        Ok(p) => p,
        Err(e) => return bad(format!("prefix {text:?}: {e}")),
    };
    let m = match q.get("match").map(String::as_str) {
        None | Some("exact") => Match::Exact,
        Some("longer") => Match::Longer,
        Some("shorter") => Match::Shorter,
        Some(other) => {
            return bad(format!(
                "match {other:?}: expected exact, longer or shorter"
            ))
        }
    };
    let limit = match paging::parse_limit(q.get("limit").map(String::as_str)) {
        Ok(l) => l,
        Err(e) => return bad(e),
    };
    let cursor = match q.get("cursor").map(|t| Cursor::decode(t)) {
        None => None,
        Some(Ok(c)) if paging::cursor_fits(&c, &prefix, m) => Some(c),
        Some(Ok(_)) => return bad("cursor does not belong to this query".into()),
        Some(Err(e)) => return bad(e),
    };
    let mut query = Query::default();
    if let Err(e) = scope(&q, &mut query) {
        return bad(e);
    }
    let filter = match super::rpki::Filter::parse(
        q.get("rov").map(String::as_str),
        q.get("aspa").map(String::as_str),
    ) {
        Ok(f) => f,
        Err(e) => return bad(e),
    };
    // One snapshot for the whole page: filter and statuses agree.
    let snap = ctx.rpki.as_ref().map(|l| l.load());
    if !filter.is_empty() && snap.is_none() {
        return bad("rov= and aspa= need RPKI data (--rtr or --vrps)".into());
    }
    let rib = Arc::clone(&ctx.rib);
    let page_snap = snap.clone();
    // `longer` walks the RIB's prefix tree: off the async workers. Each
    // prefix's routes are those the query's instance and RIB kinds allow
    // (and the RPKI filter keeps: a page counts only the routes it shows).
    let found = tokio::task::spawn_blocking(move || {
        let of = |p: &AnyPrefix| {
            let mut rs = rib.routes_matching_in(p, Match::Exact, usize::MAX, &query);
            if let Some(s) = page_snap.as_deref() {
                rs.retain(|r| filter.keeps(s, r));
            }
            rs
        };
        // A filter makes each prefix cost its routes' statuses: fewer
        // prefixes a page (a sparse filter over a large RIB then answers
        // short pages with a cursor, in bounded time).
        let visits = if filter.is_empty() {
            paging::MAX_VISITS
        } else {
            paging::MAX_VISITS_FILTERED
        };
        paging::routes_page(&rib, &prefix, m, limit, cursor, &of, visits)
    })
    .await;
    let Ok((found, next)) = found else {
        return (
            StatusCode::INTERNAL_SERVER_ERROR,
            Json(json!({ "error": "lookup task failed" })),
        )
            .into_response();
    };
    let mut head = serde_json::Map::new();
    head.insert("prefix".into(), prefix.to_string().into());
    head.insert(
        "match".into(),
        q.get("match").map(String::as_str).unwrap_or("exact").into(),
    );
    head.insert("truncated".into(), next.is_some().into());
    if let Some(c) = next {
        head.insert("next_cursor".into(), c.encode().into());
    }
    json_list(Value::Object(head), "routes", found, move |r| {
        let mut v = j::route(r);
        if let Some(s) = &snap {
            super::rpki::annotate(&mut v, s, r, false);
        }
        v
    })
}

/// A JSON object `head` plus one list field `name`, streamed: the list is
/// serialised a chunk at a time as the client reads (no answer-sized
/// buffer).
fn json_list<T: Send + Sync + 'static>(
    head: Value,
    name: &str,
    items: Vec<T>,
    to_json: impl Fn(&T) -> Value + Send + 'static,
) -> Response {
    const CHUNK: usize = 128;
    let mut text = head.to_string();
    text.pop(); // the closing brace
    if text.len() > 1 {
        text.push(',');
    }
    text.push_str(&Value::String(name.into()).to_string());
    text.push_str(":[");
    let items = Arc::new(items);
    let n = items.len();
    let chunks = (0..n).step_by(CHUNK).map(move |start| {
        let mut b = Vec::with_capacity(CHUNK * 512);
        for (i, x) in items[start..(start + CHUNK).min(n)].iter().enumerate() {
            if start + i > 0 {
                b.push(b',');
            }
            // Writing a Value into a Vec cannot fail.
            let _ = serde_json::to_writer(&mut b, &to_json(x));
        }
        Bytes::from(b)
    });
    let parts = std::iter::once(Bytes::from(text))
        .chain(chunks)
        .chain(std::iter::once(Bytes::from_static(b"]}")))
        .map(Ok::<_, Infallible>);
    (
        [(header::CONTENT_TYPE, "application/json")],
        Body::from_stream(futures_util::stream::iter(parts)),
    )
        .into_response()
}

/// Peers in id order, a page at a time (`limit`, `cursor`: the last id
/// given); live ones unless `state=all`. The first page also carries the
/// sessions (open ones; with `state=all` the recently closed too) and a
/// summary of counts.
async fn peers(State(ctx): State<Arc<Ctx>>, Params(q): P) -> Response {
    let all = match q.get("state").map(String::as_str) {
        None | Some("up") => false,
        Some("all") => true,
        Some(other) => return bad(format!("state {other:?}: expected up or all")),
    };
    let limit = match paging::parse_limit(q.get("limit").map(String::as_str)) {
        Ok(l) => l,
        Err(e) => return bad(e),
    };
    let from = match q.get("cursor").map(|c| c.parse::<u32>()) {
        None => 0,
        Some(Ok(id)) => id.saturating_add(1),
        Some(Err(_)) => return bad("cursor is not one this server gave".into()),
    };
    let table = ctx.rib.peers();
    // Ids are not dense (a swept peer's slot is reused under a new
    // generation): the page is the `limit` lowest ids past the cursor.
    let mut list: Vec<Arc<ipfib_rib::PeerInfo>> = table
        .all()
        .filter(|p| p.id >= from && (all || p.is_up()))
        .collect();
    list.sort_unstable_by_key(|p| p.id);
    let next = (list.len() > limit).then(|| list[limit - 1].id);
    list.truncate(limit);
    let mut head = serde_json::Map::new();
    if from == 0 {
        let (mut up, mut down, mut routes) = (0u64, 0u64, 0u64);
        for p in table.all() {
            if p.is_up() {
                up += 1;
                routes += p.route_count();
            } else {
                down += 1;
            }
        }
        let sessions: Vec<Value> = ctx
            .sessions
            .list()
            .iter()
            .filter(|s| all || s.ended.get().is_none())
            .map(|s| {
                let ended = s.ended.get();
                json!({
                "id": s.id,
                "remote": s.remote.to_string(),
                "connected_at": s.connected_at,
                "state": if ended.is_some() { "closed" } else { "open" },
                "ended_at": ended.map(|e| e.0),
                "end_reason": ended.map(|e| e.1.clone()),
                "messages": s.messages.load(Ordering::Relaxed),
                "bytes": s.bytes.load(Ordering::Relaxed),
                "sys_name": s.sys_name.get(),
                "sys_descr": s.sys_descr.get(),
                })
            })
            .collect();
        let open = sessions.iter().filter(|s| s["state"] == "open").count();
        head.insert(
            "summary".into(),
            json!({ "sessions_open": open, "peers_up": up, "peers_down": down, "routes": routes }),
        );
        head.insert("sessions".into(), Value::Array(sessions));
    }
    if let Some(id) = next {
        head.insert("next_cursor".into(), id.to_string().into());
    }
    json_list(Value::Object(head), "peers", list, |p| j::peer(p))
}

async fn metrics(State(ctx): State<Arc<Ctx>>) -> Response {
    let mut text = ctx.metrics.render(&ctx.rib);
    if let Some(s) = &ctx.snapshots {
        super::metrics::render_state(&mut text, s);
    }
    if let Some(live) = &ctx.rpki {
        let counts = ctx
            .rpki_counts
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        super::metrics::render_rpki(&mut text, &live.load(), counts.as_deref(), &ctx.rib);
    }
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], text).into_response()
}

/// The RPKI sources and totals: `{"configured": false}` without any.
async fn rpki_status(State(ctx): State<Arc<Ctx>>) -> Response {
    let Some(live) = &ctx.rpki else {
        return Json(json!({ "configured": false })).into_response();
    };
    let snap = live.load();
    let counts = ctx
        .rpki_counts
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone();
    let (v4, v6) = snap.vrps.prefix_counts();
    let unix = |t: Option<std::time::SystemTime>| {
        t.and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map(|d| d.as_secs())
    };
    let sources: Vec<Value> = snap
        .sources
        .iter()
        .map(|s| {
            json!({
                "name": s.name,
                "state": s.state,
                "problem": s.problem,
                "vrps": s.vrps,
                "aspas": s.aspas,
                "session": s.serial.map(|x| x.0),
                "serial": s.serial.map(|x| x.1),
                "version": s.version,
                "updated": unix(s.updated),
            })
        })
        .collect();
    let count = counts.map(|c| {
        let rov: serde_json::Map<String, Value> = ipfib_rpki::Rov::ALL
            .iter()
            .map(|r| (super::metrics::rov_label(*r).to_string(), c.rov[r.index()].into()))
            .collect();
        let aspa: serde_json::Map<String, Value> = ipfib_rpki::AspaStatus::ALL
            .iter()
            .map(|a| (a.as_str().to_string(), c.aspa[a.index()].into()))
            .collect();
        json!({ "routes": c.routes, "rov": rov, "aspa": aspa, "seconds": c.seconds, "generation": c.generation })
    });
    Json(json!({
        "configured": true,
        "vrps": snap.vrps.len(),
        "vrp_prefixes": { "ipv4": v4, "ipv6": v6 },
        "aspas": snap.aspas.len(),
        "generation": snap.generation,
        "build_seconds": snap.build_seconds,
        "sources": sources,
        "counts": count,
    }))
    .into_response()
}

/// The RIB's live routes as MRT TABLE_DUMP_V2 (RFC 6396), streamed as it
/// is written: one dump at a time (its permit held until the last byte or
/// the client's departure); another client waits up to 10 s, then gets
/// 503. A client that stops reading for `--http-write-stall` ends its
/// dump, so a stalled reader cannot hold the permit.
async fn dump_mrt(State(ctx): State<Arc<Ctx>>, Params(q): P) -> Response {
    // One scope per dump (MRT has no route distinguisher): the global
    // instance unless `instance=` / `rib=` say otherwise.
    let mut query = Query::default();
    if let Err(e) = scope(&q, &mut query) {
        return bad(e);
    }
    let opts = ipfib_rib::mrt::DumpOptions {
        instance: query.instance,
        ribs: query.ribs,
        ..Default::default()
    };
    // A peer table holds 65,535 peers: say in the answer's head how many
    // of the scope's live peers the dump leaves out (it streams, so its
    // status is sent before it is written).
    let in_scope = ctx
        .rib
        .peers()
        .all()
        .filter(|p| {
            p.is_up()
                && opts.ribs.has(p.key.rib)
                && opts.instance.fits(p.key.peer_type, p.key.distinguisher)
        })
        .count();
    let left_out = in_scope.saturating_sub(usize::from(u16::MAX));
    let permit = match permit(
        &ctx.dump_lock,
        "30",
        "another dump is being sent; try again later",
    )
    .await
    {
        Ok(p) => p,
        Err(r) => return r,
    };
    let (tx, rx) = tokio::sync::mpsc::channel::<std::io::Result<Bytes>>(4);
    // A dump that does not finish (an error, a panic) ends the body with
    // an error: the connection is cut before the last chunk, so a client
    // never takes a partial dump for a whole one.
    let failed = tx.clone();
    let out = ChannelWriter {
        tx,
        rt: tokio::runtime::Handle::current(),
        stall: ctx.opts.http.write_stall,
    };
    let rib = Arc::clone(&ctx.rib);
    tokio::task::spawn_blocking(move || {
        let _permit = permit;
        let dumped = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            ipfib_rib::mrt::dump_with(&rib, out, &opts)
        }))
        .unwrap_or_else(|_| Err(std::io::Error::other("the dump panicked")));
        if let Err(e) = &dumped {
            let _ = failed.blocking_send(Err(std::io::Error::other(e.to_string())));
        }
        drop(failed);
        match dumped {
            Err(e) => tracing::info!(error = %e, "MRT dump not finished"),
            Ok(r) if r.peers_over_limit > 0 => tracing::warn!(
                peers = r.peers_over_limit,
                routes = r.routes_of_peers_over_limit,
                "MRT dump: peers past the 65,535 of a peer table left out"
            ),
            Ok(_) => {}
        }
    });
    let body =
        futures_util::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|b| (b, rx)) });
    let mut answer = (
        [
            (header::CONTENT_TYPE, "application/octet-stream"),
            (
                header::CONTENT_DISPOSITION,
                "attachment; filename=\"rib.mrt\"",
            ),
        ],
        Body::from_stream(body),
    )
        .into_response();
    if left_out > 0 {
        answer.headers_mut().insert(
            "x-ipfib-peers-left-out",
            header::HeaderValue::from(left_out as u64),
        );
    }
    answer
}

/// A permit of `lock` (the dumps', the bulk lookups'), waited for up to
/// 10 s; past that a 503 with `Retry-After: retry_after` and `busy`.
pub(crate) async fn permit(
    lock: &Arc<tokio::sync::Semaphore>,
    retry_after: &'static str,
    busy: &str,
) -> Result<tokio::sync::OwnedSemaphorePermit, Response> {
    let wait = Arc::clone(lock).acquire_owned();
    match tokio::time::timeout(Duration::from_secs(10), wait).await {
        Ok(Ok(p)) => Ok(p),
        Ok(Err(_)) => Err((
            StatusCode::SERVICE_UNAVAILABLE,
            Json(json!({ "error": "shutting down" })),
        )
            .into_response()),
        Err(_) => Err((
            StatusCode::SERVICE_UNAVAILABLE,
            [(header::RETRY_AFTER, retry_after)],
            Json(json!({ "error": busy })),
        )
            .into_response()),
    }
}

/// The dump's output: each write (the dump buffers 64 KiB) goes to the
/// response body through a small channel; a client that does not take it
/// within `stall`, or went away, fails the write and so ends the dump.
pub(crate) struct ChannelWriter {
    pub tx: tokio::sync::mpsc::Sender<std::io::Result<Bytes>>,
    pub rt: tokio::runtime::Handle,
    pub stall: Duration,
}

impl std::io::Write for ChannelWriter {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        use std::io::{Error, ErrorKind};
        let send = self.tx.send(Ok(Bytes::copy_from_slice(b)));
        match self.rt.block_on(tokio::time::timeout(self.stall, send)) {
            Ok(Ok(())) => Ok(b.len()),
            Ok(Err(_)) => Err(Error::new(ErrorKind::BrokenPipe, "the client went away")),
            Err(_) => Err(Error::new(
                ErrorKind::TimedOut,
                "the client stopped reading",
            )),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_parameters_at_most_once() {
        let q = params("ip=192.0.2.1&peer=%31&rib=").unwrap();
        assert_eq!(q["ip"], "192.0.2.1");
        assert_eq!(q["peer"], "1");
        assert_eq!(q["rib"], "");
        assert!(params("").unwrap().is_empty());
        let e = params("ip=1.1.1.1&limit=2&ip=2.2.2.2").unwrap_err();
        assert!(e.contains("\"ip\" given more than once"), "{e}");
        assert!(params("a=1&a=1").is_err());
    }

    #[test]
    fn hosts() {
        let lo = allowed_hosts(&[], "127.0.0.1:8080".parse().unwrap());
        for ok in [
            "localhost:8080",
            "LOCALHOST",
            "127.0.0.1:8080",
            "[::1]:8080",
            "a.localhost:1",
            "10.1.2.3",
        ] {
            assert!(host_allowed(&lo, ok), "{ok}");
        }
        for no in [
            "evil.example:8080",
            "localhost.evil.example",
            "",
            "[nonsense]:1",
            "[::1]@evil.example",
            "[::1]:8080@evil.example",
            "[::1].evil.example",
            "[::1]:",
            "[::1]:80x",
            "localhost:",
            "a.localhost:",
        ] {
            assert!(!host_allowed(&lo, no), "{no}");
        }
        let any = allowed_hosts(&[], "0.0.0.0:8080".parse().unwrap());
        assert!(host_allowed(&any, "evil.example"));
        let named = allowed_hosts(
            &["lg.example.net".into(), "other:8443".into()],
            "0.0.0.0:80".parse().unwrap(),
        );
        assert!(host_allowed(&named, "lg.example.net:80"));
        assert!(host_allowed(&named, "other:8443"));
        assert!(!host_allowed(&named, "other:9000"));
        assert!(!host_allowed(&named, "localhost"));
    }

    #[test]
    fn tokens_compare_whole() {
        assert!(same(b"s3cret", b"s3cret"));
        assert!(!same(b"s3cret", b"s3cre"));
        assert!(!same(b"s3cret", b"s3cres"));
        assert!(!same(b"", b"x"));
    }
}
