"""`ipfib collect` against hostile senders and hostile HTTP clients, each
attack at a scale that runs in seconds, each asserting the bound its
defence promises: one big `routes` query answers one bounded page whose
cursors walk the whole answer exactly once (against the dump itself as the
oracle), idle HTTP connections and silent BMP connections neither lock out
a lookup nor a real BMP session, refused sources change nothing,
unfinished messages and per-peer routes are capped, the token and Host
checks refuse what they must. Loopback only; every process stopped by its
own PID; lookups during each attack must stay answered (generous bounds:
this is not a benchmark)."""

from __future__ import annotations

import http.client
import ipaddress
import json
import socket
import struct
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from email.message import Message
from pathlib import Path

import pytest

import live
from collector import Collector, running
from support import data_file

DUMP = "rib.20260730.1400.first2MiB.mrt.bz2"


# --- helpers -----------------------------------------------------------------


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def fetch(
    c: Collector,
    path: str,
    headers: dict[str, str] | None = None,
    timeout: float = 30,
    query: dict[str, str] | None = None,
    **params: str,
) -> tuple[int, bytes, Message]:
    """Status, body and headers (case-insensitive) of one GET."""
    params = {**(query or {}), **params}
    url = c.http + path + ("?" + urllib.parse.urlencode(params) if params else "")
    req = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read(), r.headers
    except urllib.error.HTTPError as e:
        return e.code, e.read(), e.headers


def lookup_latency(c: Collector, ip: str = "8.8.8.8") -> float:
    t0 = time.monotonic()
    status, _, _ = fetch(c, "/api/v1/lookup", timeout=20, ip=ip)
    assert status in (200, 404), status
    return time.monotonic() - t0


class Lookups:
    """Lookups in a loop on a thread while an attack runs: the worst
    latency seen, and how many were answered."""

    def __init__(self, c: Collector) -> None:
        self.c, self.worst, self.done = c, 0.0, 0
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.worst = max(self.worst, lookup_latency(self.c))
            self.done += 1
            time.sleep(0.02)

    def __enter__(self) -> Lookups:
        self._t.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._t.join(timeout=30)


