"""`ipfib collect` without routers: bootstrapped from a real MRT RIB dump
(--mrt), fed by recorded BMP streams (`ipfib bmp-replay`), checked over its
HTTP API against an independent longest-prefix match (`ipfib lookup` on the
same dump), its MRT dump walked record by record, hostile sessions ended
without harm to the others, SIGTERM ending it cleanly."""

from __future__ import annotations

import ipaddress
import random
import socket
import struct
import subprocess
import time
from collections.abc import Iterator

import pytest

import live
from collector import Collector, running
from support import cli, data_file

DUMP = "rib.20260730.1400.first2MiB.mrt.bz2"


@pytest.fixture(scope="module")
def mrt_collector() -> Iterator[Collector]:
    dump = data_file(DUMP)
    yield from running("--mrt", str(dump), "--grace", "0")


def test_mrt_bootstrap_counts(mrt_collector: Collector) -> None:
    c = mrt_collector
    assert "679347 routes of 28 peers, 41105 IPv4 + 0 IPv6 prefixes" in c.log(), c.log()
    assert c.metric("ipfib_rib_routes") == 679347
    assert c.metric("ipfib_rib_prefixes") == 41105
    _, peers = c.get("/api/v1/peers")
    up = [p for p in peers["peers"] if p["state"] == "up"]
    assert len(up) == 28 and all(p["rib"] == "mrt" for p in up)
    assert sum(p["routes"] for p in up) == 679347


