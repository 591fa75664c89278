//! The HTTP API (ARCHITECTURE §4): a thin layer over the RIB's own API.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use axum::extract::{Query as Params, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use ipfib::prefix::{AnyAddr, AnyPrefix, HostBits};
use ipfib_rib::{Instance, Match, PeerFilter, Query, RibSet};
use serde_json::{json, Value};

use super::{json as j, Ctx};

type P = Params<HashMap<String, String>>;

pub fn router(ctx: Arc<Ctx>) -> Router {
    Router::new()
        .route("/", get(page))
        .route("/api/v1/lookup", get(lookup))
        .route("/api/v1/routes", get(routes))
        .route("/api/v1/peers", get(peers))
        .route("/metrics", get(metrics))
        .route("/api/v1/dump.mrt", get(dump_mrt))
        .with_state(ctx)
}

fn bad(msg: String) -> Response {
    (StatusCode::BAD_REQUEST, Json(json!({ "error": msg }))).into_response()
}

async fn page(State(ctx): State<Arc<Ctx>>) -> Response {
    ctx.metrics.http_requests.fetch_add(1, Ordering::Relaxed);
    (
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        include_str!("page.html"),
    )
        .into_response()
}

/// `peer=ID` (a peer id) or `peer=ADDR` (every peer with that address).
fn peer_filter(v: &str) -> Result<PeerFilter, String> {
    if let Ok(id) = v.parse::<u32>() {
        return Ok(PeerFilter::Id(id));
    }
    v.parse::<IpAddr>()
        .map(PeerFilter::Address)
        .map_err(|_| format!("peer {v:?} is neither a peer id nor an address"))
}

/// `instance=` (a route distinguisher, `all`; default the global
/// instance) and `rib=` (a comma list of RIB kinds) into `query`.
fn scope(q: &HashMap<String, String>, query: &mut Query) -> Result<(), String> {
    if let Some(i) = q.get("instance") {
        query.instance = Instance::parse(i)?;
    }
    if let Some(r) = q.get("rib") {
        query.ribs = RibSet::parse(r)?;
    }
    Ok(())
}

async fn lookup(State(ctx): State<Arc<Ctx>>, Params(q): P) -> Response {
    ctx.metrics.http_requests.fetch_add(1, Ordering::Relaxed);
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
    ctx.metrics.http_requests.fetch_add(1, Ordering::Relaxed);
    let Some(text) = q.get("prefix") else {
        return bad("missing prefix=P".into());
    };
    // An address alone is its host prefix.
    let prefix = if text.contains('/') {
        AnyPrefix::parse(text, HostBits::Reject).map_err(|e| e.to_string())
    } else {
        text.parse::<IpAddr>()
            .map_err(|e| e.to_string())
            .and_then(|a| {
                let a = AnyAddr::unmapped(a).to_ip();
                let len = if a.is_ipv4() { 32 } else { 128 };
                AnyPrefix::from_ip(a, len, HostBits::Reject).map_err(|e| e.to_string())
            })
    };
    let prefix = match prefix {
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
    let limit = match q.get("limit").map(|l| l.parse::<usize>()) {
        None => 10_000,
        Some(Ok(l)) => l.min(1_000_000),
        Some(Err(_)) => return bad("limit must be a number".into()),
    };
    let mut query = Query::default();
    if let Err(e) = scope(&q, &mut query) {
        return bad(e);
    }
    let rib = Arc::clone(&ctx.rib);
    // `longer` scans the RIB: off the async workers.
    let found =
        tokio::task::spawn_blocking(move || rib.routes_matching_in(&prefix, m, limit + 1, &query))
            .await;
    let Ok(mut found) = found else {
        return (
            StatusCode::INTERNAL_SERVER_ERROR,
            Json(json!({ "error": "lookup task failed" })),
        )
            .into_response();
    };
    let truncated = found.len() > limit;
    found.truncate(limit);
    Json(json!({
        "prefix": prefix.to_string(),
        "match": q.get("match").map(String::as_str).unwrap_or("exact"),
        "routes": found.iter().map(j::route).collect::<Vec<_>>(),
        "truncated": truncated,
    }))
    .into_response()
}

async fn peers(State(ctx): State<Arc<Ctx>>) -> Response {
    ctx.metrics.http_requests.fetch_add(1, Ordering::Relaxed);
    let sessions: Vec<Value> = ctx
        .sessions
        .list()
        .iter()
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
    let peers: Vec<Value> = ctx.rib.peers().all().map(|p| j::peer(&p)).collect();
    Json(json!({ "sessions": sessions, "peers": peers })).into_response()
}

async fn metrics(State(ctx): State<Arc<Ctx>>) -> Response {
    ctx.metrics.http_requests.fetch_add(1, Ordering::Relaxed);
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        ctx.metrics.render(&ctx.rib),
    )
        .into_response()
}

/// The RIB's live routes as MRT TABLE_DUMP_V2 (RFC 6396), built off the
/// async workers.
async fn dump_mrt(State(ctx): State<Arc<Ctx>>) -> Response {
    ctx.metrics.http_requests.fetch_add(1, Ordering::Relaxed);
    // One dump at a time: each is built whole in memory (hundreds of MB
    // at full tables). The permit moves into the blocking task, so a
    // client that hangs up does not free it while its dump still runs.
    let Ok(permit) = Arc::clone(&ctx.dump_lock).acquire_owned().await else {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(json!({ "error": "shutting down" })),
        )
            .into_response();
    };
    let rib = Arc::clone(&ctx.rib);
    let out = tokio::task::spawn_blocking(move || {
        let _permit = permit;
        let mut buf = Vec::new();
        ipfib_rib::mrt::dump(&rib, &mut buf).map(|_| buf)
    })
    .await;
    match out {
        Ok(Ok(buf)) => (
            [
                (header::CONTENT_TYPE, "application/octet-stream"),
                (
                    header::CONTENT_DISPOSITION,
                    "attachment; filename=\"rib.mrt\"",
                ),
            ],
            buf,
        )
            .into_response(),
        Ok(Err(e)) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            Json(json!({ "error": e.to_string() })),
        )
            .into_response(),
        Err(_) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            Json(json!({ "error": "dump task failed" })),
        )
            .into_response(),
    }
}