def wait_for(
    what: str, c: Collector, cond: Callable[[Collector], bool], timeout: float = 10
) -> float:
    """Poll `cond(c)` until true (bounded); the seconds it took."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if cond(c):
            return time.monotonic() - t0
        time.sleep(0.05)
    raise AssertionError(f"not within {timeout} s: {what}")


def closed_by_peer(s: socket.socket, timeout: float) -> bool:
    """Whether the other end closes within `timeout` (whatever it sent
    first, e.g. a 503, is read and dropped)."""
    deadline = time.monotonic() + timeout
    try:
        while (left := deadline - time.monotonic()) > 0:
            s.settimeout(left)
            if s.recv(1 << 16) == b"":
                return True
    except (TimeoutError, socket.timeout):
        return False
    except ConnectionResetError:
        return True
    return False


# BMP messages (RFC 7854), just enough for a route.


def bmp(kind: int, body: bytes) -> bytes:
    return struct.pack(">BIB", 3, 6 + len(body), kind) + body


def initiation(name: bytes = b"rtr") -> bytes:
    return bmp(4, struct.pack(">HH", 2, len(name)) + name)


def peer_header(peer: str, asn: int) -> bytes:
    addr = bytes(12) + ipaddress.IPv4Address(peer).packed
    return (
        struct.pack(">BBQ", 0, 0, 0)
        + addr
        + struct.pack(">II", asn, int(ipaddress.IPv4Address(peer)))
        + bytes(8)
    )


def bgp_open(asn: int, bgp_id: str) -> bytes:
    body = struct.pack(">BHH", 4, asn, 90) + ipaddress.IPv4Address(bgp_id).packed + b"\x00"
    return b"\xff" * 16 + struct.pack(">HB", 19 + len(body), 1) + body


def peer_up(peer: str, asn: int) -> bytes:
    body = peer_header(peer, asn) + bytes(16) + struct.pack(">HH", 179, 40000)
    return bmp(3, body + bgp_open(64999, "192.0.2.254") + bgp_open(asn, peer))


def route_monitoring(peer: str, asn: int, prefixes: list[str]) -> bytes:
    attrs = b"\x40\x01\x01\x00"  # ORIGIN IGP
    attrs += b"\x40\x02\x06\x02\x01" + struct.pack(">I", asn)  # AS_PATH
    attrs += b"\x40\x03\x04" + ipaddress.IPv4Address(peer).packed  # NEXT_HOP
    nlri = b""
    for p in prefixes:
        n = ipaddress.IPv4Network(p)
        nlri += bytes([n.prefixlen]) + n.network_address.packed[: (n.prefixlen + 7) // 8]
    body = struct.pack(">H", 0) + struct.pack(">H", len(attrs)) + attrs + nlri
    update = b"\xff" * 16 + struct.pack(">HB", 19 + len(body), 2) + body
    return bmp(0, peer_header(peer, asn) + update)


def bmp_connect(c: Collector, source: str = "127.0.0.1") -> socket.socket:
    return socket.create_connection(
        ("127.0.0.1", c.bmp_port), timeout=10, source_address=(source, 0)
    )


# --- the big query -------------------------------------------------------------


@pytest.fixture(scope="module")
def mrt_collector() -> Iterator[Collector]:
    yield from running("--mrt", str(data_file(DUMP)), "--grace", "0")


def dump_oracle() -> Counter[str]:
    """Routes per prefix, read from the dump file itself (not the server)."""
    data = live.read_dump(data_file(DUMP))
    counts: Counter[str] = Counter()
    for r in live.mrt_records(data):
        if (r.type, r.subtype) != (13, 2):  # RIB_IPV4_UNICAST
            continue
        plen = r.body[4]
        nbytes = (plen + 7) // 8
        addr = r.body[5 : 5 + nbytes] + bytes(4 - nbytes)
        prefix = f"{ipaddress.IPv4Address(addr)}/{plen}"
        counts[prefix] += struct.unpack_from(">H", r.body, 5 + nbytes)[0]
    return counts


def test_the_biggest_routes_query_is_one_bounded_page(mrt_collector: Collector) -> None:
    """Before: limit=1000000 over 0.0.0.0/0 built the whole answer (238 MB
    of JSON, RSS +4.4 GB). Now: at most 10000 routes, a next_cursor, RSS
    growth bounded, lookups answered meanwhile."""
    c = mrt_collector
    before = rss_kib(c.proc.pid)
    with Lookups(c) as lk:
        t0 = time.monotonic()
        status, body, headers = fetch(
            c, "/api/v1/routes", prefix="0.0.0.0/0", match="longer", limit="1000000"
        )
        took = time.monotonic() - t0
        time.sleep(0.2)
    answer = json.loads(body)
    assert status == 200, answer
    assert len(answer["routes"]) == 10_000 and answer["truncated"] is True
    assert answer["next_cursor"], answer.keys()
    grew = rss_kib(c.proc.pid) - before
    print(
        f"big query: {took:.2f} s, {len(body)} bytes, RSS +{grew} KiB, "
        f"worst lookup {lk.worst:.3f} s"
    )
    assert took < 10, took
    assert grew < 100 * 1024, f"RSS grew {grew} KiB"
    assert lk.done > 0 and lk.worst < 5, (lk.done, lk.worst)
    # Prefix order, then the default limit.
    prefixes = [ipaddress.IPv4Network(r["prefix"]) for r in answer["routes"]]
    assert prefixes == sorted(prefixes, key=lambda n: (int(n.network_address), n.prefixlen))
    status, body, _ = fetch(c, "/api/v1/routes", prefix="0.0.0.0/0", match="longer")
    assert status == 200 and len(json.loads(body)["routes"]) == 1000


@pytest.mark.parametrize(("query", "limit"), [("0.0.0.0/0", 10_000), ("8.0.0.0/7", 777)])
def test_pages_walk_every_route_exactly_once(
    mrt_collector: Collector, query: str, limit: int
) -> None:
    """Following next_cursor gives every route of every covered prefix of
    the dump exactly once (oracle: the dump file read here)."""
    c = mrt_collector
    q = ipaddress.IPv4Network(query)
    want = Counter(
        {p: n for p, n in dump_oracle().items() if ipaddress.IPv4Network(p).subnet_of(q)}
    )
    assert sum(want.values()) > limit
    got: Counter[str] = Counter()
    seen: set[tuple[str, int, int]] = set()
    cursor = None
    for _ in range(sum(want.values()) // limit + 2):
        params = {"prefix": query, "match": "longer", "limit": str(limit)}
        if cursor:
            params["cursor"] = cursor
        status, body, _ = fetch(c, "/api/v1/routes", query=params)
        page = json.loads(body)
        assert status == 200, page
        assert len(page["routes"]) <= limit
        for r in page["routes"]:
            key = (r["prefix"], r["peer"], r["path_id"])
            assert key not in seen, key
            seen.add(key)
            got[r["prefix"]] += 1
        cursor = page.get("next_cursor")
        if cursor is None:
            assert page["truncated"] is False
            break
    assert cursor is None, "the pages did not end"
    assert got == want


@pytest.mark.parametrize(
    "params",
    [
        {"prefix": "0.0.0.0/0", "match": "longer", "cursor": "nonsense"},
        {"prefix": "8.0.0.0/8", "match": "longer", "cursor": "4-09000000-8-0"},  # not under 8/8
        {"prefix": "8.0.0.0/8", "limit": "0"},
        {"prefix": "8.0.0.0/8", "limit": "many"},
    ],
)
def test_bad_pages_are_400(mrt_collector: Collector, params: dict[str, str]) -> None:
    status, body, _ = fetch(mrt_collector, "/api/v1/routes", query=params)
    assert status == 400 and "error" in json.loads(body)


def test_peers_are_paginated_and_live_by_default(mrt_collector: Collector) -> None:
    c = mrt_collector
    status, body, _ = fetch(c, "/api/v1/peers", limit="10")
    first = json.loads(body)
    assert status == 200 and len(first["peers"]) == 10 and first["next_cursor"]
    assert first["summary"]["peers_up"] == 28 and first["summary"]["routes"] == 679347
    ids = [p["id"] for p in first["peers"]]
    cursor = first["next_cursor"]
    for _ in range(10):
        _, body, _ = fetch(c, "/api/v1/peers", limit="10", cursor=cursor)
        page = json.loads(body)
        assert "sessions" not in page
        ids += [p["id"] for p in page["peers"]]
        cursor = page.get("next_cursor")
        if not cursor:
            break
    assert len(ids) == len(set(ids)) == 28 and ids == sorted(ids)
    assert fetch(c, "/api/v1/peers", state="bogus")[0] == 400


def test_dumps_stream_one_at_a_time_and_stalled_readers_let_go() -> None:
    """Before: each dump.mrt client got its own full copy (20 slow readers
    held 960 MB). Now: one dump streams at a time; a reader that stops
    reading is cut after --http-write-stall, the next one waits for its
    turn (at most 10 s, then 503); RSS stays bounded; then a reader gets
    the whole dump."""
    dump = data_file(DUMP)
    args = (
        "--mrt",
        str(dump),
        "--grace",
        "0",
        "--http-write-stall",
        "2",
        "--http-header-timeout",
        "2",
    )
    for c in running(*args):
        port = int(c.http.rsplit(":", 1)[1])
        before = rss_kib(c.proc.pid)
        with ExitStack() as stack:
            for _ in range(5):
                s = stack.enter_context(socket.create_connection(("127.0.0.1", port), timeout=10))
                s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
                s.sendall(b"GET /api/v1/dump.mrt HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            time.sleep(1)
            grew = rss_kib(c.proc.pid) - before
            assert lookup_latency(c) < 5
            # Every stalled reader is let go (cut, or 503 after its wait)
            # without reading a byte of it here; the /metrics request
            # counts itself.
            took = wait_for(
                "the stalled readers let go",
                c,
                lambda c: c.metric("ipfib_http_connections") <= 1,
                45,
            )
            grew = max(grew, rss_kib(c.proc.pid) - before)
        print(f"5 stalled dump readers: RSS +{grew} KiB, all let go after {took + 1:.1f} s")
        assert grew < 100 * 1024, grew
        t0 = time.monotonic()
        status, body, _ = fetch(c, "/api/v1/dump.mrt", timeout=120)
        assert status == 200 and len(body) > 10_000_000, (status, len(body))
        print(
            f"a full dump after the stalled ones: {time.monotonic() - t0:.2f} s, {len(body)} bytes"
        )


# --- HTTP connections ----------------------------------------------------------


def test_idle_http_connections_block_neither_lookups_nor_bmp() -> None:
    """Before: 300 idle connections exhausted descriptors and held BMP
    accepts for 26 s. Now: connections past --http-max-conns are closed at
    once (503), idle ones are closed after --http-header-timeout, lookups
    are answered once they go and BMP accepts never wait."""
    for c in running("--http-max-conns", "64", "--http-header-timeout", "2", "--grace", "0"):
        port = int(c.http.rsplit(":", 1)[1])
        limits = Path(f"/proc/{c.proc.pid}/limits").read_text()
        soft, hard = next(
            line.split()[3:5] for line in limits.splitlines() if line.startswith("Max open files")
        )
        assert soft == hard, limits  # raised to the hard limit
        with ExitStack() as stack:
            idle = [
                stack.enter_context(socket.create_connection(("127.0.0.1", port), timeout=10))
                for _ in range(48)
            ]
            t0 = time.monotonic()
            assert lookup_latency(c) < 2  # under the cap: answered at once
            extra = [
                stack.enter_context(socket.create_connection(("127.0.0.1", port), timeout=10))
                for _ in range(100)
            ]
            # BMP accepts do not wait for HTTP (while every HTTP slot is
            # taken: the route is checked once HTTP answers again).
            bmp = stack.enter_context(bmp_connect(c))
            bmp.sendall(
                initiation()
                + peer_up("192.0.2.1", 64501)
                + route_monitoring("192.0.2.1", 64501, ["203.0.113.0/24"])
            )
            refused = sum(closed_by_peer(s, 5) for s in extra[16:])
            assert refused >= 80, refused  # past the cap: closed at once
            # The idle ones are closed by the header timeout.
            assert all(closed_by_peer(s, 10) for s in idle + extra[:16])
            print(f"idle connections closed after {time.monotonic() - t0:.1f} s")
            assert time.monotonic() - t0 < 10
            wait_for("lookups again", c, lambda c: lookup_latency(c) < 2, 10)
            assert fetch(c, "/api/v1/lookup", ip="203.0.113.1")[0] == 200
            assert not closed_by_peer(bmp, 0.1)
        assert c.metric("ipfib_http_refused_total") >= 80


def test_slow_header_senders_are_cut() -> None:
    """A client that trickles its request head byte by byte is closed at
    the header timeout, not kept while it keeps trickling."""
    for c in running("--http-header-timeout", "1", "--grace", "0"):
        port = int(c.http.rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
            t0 = time.monotonic()
            closed = False
            for b in (
                b"GET /api/v1/lookup?ip=1.2.3.4 HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: "
                + b"a" * 200
            ):
                try:
                    s.sendall(bytes([b]))
                except (BrokenPipeError, ConnectionResetError):
                    closed = True
                    break
                time.sleep(0.05)
                if time.monotonic() - t0 > 5:
                    break
            assert closed or closed_by_peer(s, 5)
            assert time.monotonic() - t0 < 5


# --- BMP senders ---------------------------------------------------------------


def test_silent_bmp_connections_are_closed_and_do_not_lock_out_a_router() -> None:
    """Before: 1,024 silent connections filled --max-sessions for the 600 s
    idle timeout. Now: each must deliver its Initiation within
    --initiation-timeout; a real session gets in after that."""
    args = (
        "--initiation-timeout",
        "1",
        "--max-sessions",
        "32",
        "--max-sessions-per-source",
        "64",
        "--grace",
        "0",
    )
    for c in running(*args):
        with ExitStack() as stack, Lookups(c) as lk:
            silent = [stack.enter_context(bmp_connect(c)) for _ in range(32)]
            wait_for("32 open sessions", c, lambda c: c.metric("ipfib_bmp_sessions") == 32, 5)
            with bmp_connect(c) as refused:
                assert closed_by_peer(refused, 5)  # full
            t0 = time.monotonic()
            assert all(closed_by_peer(s, 10) for s in silent)
            took = time.monotonic() - t0
        assert took < 5, took
        assert c.metric('ipfib_bmp_session_ends_total{reason="no_initiation"}') == 32
        assert c.metric('ipfib_bmp_refused_total{reason="session_limit"}') == 1
        assert lk.worst < 5
        with bmp_connect(c) as s:
            s.sendall(
                initiation()
                + peer_up("192.0.2.1", 64501)
                + route_monitoring("192.0.2.1", 64501, ["203.0.113.0/24"])
            )
            wait_for(
                "the real route",
                c,
                lambda c: fetch(c, "/api/v1/lookup", ip="203.0.113.9")[0] == 200,
                5,
            )
        print(f"32 silent sessions closed {took:.1f} s after the 1 s deadline started")


def test_refused_sources_change_nothing() -> None:
    """--bmp-allow: a connection from elsewhere is closed at accept and
    counted (ipfib_bmp_refused_total{reason="not_allowed"}); its routes
    never appear; an allowed source's do."""
    for c in running("--bmp-allow", "127.0.0.2/32", "--bmp-allow", "2001:db8::/32", "--grace", "0"):
        msgs = (
            initiation()
            + peer_up("192.0.2.66", 64666)
            + route_monitoring("192.0.2.66", 64666, ["198.51.100.0/24"])
        )
        with bmp_connect(c, "127.0.0.1") as s:
            try:
                s.sendall(msgs)
            except (BrokenPipeError, ConnectionResetError):
                pass
            assert closed_by_peer(s, 5)
        time.sleep(0.3)
        assert fetch(c, "/api/v1/lookup", ip="198.51.100.1")[0] == 404
        assert c.metric('ipfib_bmp_refused_total{reason="not_allowed"}') == 1
        assert c.metric("ipfib_bmp_sessions_accepted_total") == 0
        with bmp_connect(c, "127.0.0.2") as s:
            s.sendall(msgs)
            wait_for(
                "the allowed route",
                c,
                lambda c: fetch(c, "/api/v1/lookup", ip="198.51.100.1")[0] == 200,
                5,
            )


