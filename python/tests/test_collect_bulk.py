"""`POST /api/v1/lookup` on a collector bootstrapped from the real 20-peer
RIB dump: every answer equals the single GET lookup of the same address
(and the same narrowing), in order, for JSON and text bodies; bad elements
are answered in place; oversized and malformed bodies get 413 and 400 with
a clear message, and the collector goes on answering. The Python client
helper (`ipfib.client.lookup_many`) is checked against the same answers."""

from __future__ import annotations

import http.client
import ipaddress
import json
import random
import socket
import urllib.parse
from collections.abc import Iterator
from typing import Any

import pytest

from collector import Collector, running
from support import data_file

DUMP = "rib.20260730.1400.first2MiB.mrt.bz2"


@pytest.fixture(scope="module")
def c() -> Iterator[Collector]:
    yield from running("--mrt", str(data_file(DUMP)), "--grace", "0")


def post(
    c: Collector, body: bytes, query: str = "", headers: dict[str, str] | None = None
) -> tuple[int, bytes]:
    url = urllib.parse.urlsplit(c.http)
    conn = http.client.HTTPConnection(url.hostname or "", url.port, timeout=60)
    try:
        conn.request("POST", "/api/v1/lookup" + query, body=body, headers=headers or {})
        r = conn.getresponse()
        return r.status, r.read()
    finally:
        conn.close()


def lines(data: bytes) -> list[dict[str, Any]]:
    return [json.loads(x) for x in data.decode().splitlines()]


def single(c: Collector, addr: str, **params: str) -> dict[str, Any]:
    status, body = c.get("/api/v1/lookup", ip=addr, **params)
    assert status in (200, 400, 404), (addr, status, body)
    assert isinstance(body, dict)
    return body


def addresses(c: Collector, n: int, seed: int) -> list[str]:
    """Matched addresses (inside the dump's prefixes), random IPv4 and
    IPv6, edges, and IPv4-mapped IPv6."""
    rnd = random.Random(seed)
    status, page = c.get("/api/v1/routes", prefix="0.0.0.0/0", match="longer", limit="2000")
    assert status == 200
    prefixes = sorted({r["prefix"] for r in page["routes"]})
    out = ["0.0.0.0", "255.255.255.255", "::", "::ffff:1.1.1.1", "2001:db8::1", "1.1.1.1"]
    while len(out) < n:
        net = ipaddress.ip_network(rnd.choice(prefixes))
        out.append(str(net[rnd.randrange(net.num_addresses)]))
        out.append(str(ipaddress.IPv4Address(rnd.getrandbits(32))))
    return out[:n]


def test_bulk_equals_single_lookups(c: Collector) -> None:
    addrs = addresses(c, 1500, 7)
    want = [single(c, a) for a in addrs]
    assert sum("prefix" in w for w in want) > 600
    status, data = post(c, json.dumps(addrs).encode(), headers={"Content-Type": "application/json"})
    assert status == 200, data[:300]
    assert lines(data) == want
    # Text, CRLF, surrounding blanks, blank lines skipped.
    text = "\r\n".join(f"  {a} " for a in addrs) + "\n\n"
    status, data = post(c, text.encode())
    assert status == 200
    assert lines(data) == want


def test_bulk_narrowing_per_address_and_per_request(c: Collector) -> None:
    addrs = addresses(c, 300, 8)
    _, peers = c.get("/api/v1/peers")
    ids = [p["id"] for p in peers["peers"]][:5]
    addrs_by_peer = [(a, str(ids[i % len(ids)])) for i, a in enumerate(addrs)]
    # Per address: peer ids (as numbers and text) and next hops.
    body: list[Any] = []
    want = []
    for i, (a, p) in enumerate(addrs_by_peer):
        if i % 3 == 0:
            body.append({"ip": a, "peer": int(p)})
            want.append(single(c, a, peer=p))
        elif i % 3 == 1:
            body.append({"ip": a, "peer": p, "nexthop": "192.0.2.1"})
            want.append(single(c, a, peer=p, nexthop="192.0.2.1"))
        else:
            body.append(a)
            want.append(single(c, a))
    status, data = post(c, json.dumps(body).encode())
    assert status == 200
    assert lines(data) == want
    text = "\n".join(
        f"{b['ip']} peer={b['peer']}" + (f" nexthop={b['nexthop']}" if "nexthop" in b else "")
        if isinstance(b, dict)
        else b
        for b in body
    )
    status, data = post(c, text.encode())
    assert status == 200
    assert lines(data) == want
    # Per request: the query string narrows every address.
    status, data = post(c, json.dumps(addrs).encode(), query=f"?peer={ids[1]}")
    assert status == 200
    assert lines(data) == [single(c, a, peer=str(ids[1])) for a in addrs]


