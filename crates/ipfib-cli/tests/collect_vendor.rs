//! Vendor behaviours as crafted BMP streams, checked through the HTTP API
//! of a collector on loopback: per-family Loc-RIB Peer Ups with ADD-PATH
//! on one family only, VRF Loc-RIB and RD-instance peers, Adj-RIB-Out,
//! TLVs after the PDU, a repeated Peer Up, a zero-length next hop.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

const IPFIB: &str = env!("CARGO_BIN_EXE_ipfib");

/// The collector, stopped (by its own PID) when dropped.
struct Collector {
    child: Child,
    bmp: String,
    http: String,
}

impl Drop for Collector {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start() -> Collector {
    let mut child = Command::new(IPFIB)
        .args(["collect", "--bmp", "127.0.0.1:0", "--http", "127.0.0.1:0"])
        .args(["--log-level", "warn"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    for _ in 0..20 {
        line.clear();
        err.read_line(&mut line).unwrap();
        if line.contains("BMP on") {
            break;
        }
    }
    // "ipfib collect: BMP on A, HTTP on http://B/"
    let bmp = line
        .split("BMP on ")
        .nth(1)
        .unwrap()
        .split(',')
        .next()
        .unwrap();
    let http = line
        .split("http://")
        .nth(1)
        .unwrap()
        .trim()
        .trim_end_matches('/');
    let (bmp, http) = (bmp.to_string(), http.to_string());
    // Keep draining stderr so the collector never blocks on it.
    std::thread::spawn(move || {
        let mut sink = String::new();
        let _ = err.read_to_string(&mut sink);
    });
    Collector { child, bmp, http }
}

/// GET `path`: (status, JSON body).
fn get(c: &Collector, path: &str) -> (u16, Value) {
    let mut s = TcpStream::connect(&c.http).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(s, "GET {path} HTTP/1.0\r\nHost: {}\r\n\r\n", c.http).unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let status = out[9..12].parse().unwrap();
    let body = out.split("\r\n\r\n").nth(1).unwrap_or("");
    (status, serde_json::from_str(body).unwrap_or(Value::Null))
}

/// GET until `ok` holds for the answer (bounded: 10 s), then the answer.
fn wait(c: &Collector, path: &str, ok: impl Fn(u16, &Value) -> bool) -> (u16, Value) {
    let t = Instant::now();
    loop {
        let (st, v) = get(c, path);
        if ok(st, &v) || t.elapsed() > Duration::from_secs(10) {
            return (st, v);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn bmp(kind: u8, body: &[u8]) -> Vec<u8> {
    let mut m = vec![3];
    m.extend_from_slice(&((6 + body.len()) as u32).to_be_bytes());
    m.push(kind);
    m.extend_from_slice(body);
    m
}

fn peer_header(peer_type: u8, flags: u8, rd: u64, addr: [u8; 4]) -> Vec<u8> {
    let mut h = vec![peer_type, flags];
    h.extend_from_slice(&rd.to_be_bytes());
    h.extend_from_slice(&[0; 12]);
    h.extend_from_slice(&addr);
    h.extend_from_slice(&64500u32.to_be_bytes());
    h.extend_from_slice(&[192, 0, 2, 9]);
    h.extend_from_slice(&[0; 8]);
    h
}

fn bgp(kind: u8, body: &[u8]) -> Vec<u8> {
    let mut m = vec![0xff; 16];
    m.extend_from_slice(&((19 + body.len()) as u16).to_be_bytes());
    m.push(kind);
    m.extend_from_slice(body);
    m
}

fn open(caps: &[u8]) -> Vec<u8> {
    let mut c = vec![65, 4, 0, 0, 0xfb, 0xf4];
    c.extend_from_slice(caps);
    let mut body = vec![4, 0xfb, 0xf4, 0, 90, 192, 0, 2, 9, (c.len() + 2) as u8, 2];
    body.push(c.len() as u8);
    body.extend(c);
    bgp(1, &body)
}

fn peer_up(h: &[u8], caps: &[u8]) -> Vec<u8> {
    let mut b = h.to_vec();
    b.extend_from_slice(&[0; 20]);
    b.extend(open(caps));
    b.extend(open(caps));
    bmp(3, &b)
}

/// An UPDATE: ORIGIN, AS_PATH 64500, NEXT_HOP 192.0.2.1, `extra`
/// attributes, conventional `nlri`.
fn update(extra: &[u8], nlri: &[u8]) -> Vec<u8> {
    let mut a = vec![0x40, 1, 1, 0, 0x40, 2, 6, 2, 1, 0, 0, 0xfb, 0xf4];
    if !nlri.is_empty() {
        a.extend([0x40, 3, 4, 192, 0, 2, 1]);
    }
    a.extend_from_slice(extra);
    let mut body = vec![0, 0];
    body.extend_from_slice(&(a.len() as u16).to_be_bytes());
    body.extend(a);
    body.extend_from_slice(nlri);
    bgp(2, &body)
}

fn rm(h: &[u8], u: &[u8], tlvs: &[u8]) -> Vec<u8> {
    let mut b = h.to_vec();
    b.extend_from_slice(u);
    b.extend_from_slice(tlvs);
    bmp(0, &b)
}

#[test]
fn vendor_behaviours_through_the_http_api() {
    let c = start();
    let mut s = TcpStream::connect(&c.bmp).unwrap();
    let mut stream = Vec::new();
    // Initiation: sysName.
    stream.extend(bmp(4, &[0, 2, 0, 6, b'r', b'o', b'u', b't', b'e', b'r']));
    // Loc-RIB, one Peer Up per family: ADD-PATH on IPv4 only.
    let loc = peer_header(3, 0, 0, [0; 4]);
    let v4 = [1, 4, 0, 1, 0, 1, 69, 4, 0, 1, 1, 3];
    let v6 = [1, 4, 0, 2, 0, 1];
    stream.extend(peer_up(&loc, &v4));
    stream.extend(peer_up(&loc, &v6));
    stream.extend(rm(&loc, &update(&[], &[0, 0, 0, 7, 24, 198, 51, 100]), &[]));
    // The IPv4 Peer Up again: the route stays.
    stream.extend(peer_up(&loc, &v4));
    // Zero-length MP_REACH next hop (IPv6, no ADD-PATH).
    let mp = [0x80, 14, 10, 0, 2, 1, 0, 0, 32, 0x20, 0x01, 0x0d, 0xb8];
    stream.extend(rm(&loc, &update(&mp, &[]), &[]));
    // VRF Loc-RIB (RD 64499:11) and an RD-instance peer (64499:12).
    let vrf = peer_header(3, 0, 0x0000_fbf3_0000_000b, [0; 4]);
    let rd1 = peer_header(1, 0, 0x0000_fbf3_0000_000c, [192, 0, 2, 3]);
    for h in [&vrf, &rd1] {
        stream.extend(peer_up(h, &[]));
        stream.extend(rm(h, &update(&[], &[8, 10]), &[]));
    }
    // Adj-RIB-Out pre-policy (O flag), with an information TLV after
    // the PDU.
    let out = peer_header(0, 0x10, 0, [192, 0, 2, 4]);
    stream.extend(peer_up(&out, &[]));
    stream.extend(rm(
        &out,
        &update(&[], &[12, 172, 16]),
        &[0, 0, 0, 3, b'a', b'b', b'c'],
    ));
    s.write_all(&stream).unwrap();

    let (st, v) = wait(
        &c,
        "/api/v1/lookup?ip=172.16.0.1&rib=adj-rib-out-pre",
        |st, _| st == 200,
    );
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["rib"], "adj-rib-out-pre");
    assert_eq!(v["peer_type"], "global");
    assert_eq!(v["rd"], Value::Null);
    assert_eq!(
        get(&c, "/api/v1/lookup?ip=172.16.0.1").0,
        404,
        "Adj-RIB-Out is not default"
    );

    let (st, v) = wait(&c, "/api/v1/lookup?ip=198.51.100.1", |st, _| st == 200);
    assert_eq!(st, 200, "{v}");
    assert_eq!(
        (v["prefix"].as_str(), v["path_id"].as_u64()),
        (Some("198.51.100.0/24"), Some(7))
    );
    assert_eq!(v["peer_type"], "loc-rib");
    assert_eq!(
        get(&c, "/api/v1/lookup?ip=203.0.113.1").0,
        404,
        "no fake 0.0.0.0/0"
    );

    let (st, v) = wait(&c, "/api/v1/lookup?ip=2001:db8::1", |st, _| st == 200);
    assert_eq!(st, 200, "{v}");
    assert_eq!(v["next_hop"], Value::Null);

    assert_eq!(
        get(&c, "/api/v1/lookup?ip=10.1.2.3").0,
        404,
        "VRF routes stay out"
    );
    let (st, v) = wait(
        &c,
        "/api/v1/lookup?ip=10.1.2.3&instance=64499:11",
        |st, _| st == 200,
    );
    assert_eq!(st, 200, "{v}");
    assert_eq!(
        (v["peer_type"].as_str(), v["rd"].as_str()),
        (Some("loc-rib"), Some("64499:11"))
    );
    let (_, v) = get(&c, "/api/v1/lookup?ip=10.1.2.3&instance=64499:12");
    assert_eq!(
        (v["peer_type"].as_str(), v["rd"].as_str()),
        (Some("rd"), Some("64499:12"))
    );
    let (st, v) = get(&c, "/api/v1/routes?prefix=10.0.0.0/8&instance=all");
    assert_eq!(st, 200);
    assert_eq!(v["routes"].as_array().unwrap().len(), 2, "{v}");
    let (_, v) = get(&c, "/api/v1/routes?prefix=10.0.0.0/8");
    assert_eq!(v["routes"].as_array().unwrap().len(), 0, "{v}");

    for bad in ["instance=nope", "rib=adj-rib-in", "instance=1.2.3.4:70000"] {
        let (st, v) = get(&c, &format!("/api/v1/lookup?ip=10.1.2.3&{bad}"));
        assert_eq!(st, 400, "{bad}: {v}");
        assert!(v["error"].as_str().is_some(), "{bad}");
    }
    let (_, v) = get(&c, "/api/v1/peers");
    assert_eq!(v["sessions"][0]["sys_name"], "router");
    let (_, m) = {
        let mut s = TcpStream::connect(&c.http).unwrap();
        write!(s, "GET /metrics HTTP/1.0\r\nHost: {}\r\n\r\n", c.http).unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        (0, out)
    };
    assert!(
        m.contains("ipfib_bmp_update_errors_total{action=\"treat-as-withdraw\"} 0"),
        "{m}"
    );
    assert!(m.contains("ipfib_bmp_adj_rib_out_messages_total 1"), "{m}");
}