def test_per_source_sessions_are_capped() -> None:
    for c in running("--max-sessions-per-source", "3", "--grace", "0"):
        with ExitStack() as stack:
            mine = [stack.enter_context(bmp_connect(c, "127.0.0.3")) for _ in range(3)]
            for s in mine:
                s.sendall(initiation())
            wait_for("3 sessions", c, lambda c: c.metric("ipfib_bmp_sessions") == 3, 5)
            with bmp_connect(c, "127.0.0.3") as fourth:
                assert closed_by_peer(fourth, 5)
            with bmp_connect(c, "127.0.0.4") as other:  # another source: room
                other.sendall(initiation())
                wait_for("a 4th session", c, lambda c: c.metric("ipfib_bmp_sessions") == 4, 5)
        assert c.metric('ipfib_bmp_refused_total{reason="per_source_limit"}') == 1


def test_unfinished_messages_are_bounded() -> None:
    """Before: 1,000 unfinished 1 MiB messages held 1.06 GB. Now: a
    message past the largest legal BMP message (69,689 bytes) ends its
    session at its header, and the unfinished bytes held over all
    sessions stay under --max-buffered."""
    cap = 1_000_000
    args = ("--max-buffered", str(cap), "--max-sessions-per-source", "64", "--grace", "0")
    for c in running(*args):
        with bmp_connect(c) as s:
            s.sendall(initiation() + struct.pack(">BIB", 3, 1 << 20, 0))
            assert closed_by_peer(s, 5)
        assert "outside 6..=69689" in c.log()
        before = rss_kib(c.proc.pid)
        with ExitStack() as stack, Lookups(c) as lk:
            socks = [stack.enter_context(bmp_connect(c)) for _ in range(40)]
            for s in socks:
                try:
                    s.sendall(initiation() + struct.pack(">BIB", 3, 69_000, 0) + bytes(50_000))
                except (BrokenPipeError, ConnectionResetError):
                    pass
            wait_for(
                "sessions cut at the buffer limit",
                c,
                lambda c: c.metric('ipfib_bmp_session_ends_total{reason="buffer_limit"}') >= 15,
                10,
            )
            held = c.metric("ipfib_bmp_buffered_bytes")
            grew = rss_kib(c.proc.pid) - before
        print(f"40 unfinished 69 kB messages: {held:.0f} bytes held, RSS +{grew} KiB")
        assert held <= cap
        assert grew < 50 * 1024
        assert lk.worst < 5