def test_byte_order_mark_and_whitespace(c: Collector) -> None:
    status, data = post(c, b'\xef\xbb\xbf ["1.1.1.1", " 1.1.1.1"]')
    assert status == 200
    got = lines(data)
    assert got[0] == single(c, "1.1.1.1")
    # Addresses are parsed as GET parses them: no surrounding whitespace.
    assert got[1] == {"ip": " 1.1.1.1", "error": "bad address"}


def test_bad_elements_are_answered_in_place(c: Collector) -> None:
    body = json.dumps(
        ["1.1.1.1", "not an address", 5, None, {"ip": "1.1.1.1", "peer": "x"}, {"peer": 1}]
    )
    status, data = post(c, body.encode())
    assert status == 200
    got = lines(data)
    assert len(got) == 6
    assert got[0] == single(c, "1.1.1.1")
    assert got[1] == {"ip": "not an address", "error": "bad address"}
    assert got[2]["ip"] is None and "expected an address" in got[2]["error"]
    assert got[3]["ip"] is None
    assert got[4]["ip"] == "1.1.1.1" and "neither a peer id nor an address" in got[4]["error"]
    assert got[5] == {"ip": None, "error": 'an object without "ip"'}


@pytest.mark.parametrize(
    ("body", "query", "needle"),
    [
        (b'["1.1.1.1", ', "", "not a JSON array"),
        (b'["1.1.1.1"] x', "", "byte 12"),
        (b"[1.1.1.1]", "", "not a JSON array"),
        (b'  {"ip": "1.1.1.1"}', "", "not an array"),
        (b'["8.8.8.8", "1.1.1.1\xff"]', "", "byte"),
        (b'["8.8.8.8", "\\ud800"]', "", "byte"),
        (b'["8.8.8.8", {"ip": "\\udc00"}]', "", "byte"),
        (b"1.1.1.1", "?rib=nope", "nope"),
        (b"1.1.1.1", "?peer=x", "neither a peer id nor an address"),
        (b"1.1.1.1", "?nexthop=x", "not an address"),
    ],
)
def test_malformed_bodies_are_400(c: Collector, body: bytes, query: str, needle: str) -> None:
    status, data = post(c, body, query=query)
    assert status == 400, data
    assert needle in json.loads(data)["error"]
    assert single(c, "1.1.1.1")["ip"] == "1.1.1.1"


def raw_post(c: Collector, head: bytes, body: Iterator[bytes]) -> tuple[int, bytes]:
    """A request sent as raw bytes; the server may answer and close before
    the body is all sent (as it does past the limit): the send stops there
    and the answer is read."""
    url = urllib.parse.urlsplit(c.http)
    with socket.create_connection((url.hostname or "", url.port or 0), timeout=60) as s:
        s.sendall(head)
        try:
            for piece in body:
                s.sendall(piece)
        except (BrokenPipeError, ConnectionResetError):
            pass
        got = b""
        try:
            while chunk := s.recv(1 << 16):
                got += chunk
                if b"\r\n\r\n" in got and got.endswith(b"}"):
                    break
        except ConnectionResetError:
            pass
    status = int(got.split(b" ", 2)[1])
    return status, got.split(b"\r\n\r\n", 1)[1]


def test_oversized_bodies_are_413(c: Collector) -> None:
    limit = 64 * 1024 * 1024
    # Declared too large: refused before the body is read.
    head = (
        f"POST /api/v1/lookup HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {limit + 1}\r\n\r\n"
    ).encode()
    status, body = raw_post(c, head, iter([b"1.1.1.1\n" * 1000]))
    assert status == 413, body
    assert b"more than 67108864 bytes" in body

    # Undeclared (chunked): counted as it arrives.
    def chunks() -> Iterator[bytes]:
        piece = b"10.0.0.1\n" * 100_000
        for _ in range(80):
            yield f"{len(piece):x}\r\n".encode() + piece + b"\r\n"
        yield b"0\r\n\r\n"

    head = b"POST /api/v1/lookup HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n"
    status, body = raw_post(c, head, chunks())
    assert status == 413, body
    # Exactly at the limit is taken.
    n = limit // 9
    whole = b"10.0.0.1\n" * n
    whole += b" " * (limit - len(whole))
    status, data = post(c, whole)
    assert status == 200
    assert data.count(b"\n") == n
    assert single(c, "1.1.1.1")["ip"] == "1.1.1.1"
    assert c.metric("ipfib_http_bulk_addresses_total") >= n


def test_python_client_helper(c: Collector) -> None:
    from ipfib.client import lookup_many

    addrs = addresses(c, 700, 9)
    want = [single(c, a) for a in addrs]
    got = list(lookup_many(c.http, addrs, batch=300))
    assert got == want
    _, peers = c.get("/api/v1/peers")
    pid = peers["peers"][0]["id"]
    got = list(lookup_many(c.http, addrs[:50], peer=pid))
    assert got == [single(c, a, peer=str(pid)) for a in addrs[:50]]
