"""The live harness (live.py) against a minimal BMP collector written here:
real GoBGP and FRR routers on loopback send what BMP-TESTING.md says they
send (Initiation, Peer Up, Route Monitoring for every route put in, Peer
Down when the route source stops), and an injected RIB dump arrives
prefix for prefix. Skipped without the parts (scripts/live-parts), failed
under CI=true."""

from __future__ import annotations

import ipaddress
import socket
import struct
import threading
from collections import Counter
from collections.abc import Callable
from types import TracebackType

import pytest

import live
from support import data_file

pytestmark = pytest.mark.live

# BMP message types (RFC 7854 §4.1)
ROUTE_MONITORING, STATS, PEER_DOWN, PEER_UP, INITIATION, TERMINATION, MIRRORING = range(7)
BMP_HEADER = struct.Struct(">BIB")  # version (3), length (whole message), type
PER_PEER_HEADER_LEN = 42
POST_POLICY = 0x40  # the L flag of the per-peer header
WAIT = 60.0  # s, for any message to arrive


class BmpListener:
    """Accepts one BMP session on 127.0.0.1 and keeps its messages (whole,
    common header included), in order, from a thread."""

    def __init__(self) -> None:
        self._server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._server.bind(("127.0.0.1", 0))
        self._server.listen(1)
        self._server.settimeout(0.2)
        self.port: int = self._server.getsockname()[1]
        self._lock = threading.Lock()
        self._messages: list[bytes] = []
        self.error: str | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="bmp-listener", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        conn = None
        while conn is None and not self._stop.is_set():
            try:
                conn, _ = self._server.accept()
            except socket.timeout:
                continue
        if conn is None:
            return
        with conn:
            conn.settimeout(0.2)
            buf = bytearray()
            while not self._stop.is_set():
                try:
                    chunk = conn.recv(1 << 16)
                except socket.timeout:
                    continue
                if not chunk:
                    return
                buf += chunk
                start = 0
                while len(buf) - start >= BMP_HEADER.size:
                    version, length, _ = BMP_HEADER.unpack_from(buf, start)
                    if version != 3 or length < BMP_HEADER.size:
                        self.error = f"bad BMP header: version {version}, length {length}"
                        return
                    if len(buf) - start < length:
                        break
                    with self._lock:
                        self._messages.append(bytes(buf[start : start + length]))
                    start += length
                del buf[:start]

    def messages(self) -> list[bytes]:
        with self._lock:
            return list(self._messages)

    def types(self) -> list[int]:
        return [m[5] for m in self.messages()]

    def counts(self) -> Counter[int]:
        return Counter(self.types())

    def wait(self, check: Callable[[], bool], what: str, timeout: float = WAIT) -> None:
        def step() -> bool:
            if self.error is not None:
                raise AssertionError(self.error)
            return check()

        try:
            live.wait_until(step, timeout, what)
        except live.LiveError as e:
            raise AssertionError(f"{e}; messages by type so far: {dict(self.counts())}") from e

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self._server.close()

    def __enter__(self) -> BmpListener:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def prefixes(data: bytes, start: int, end: int) -> list[str]:
    """IPv4 NLRI (length byte, then the prefix's bytes) in data[start:end]."""
    out = []
    while start < end:
        length = data[start]
        n = (length + 7) // 8
        addr = data[start + 1 : start + 1 + n].ljust(4, b"\0")
        out.append(str(ipaddress.IPv4Network((addr, length))))
        start += 1 + n
    return out


def pre_policy_ipv4(msg: bytes) -> list[str]:
    """The IPv4 prefixes a Route Monitoring message announces, when it is
    pre-policy from a global-instance peer (peer type 0; the Loc-RIB's, type
    3, carry ADD-PATH path IDs and are left out); else []."""
    if msg[5] != ROUTE_MONITORING:
        return []
    peer_type, flags = msg[6], msg[7]
    if peer_type != 0 or flags & POST_POLICY:
        return []
    bgp = BMP_HEADER.size + PER_PEER_HEADER_LEN
    length, kind = struct.unpack_from(">HB", msg, bgp + 16)
    assert kind == 2, f"Route Monitoring carries BGP message type {kind}, not UPDATE"
    at = bgp + 19
    (withdrawn,) = struct.unpack_from(">H", msg, at)
    at += 2 + withdrawn
    (attrs,) = struct.unpack_from(">H", msg, at)
    at += 2 + attrs
    return prefixes(msg, at, bgp + length)