def test_peer_and_route_limits_drop_and_count() -> None:
    """--max-routes-per-peer and --max-peers-per-session: like BGP
    maximum-prefix, past the limit new routes (and further neighbours) are
    dropped and counted, logged once; what was in stays."""
    args = ("--max-routes-per-peer", "5", "--max-peers-per-session", "2", "--grace", "0")
    # (The checks run while the session is open: with --grace 0 its
    # routes go when it closes.)
    for c in running(*args):
        prefixes = [f"10.{i}.0.0/16" for i in range(10)]
        with bmp_connect(c) as s:
            msgs = initiation()
            for i, peer in enumerate(["192.0.2.1", "192.0.2.2", "192.0.2.3"]):
                msgs += peer_up(peer, 64501 + i) + route_monitoring(peer, 64501 + i, prefixes)
            msgs += route_monitoring("192.0.2.1", 64501, prefixes)  # again: replaces, adds nothing
            s.sendall(msgs)
            wait_for(
                "the messages",
                c,
                lambda c: c.metric('ipfib_bmp_messages_total{type="route_monitoring"}') == 4,
                5,
            )
            assert c.metric("ipfib_rib_routes") == 10  # 5 of each of the first two peers
            assert c.metric("ipfib_bmp_routes_over_limit_total") == 5 + 5 + 5
            assert c.metric("ipfib_bmp_peers_over_limit_total") == 2  # the 3rd's Peer Up and routes
            status, body, _ = fetch(c, "/api/v1/routes", prefix="10.0.0.0/8", match="longer")
            got = sorted((r["peer_address"], r["prefix"]) for r in json.loads(body)["routes"])
            assert got == sorted((p, q) for p in ["192.0.2.1", "192.0.2.2"] for q in prefixes[:5])
        log = c.log()
        assert log.count("reached 5 routes") == 2 and log.count("2 neighbours reached") == 1, log