def test_lookups_agree_with_an_independent_match(mrt_collector: Collector) -> None:
    """The prefix the collector chooses is the longest match `ipfib lookup`
    (ipfib-io's MRT reader, the core engines) finds in the same dump, and
    the chosen route is one of that prefix's routes."""
    c = mrt_collector
    rnd = random.Random(5)
    addrs = [str(ipaddress.IPv4Address(rnd.getrandbits(32))) for _ in range(300)]
    addrs += ["1.1.1.1", "8.8.8.8", "1.0.0.0", "223.255.255.255", "240.0.0.1"]
    out = subprocess.run(
        [cli(), "lookup", "--table", str(data_file(DUMP)), "--format", "mrt", *addrs],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert out.returncode in (0, 1), out.stderr
    want = {}
    for line in out.stdout.splitlines():
        addr, prefix, _ = line.split()
        want[addr] = prefix
    assert len(want) == len(addrs)
    found = 0
    for addr in addrs:
        status, body = c.get("/api/v1/lookup", ip=addr)
        if want[addr] == "-":
            assert status == 404 and body == {"ip": addr, "error": "no route"}, (addr, body)
            continue
        found += 1
        assert status == 200 and body["prefix"] == want[addr], (addr, body, want[addr])
        routes = c.routes(body["prefix"])
        key = (body["peer"], body["path_id"])
        assert key in {(r["peer"], r["path_id"]) for r in routes}
        assert body["origin_asn"] == body["as_path"][-1]
    assert found > 50


def test_routes_match_kinds_and_peer_filters(mrt_collector: Collector) -> None:
    c = mrt_collector
    _, body = c.get("/api/v1/lookup", ip="8.8.8.8")
    prefix = body["prefix"]
    exact = c.routes(prefix)
    assert len(exact) > 1 and all(r["prefix"] == prefix for r in exact)
    status, shorter = c.get("/api/v1/routes", prefix=prefix, match="shorter")
    inner = ipaddress.IPv4Network(prefix)
    assert status == 200
    assert all(inner.subnet_of(ipaddress.IPv4Network(r["prefix"])) for r in shorter["routes"])
    status, longer = c.get("/api/v1/routes", prefix="8.0.0.0/8", match="longer", limit="5")
    assert status == 200 and len(longer["routes"]) == 5 and longer["truncated"] is True
    # Restricted to one peer: that peer's route, or 404.
    peer = exact[-1]["peer"]
    status, one = c.get("/api/v1/lookup", ip="8.8.8.8", peer=str(peer))
    assert status == 200 and one["peer"] == peer
    nh = exact[-1]["next_hop"]
    status, by_nh = c.get("/api/v1/lookup", ip="8.8.8.8", nexthop=nh)
    assert status == 200 and by_nh["next_hop"] == nh
    status, none = c.get("/api/v1/lookup", ip="8.8.8.8", peer="999999")
    assert status == 404


@pytest.mark.parametrize(
    "params",
    [
        {"ip": "1.2.3"},
        {"ip": "8.8.8.8", "peer": "not-a-peer"},
        {"ip": "8.8.8.8", "nexthop": "x"},
        {},
    ],
)
def test_bad_lookup_requests_are_400(mrt_collector: Collector, params: dict[str, str]) -> None:
    status, body = mrt_collector.get("/api/v1/lookup", **params)
    assert status == 400 and "error" in body, body


@pytest.mark.parametrize(
    "params",
    [{"prefix": "10.0.0.1/8"}, {"prefix": "10.0.0.0/33"}, {"prefix": "8.8.8.0/24", "match": "x"}],
)
def test_bad_routes_requests_are_400(mrt_collector: Collector, params: dict[str, str]) -> None:
    status, body = mrt_collector.get("/api/v1/routes", **params)
    assert status == 400 and "error" in body, body


def test_page_and_metrics(mrt_collector: Collector) -> None:
    status, page = mrt_collector.get("/")
    assert status == 200 and "ipfib looking glass" in page
    _, text = mrt_collector.get("/metrics")
    for name in [
        "ipfib_bmp_sessions",
        'ipfib_bmp_messages_total{type="route_monitoring"}',
        "ipfib_rib_routes",
        "ipfib_lookup_duration_seconds_count",
        'ipfib_bmp_session_ends_total{reason="decode_error"}',
    ]:
        assert f"\n{name} " in text, name


def test_dump_mrt_reads_back_record_by_record(mrt_collector: Collector) -> None:
    """GET /api/v1/dump.mrt: one PEER_INDEX_TABLE with every peer, then one
    RIB_IPV4_UNICAST record per prefix whose entries count every route.
    (Route-for-route equality with bgpkit-parser: crates/ipfib-rib/tests.)"""
    import urllib.request

    with urllib.request.urlopen(mrt_collector.http + "/api/v1/dump.mrt", timeout=60) as r:
        data = r.read()
    records = list(live.mrt_records(data))
    assert (records[0].type, records[0].subtype) == (13, 1)
    peers = struct.unpack_from(
        ">H", records[0].body, 4 + 2 + struct.unpack_from(">H", records[0].body, 4)[0]
    )[0]
    assert peers == 28
    rib = [r for r in records[1:] if (r.type, r.subtype) == (13, 2)]
    assert len(rib) == 41105 and len(rib) == len(records) - 1
    routes = 0
    for r in rib:
        plen = r.body[4]
        at = 5 + (plen + 7) // 8
        routes += struct.unpack_from(">H", r.body, at)[0]
    assert routes == 679347


def test_hostile_session_ends_alone() -> None:
    """Garbage on one BMP session ends that session (a counter, a log line
    naming the byte offset); a recorded stream on another session goes in
    whole; the process lives on."""
    stream = data_file("bmp/frr-8.4.4-small-peerdown-repeats.bmp.zst")
    for c in running("--grace", "0"):
        with socket.create_connection(("127.0.0.1", c.bmp_port), timeout=10) as s:
            s.sendall(b"\x03\x00\x00\x00\x06\x04" + b"\x07" * 64)  # Initiation, then version 7
            s.settimeout(10)
            assert s.recv(1) == b""  # the collector closed it
        with socket.create_connection(("127.0.0.1", c.bmp_port), timeout=10) as s:
            s.sendall(b"\x03\xff\xff\xff\xff\x00")  # a 4 GiB message
            s.settimeout(10)
            assert s.recv(1) == b""
        r = subprocess.run(
            [cli(), "bmp-replay", str(stream), "--to", f"127.0.0.1:{c.bmp_port}"],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert r.returncode == 0, r.stderr
        deadline = time.monotonic() + 10
        while (
            time.monotonic() < deadline
            and c.metric('ipfib_bmp_session_ends_total{reason="closed"}') < 1
        ):
            time.sleep(0.1)
        assert c.metric('ipfib_bmp_session_ends_total{reason="decode_error"}') == 2
        assert c.metric('ipfib_bmp_messages_total{type="peer_down"}') == 183
        assert c.metric('ipfib_bmp_messages_total{type="statistics"}') == 473
        log = c.log()
        assert "BMP version 7, expected 3" in log and "byte 6 of the stream" in log, log
        assert "outside 6..=69689" in log, log


def test_a_sender_making_progress_is_never_slow() -> None:
    """Writes that always end inside a message, but complete one message
    every 20 ms, for 3x --slow-timeout: the session stays; a message that
    stops half-sent is cut after --slow-timeout."""

    def bmp(kind: int, body: bytes) -> bytes:
        return struct.pack(">BIB", 3, 6 + len(body), kind) + body

    stats = bmp(1, bytes(2 + 8 + 12) + bytes([192, 0, 2, 9]) + bytes(16) + bytes(4))
    half = len(stats) // 2
    for c in running("--slow-timeout", "1", "--grace", "0"):
        with socket.create_connection(("127.0.0.1", c.bmp_port), timeout=10) as s:
            s.sendall(bmp(4, struct.pack(">HH", 2, 4) + b"rtr1") + stats[:half])
            sent = 0
            t0 = time.monotonic()
            while time.monotonic() - t0 < 3.0:
                s.sendall(stats[half:] + stats[:half])  # ends mid-message
                sent += 1
                time.sleep(0.02)
            assert c.metric('ipfib_bmp_messages_total{type="statistics"}') >= sent - 5
            assert c.metric('ipfib_bmp_session_ends_total{reason="slow_sender"}') == 0, c.log()
            # Now stop half-way through a message: cut within ~1 s.
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                if c.metric('ipfib_bmp_session_ends_total{reason="slow_sender"}') == 1:
                    break
                time.sleep(0.1)
            assert c.metric('ipfib_bmp_session_ends_total{reason="slow_sender"}') == 1, c.log()


def test_idle_sessions_close_and_limits_refuse() -> None:
    """--idle-timeout closes a silent session; --max-sessions refuses the
    one past the limit (counted), the others stay."""
    for c in running("--idle-timeout", "1", "--max-sessions", "1", "--grace", "0"):
        with socket.create_connection(("127.0.0.1", c.bmp_port), timeout=10) as first:
            time.sleep(0.2)
            with socket.create_connection(("127.0.0.1", c.bmp_port), timeout=10) as second:
                second.settimeout(10)
                assert second.recv(1) == b""  # refused: closed at once
            first.settimeout(10)
            t0 = time.monotonic()
            assert first.recv(1) == b""  # closed for idleness
            assert time.monotonic() - t0 < 5
        assert c.metric("ipfib_bmp_sessions_refused_total") == 1
        assert c.metric('ipfib_bmp_session_ends_total{reason="idle_timeout"}') == 1