def announced(bmp: BmpListener) -> set[str]:
    return {p for m in bmp.messages() for p in pre_policy_ipv4(m)}


ROUTES = [
    ("198.51.100.0/24", "192.0.2.1", [64500], ["65001:100"], ["65001:1:1"]),
    ("203.0.113.128/25", "192.0.2.2", [64500, 64501], [], []),
    ("2001:db8:1::/48", "2001:db8::1", [64502], ["65001:200"], []),
]


def check_session(bmp: BmpListener, routers: live.GoBgpRouters | live.FrrMonitored) -> None:
    """Routes in at B: Initiation, Peer Up and their Route Monitoring out of
    A; B stopped: a Peer Down after the last Peer Up."""
    for prefix, nexthop, aspath, communities, large in ROUTES:
        routers.add_route(prefix, nexthop, aspath, communities, large)
    v4 = {r[0] for r in ROUTES if ":" not in r[0]}
    bmp.wait(lambda: v4 <= announced(bmp), f"pre-policy Route Monitoring for {sorted(v4)}")
    bmp.wait(
        lambda: bmp.counts()[ROUTE_MONITORING] >= len(ROUTES),
        f"{len(ROUTES)} Route Monitoring messages",
    )
    types = bmp.types()
    assert types[0] == INITIATION, types[:5]
    assert PEER_UP in types

    routers.stop_source()

    def peer_down_after_up() -> bool:
        types = bmp.types()
        last_up = len(types) - 1 - types[::-1].index(PEER_UP)
        return PEER_DOWN in types[last_up:]

    bmp.wait(peer_down_after_up, "Peer Down after B stopped")


def test_gobgp_sends_bmp() -> None:
    live.require("gobgpd")
    live.require("gobgp")
    with BmpListener() as bmp, live.GoBgpRouters(bmp.port) as routers:
        check_session(bmp, routers)


def test_frr_sends_bmp() -> None:
    live.require("bgpd")
    live.require("gobgpd")
    live.require("gobgp")
    with BmpListener() as bmp, live.FrrMonitored(bmp.port) as routers:
        check_session(bmp, routers)


RIB_IPV4_UNICAST = 2


def record_prefix(r: live.MrtRecord) -> str:
    """A RIB_IPV4_UNICAST record's prefix (RFC 6396 §4.3.2: sequence u32,
    prefix length u8, the prefix's bytes)."""
    length = r.body[4]
    addr = r.body[5 : 5 + (length + 7) // 8].ljust(4, b"\0")
    return str(ipaddress.IPv4Network((addr, length)))


@pytest.mark.parametrize("sender", ["gobgp", "frr"])
def test_mrt_inject_arrives_exactly(sender: str) -> None:
    """The first 1,000 RIB records of the 2026 dump, best path each: the
    pre-policy Route Monitoring announces exactly their prefixes."""
    dump = data_file("rib.20260730.1400.first2MiB.mrt.bz2")
    live.require("gobgpd")
    live.require("gobgp")
    if sender == "frr":
        live.require("bgpd")
    with BmpListener() as bmp:
        routers: live.GoBgpRouters | live.FrrMonitored
        if sender == "gobgp":
            # Pre-policy only: what is counted, and a third of the messages.
            routers = live.GoBgpRouters(bmp.port, policy="pre-policy")
        else:
            routers = live.FrrMonitored(bmp.port, policies=("pre-policy",), families=("ipv4",))
        with routers:
            kept = routers.inject_mrt(dump, only_best=True, max_rib_records=1000)
            assert len(kept) == 1000
            assert {r.subtype for r in kept} == {RIB_IPV4_UNICAST}
            expected = {record_prefix(r) for r in kept}
            bmp.wait(
                lambda: len(announced(bmp)) >= len(expected),
                f"{len(expected)} distinct announced IPv4 prefixes",
            )
            got = announced(bmp)
            assert got == expected, (sorted(got - expected)[:5], sorted(expected - got)[:5])