# --- HTTP access ---------------------------------------------------------------


def requests_total(c: Collector, auth: dict[str, str]) -> float:
    """`ipfib_http_requests_total` now (the /metrics request counts too)."""
    _, text, _ = fetch(c, "/metrics", headers=auth)
    lines = text.decode().splitlines()
    return float([x for x in lines if x.startswith("ipfib_http_requests_total ")][0].split()[1])


def test_token_host_and_headers(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("s3cret-token\n")
    for c in running("--http-token-file", str(token), "--grace", "0"):
        auth = {"Authorization": "Bearer s3cret-token"}
        for path in ["/api/v1/peers", "/metrics", "/api/v1/dump.mrt"]:
            assert fetch(c, path)[0] == 401, path
            assert fetch(c, path, headers={"Authorization": "Bearer s3cret-tokeN"})[0] == 401
        status, _, headers = fetch(c, "/api/v1/lookup", headers=auth, ip="192.0.2.1")
        assert status == 404 and headers["X-Content-Type-Options"] == "nosniff"
        status, page, headers = fetch(c, "/")  # the page itself holds no data
        assert status == 200 and b"page.js" in page
        assert "script-src 'self'" in headers["Content-Security-Policy"]
        assert fetch(c, "/page.js")[0] == 200
        # DNS rebinding: a name the server was not told about is refused.
        assert fetch(c, "/", headers={"Host": "evil.example"})[0] == 421
        port = c.http.rsplit(":", 1)[1]
        assert fetch(c, "/", headers={"Host": f"localhost:{port}"})[0] == 200
        # An absolute-form target names the host too (RFC 9112 §3.2.2):
        # a foreign one is refused whatever the Host header says.
        for target, want in [
            ("http://evil.example/", 421),
            ("http://[::1]@evil.example/", 421),
            (f"http://localhost:{port}@evil.example/", 421),
            (f"http://localhost:{port}/", 200),
        ]:
            conn = http.client.HTTPConnection("127.0.0.1", int(port), timeout=10)
            try:
                conn.request("GET", target, headers={"Host": f"localhost:{port}"})
                assert conn.getresponse().status == want, target
            finally:
                conn.close()
        # Two Host headers are refused, in either order.
        for hosts in [("localhost", "evil.example"), ("evil.example", "localhost")]:
            with socket.create_connection(("127.0.0.1", int(port)), timeout=10) as s:
                head = "".join(f"Host: {h}\r\n" for h in hosts)
                s.sendall(f"GET / HTTP/1.1\r\n{head}Connection: close\r\n\r\n".encode())
                first = s.recv(64).split(b"\r\n")[0]
                assert first.startswith(b"HTTP/1.1 400"), (hosts, first)
        # HTTP/1.1 without Host is a 400 (RFC 9112 §3.2); HTTP/1.0 may omit
        # it and meets the allow-list (no name: refused on loopback).
        for version, code in [("1.1", b"400"), ("1.0", b"421")]:
            with socket.create_connection(("127.0.0.1", int(port)), timeout=10) as s:
                s.sendall(f"GET / HTTP/{version}\r\nConnection: close\r\n\r\n".encode())
                first = s.recv(64).split(b"\r\n")[0]
                assert first.split(b" ")[1] == code, (version, first)

        # A repeated parameter is refused, not answered for one of them, and
        # counted with every other request (here: it and one /metrics).
        before = requests_total(c, auth)
        status, body, _ = fetch(c, "/api/v1/lookup?ip=192.0.2.1&ip=198.51.100.1", headers=auth)
        assert status == 400 and b"more than once" in body, body
        assert requests_total(c, auth) - before == 2
        _, text, _ = fetch(c, "/metrics", headers=auth)
        denied = [
            line
            for line in text.decode().splitlines()
            if line.startswith("ipfib_http_denied_total ")
        ]
        assert denied and float(denied[0].split()[1]) >= 12, denied
