"""`ipfib.Rib` on the real RouteViews 2026 dumps (../shared/data), against
a brute force written here: the dump's routes are swept with `routes()`
(checked against the load report, the peers' counts and the prefix set
ipfib-io's own MRT reader finds), and every lookup is compared with the
longest covering prefix found by trying each length with `ipaddress`, the
route chosen among `routes(prefix)` by the documented preference (the
order `routes` returns), peer restriction and next hop."""

from __future__ import annotations

import ipaddress
import random
import warnings
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pytest

import ipfib
from support import data_file

if TYPE_CHECKING:
    from ipfib._ipfib import RibRoute

V4_DUMP = "rib.20260730.1400.first2MiB.mrt.bz2"
V6_DUMP = "rib6.20260730.1400.first1MiB.mrt.bz2"
# What crates/ipfib-rib/tests/mrt_rib.rs checks the same files load as.
V4_EXPECT = {"records": 41_106, "damaged_at": 45_827_656, "peers": 28, "routes": 679_347}
V4_PREFIXES = 41_105
V6_EXPECT = {"records": 11_038, "damaged_at": 15_707_590, "peers": 26, "routes": 164_279}
V6_PREFIXES = 11_037

Net = tuple[int, int]  # (network address as an int, length)


def load(name: str) -> ipfib.Rib:
    path = data_file(name)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rib = ipfib.Rib.from_mrt(path)
    # The shared dumps are cut inside a record: a warning, not an error.
    kinds = [w.category for w in caught]
    assert kinds == [ipfib.DamagedTableWarning], [str(w.message) for w in caught]
    assert str(path) in str(caught[0].message)
    return rib


class Swept:
    """Every route of a RIB, read with `routes()` only."""

    def __init__(self, rib: ipfib.Rib, version: int) -> None:
        self.bits = 32 if version == 4 else 128
        self.net_cls: Any = ipaddress.IPv4Network if version == 4 else ipaddress.IPv6Network
        self.routes: dict[tuple[str, int, int], RibRoute] = {}
        # Every prefix, and each peer's, as (network, length).
        self.nets: set[Net] = set()
        self.nets_of_peer: dict[int, set[Net]] = defaultdict(set)
        # Sweep in /8 blocks (IPv6: /12 blocks of 2000::/3, where the
        # dumps' prefixes are; the route count checks none is elsewhere) to
        # keep the dicts few at a time: "longer" gives each block's
        # prefixes, "shorter" the ones shorter than the block.
        if version == 4:
            blocks: list[Any] = list(ipaddress.IPv4Network("0.0.0.0/0").subnets(new_prefix=8))
        else:
            blocks = list(ipaddress.IPv6Network("2000::/3").subnets(new_prefix=12))
        for block in blocks:
            for m in ("longer", "shorter"):
                for r in rib.routes(block, match=m):
                    self.routes[(r["prefix"], r["peer"], r["path_id"])] = r
        for r in self.routes.values():
            net = ipaddress.ip_network(r["prefix"])
            key = (int(net.network_address), net.prefixlen)
            self.nets.add(key)
            self.nets_of_peer[r["peer"]].add(key)

    def longest(self, addr: str, peer: int | None = None) -> str | None:
        """The longest prefix covering `addr` (among `peer`'s, if given)."""
        nets = self.nets if peer is None else self.nets_of_peer.get(peer, set())
        a = int(ipaddress.ip_address(addr))
        for length in range(self.bits, -1, -1):
            net = a >> (self.bits - length) << (self.bits - length)
            if (net, length) in nets:
                return str(self.net_cls((net, length)))
        return None


@pytest.fixture(scope="module")
def rib4() -> ipfib.Rib:
    return load(V4_DUMP)


@pytest.fixture(scope="module")
def swept4(rib4: ipfib.Rib) -> Swept:
    return Swept(rib4, 4)


@pytest.fixture(scope="module")
def rib6() -> ipfib.Rib:
    return load(V6_DUMP)


@pytest.fixture(scope="module")
def swept6(rib6: ipfib.Rib) -> Swept:
    return Swept(rib6, 6)


def expected(
    rib: ipfib.Rib,
    swept: Swept,
    addr: str,
    peer: int | None = None,
    nexthop: str | None = None,
) -> RibRoute | None:
    """The brute-force answer: the longest prefix with a route of `peer`,
    then among its routes (in preference order) the first with `nexthop`,
    else the first."""
    prefix = swept.longest(addr, peer)
    if prefix is None:
        return None
    routes = [r for r in rib.routes(prefix) if peer is None or r["peer"] == peer]
    assert routes, prefix
    with_nh = [r for r in routes if nexthop is not None and r["next_hop"] == nexthop]
    return (with_nh or routes)[0]


def probes(swept: Swept, seed: int, n: int = 150) -> list[str]:
    """First and last addresses of random prefixes, and random addresses."""
    rnd = random.Random(seed)
    cls = ipaddress.IPv4Address if swept.bits == 32 else ipaddress.IPv6Address
    out = []
    for net, length in rnd.sample(sorted(swept.nets), n):
        out.append(str(cls(net)))
        out.append(str(cls(net | ((1 << (swept.bits - length)) - 1))))
    out += [str(cls(rnd.getrandbits(swept.bits))) for _ in range(n)]
    if swept.bits == 128:  # random IPv6 addresses miss: some inside 2000::/3
        out += [str(cls((1 << 125) | rnd.getrandbits(125))) for _ in range(n)]
    return out


def strip_ip(d: Any) -> dict[str, Any]:
    out = dict(d)
    del out["ip"]
    return out


def check_lookups(
    rib: ipfib.Rib,
    swept: Swept,
    addrs: Sequence[str],
    peer: int | None = None,
    nexthop_of: dict[str, str] | None = None,
) -> int:
    """Every address against the brute force; how many matched."""
    found = 0
    for a in addrs:
        nh = (nexthop_of or {}).get(a)
        got = rib.lookup(a, peer=peer, nexthop=nh)
        want = expected(rib, swept, a, peer, nh)
        if want is None:
            assert got is None, (a, peer, got)
            continue
        assert got is not None, (a, peer, want)
        assert got["ip"] == a
        assert strip_ip(got) == want, (a, peer, nh)
        found += 1
    return found


# ---------------------------------------------------------------------
# Counts
# ---------------------------------------------------------------------


def test_load_report_and_counts(rib4: ipfib.Rib, swept4: Swept) -> None:
    rep = rib4.load_report
    for k, v in V4_EXPECT.items():
        assert rep[k] == v, k  # type: ignore[literal-required]
    assert (rep["prefixes_v4"], rep["prefixes_v6"]) == (V4_PREFIXES, 0)
    assert (rep["bad_records"], rep["bad_entries"], rep["errors"]) == (0, 0, [])
    assert rep["damage"] is not None and "45827656" in rep["damage"]
    info = rib4.info()
    assert (info["routes"], info["prefixes_v4"], info["prefixes_v6"]) == (679_347, V4_PREFIXES, 0)
    assert info["peers"] == info["peers_up"] == 28
    assert "28 peers, 679347 routes" in repr(rib4)

    # The sweep finds every route and prefix, each peer's count included.
    assert len(swept4.routes) == 679_347
    assert len(swept4.nets) == V4_PREFIXES
    peers = rib4.peers()
    assert [p["id"] for p in peers] == list(range(28))
    per_peer: dict[int, int] = defaultdict(int)
    for _, peer, _ in swept4.routes:
        per_peer[peer] += 1
    assert {p["id"]: p["routes"] for p in peers if p["routes"]} == dict(per_peer)
    assert sum(1 for p in peers if p["routes"]) == 20
    assert all(p["rib"] == "mrt" and p["state"] == "up" for p in peers)

    # The prefix set as ipfib-io's MRT reader (another code path) sees it.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ipfib.DamagedTableWarning)
        table = ipfib.Table.from_file(data_file(V4_DUMP), format="mrt", value="peer-count")
    ours = {str(swept4.net_cls(n)) for n in swept4.nets}
    assert ours == set(table)


def test_routes_fields_and_order(rib4: ipfib.Rib, swept4: Swept) -> None:
    some_set = 0
    for r in swept4.routes.values():
        path = r["as_path"]
        last = path[-1] if path else None
        if isinstance(last, list):
            some_set += 1
            assert r["origin_asn"] == (last[0] if len(last) == 1 else None), r
        else:
            assert r["origin_asn"] == last, r
        assert r["rib"] == "mrt" and r["origin"] in ("igp", "egp", "incomplete")
        assert all(c.count(":") == 1 for c in r["communities"])
        assert all(c.count(":") == 2 for c in r["large_communities"])
    assert some_set > 0, "the dump has AS paths ending in a set"

    # 8.8.8.0/24: exact, shorter and longer agree with the sweep.
    exact = rib4.routes("8.8.8.0/24")
    assert exact and all(r["prefix"] == "8.8.8.0/24" for r in exact)
    assert rib4.routes(ipaddress.ip_network("8.8.8.0/24")) == exact
    shorter = rib4.routes("8.8.8.0/24", match="shorter")
    assert sorted({r["prefix"] for r in shorter}) == sorted(
        str(swept4.net_cls(n))
        for n in swept4.nets
        if ipaddress.IPv4Network("8.8.8.0/24").subnet_of(swept4.net_cls(n))
    )
    # An address alone is its host prefix.
    assert rib4.routes("8.8.8.8", match="shorter") == shorter
    # Ordered by prefix; limit cuts the list.
    longer = rib4.routes("8.0.0.0/8", match="longer")
    keys = [
        (int(ipaddress.ip_network(r["prefix"]).network_address), int(r["prefix"].split("/")[1]))
        for r in longer
    ]
    assert keys == sorted(keys)
    assert rib4.routes("8.0.0.0/8", match="longer", limit=5) == longer[:5]
    assert rib4.routes("8.0.0.0/8", match="longer", limit=0) == []
    assert rib4.routes("192.0.2.0/24") == []


# ---------------------------------------------------------------------
# lookup against the brute force
# ---------------------------------------------------------------------


def test_lookup_brute_force(rib4: ipfib.Rib, swept4: Swept) -> None:
    addrs = probes(swept4, seed=1)
    assert check_lookups(rib4, swept4, addrs) == len(addrs)  # the dump has 0.0.0.0/0
    # IPv4-mapped IPv6 addresses are looked up as IPv4.
    got = rib4.lookup("::ffff:8.8.8.8")
    assert got is not None and got["ip"] == "::ffff:8.8.8.8"
    assert strip_ip(got) == strip_ip(rib4.lookup(ipaddress.ip_address("8.8.8.8")))
    # No IPv6 routes in this dump.
    assert rib4.lookup("2001:db8::1") is None


def busiest_and_smallest(rib: ipfib.Rib) -> list[int]:
    with_routes = sorted((p["routes"], p["id"]) for p in rib.peers() if p["routes"])
    return [with_routes[-1][1], with_routes[0][1]]


def test_lookup_peer_brute_force(rib4: ipfib.Rib, swept4: Swept) -> None:
    addrs = probes(swept4, seed=2, n=60)
    for peer in busiest_and_smallest(rib4):
        found = check_lookups(rib4, swept4, addrs, peer=peer)
        assert 0 < found
    # A peer without routes exists: no match anywhere, not an error.
    empty = [p["id"] for p in rib4.peers() if p["routes"] == 0]
    assert empty and all(rib4.lookup(a, peer=empty[0]) is None for a in addrs[:20])
    # By address: every peer with that address (here, one).
    p = rib4.peers()[busiest_and_smallest(rib4)[1]]
    assert sum(q["address"] == p["address"] for q in rib4.peers()) == 1
    for a in addrs[:50]:
        assert rib4.lookup(a, peer=p["address"]) == rib4.lookup(a, peer=p["id"])
        assert rib4.lookup(a, peer=ipaddress.ip_address(p["address"])) == rib4.lookup(
            a, peer=p["id"]
        )


def nexthop_choices(
    rib: ipfib.Rib, swept: Swept, addrs: Sequence[str], seed: int
) -> dict[str, str]:
    """Per address, a next hop that changes the answer when one exists (a
    route of the longest prefix other than the preferred one), else one
    nobody uses."""
    rnd = random.Random(seed)
    out = {}
    for a in addrs:
        prefix = swept.longest(a)
        hops = [r["next_hop"] for r in rib.routes(prefix)] if prefix else []
        others = [h for h in hops[1:] if h is not None and h != hops[0]]
        out[a] = rnd.choice(others) if others and rnd.random() < 0.8 else "192.0.2.99"
    return out


def test_lookup_nexthop_brute_force(rib4: ipfib.Rib, swept4: Swept) -> None:
    addrs = probes(swept4, seed=3, n=60)
    nh = nexthop_choices(rib4, swept4, addrs, seed=3)
    check_lookups(rib4, swept4, addrs, nexthop_of=nh)

    def next_hop(r: RibRoute | None) -> str | None:
        return None if r is None else r["next_hop"]

    changed = sum(
        next_hop(rib4.lookup(a)) != next_hop(rib4.lookup(a, nexthop=nh[a])) for a in addrs
    )
    assert changed > len(addrs) // 2, "the next hops chosen change most answers"
    peer = busiest_and_smallest(rib4)[0]
    check_lookups(rib4, swept4, addrs, peer=peer, nexthop_of=nh)


def test_lookup_ipv6_dump(rib6: ipfib.Rib, swept6: Swept) -> None:
    rep = rib6.load_report
    for k, v in V6_EXPECT.items():
        assert rep[k] == v, k  # type: ignore[literal-required]
    assert len(swept6.nets) == V6_PREFIXES and len(swept6.routes) == V6_EXPECT["routes"]
    addrs = probes(swept6, seed=4, n=100)
    assert check_lookups(rib6, swept6, addrs) > 200
    check_lookups(rib6, swept6, addrs[:80], peer=busiest_and_smallest(rib6)[0])
    assert rib6.lookup("8.8.8.8") is None


# ---------------------------------------------------------------------
# lookup_many == lookup, address by address
# ---------------------------------------------------------------------


def assert_many_equals_lookup(
    rib: ipfib.Rib,
    addrs: Sequence[str | None],
    got: Any,
    peer: int | str | None = None,
    nexthops: Sequence[str | None] | None = None,
) -> None:
    n = len(addrs)
    assert set(got) == {"found", "origin_asn", "prefix_len", "next_hop", "peer"}
    assert got["found"].dtype == np.bool_ and got["origin_asn"].dtype == np.uint32
    assert got["prefix_len"].dtype == np.int16 and got["peer"].dtype == np.int64
    assert got["next_hop"].dtype == object
    assert all(len(v) == n for v in got.values())
    for i, a in enumerate(addrs):
        r = (
            None
            if a is None
            else rib.lookup(a, peer=peer, nexthop=nexthops[i] if nexthops else None)
        )
        row = (
            bool(got["found"][i]),
            int(got["origin_asn"][i]),
            int(got["prefix_len"][i]),
            got["next_hop"][i],
            int(got["peer"][i]),
        )
        if r is None:
            assert row == (False, 0, -1, None, -1), (i, a)
        else:
            want = (
                True,
                r["origin_asn"] or 0,
                int(r["prefix"].split("/")[1]),
                r["next_hop"],
                r["peer"],
            )
            assert row == want, (i, a, peer)


def test_lookup_many_v4(rib4: ipfib.Rib, swept4: Swept) -> None:
    addrs = probes(swept4, seed=5)
    ints = np.array([int(ipaddress.ip_address(a)) for a in addrs], dtype=np.uint32)
    busiest, smallest = busiest_and_smallest(rib4)
    address = rib4.peers()[smallest]["address"]
    for peer in (None, busiest, smallest, address):
        got = rib4.lookup_many(ints, peer=peer)
        assert_many_equals_lookup(rib4, addrs, got, peer=peer)
        got_text = rib4.lookup_many(addrs, peer=peer)
        for k in got:
            assert np.array_equal(got[k], got_text[k]), k  # type: ignore[literal-required]
    # Other input forms: ipaddress objects, None, int64 arrays, mapped IPv6.
    mixed: list[str | None] = [addrs[0], None, "::ffff:" + addrs[1], addrs[2]]
    got = rib4.lookup_many([None if a is None else ipaddress.ip_address(a) for a in mixed])
    assert_many_equals_lookup(rib4, mixed, got)
    assert np.array_equal(
        rib4.lookup_many(ints.astype(np.int64))["peer"], rib4.lookup_many(ints)["peer"]
    )
    # pandas: a Series in, a DataFrame out.
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame(rib4.lookup_many(pd.Series(addrs)))
    assert list(frame.columns) == ["found", "origin_asn", "prefix_len", "next_hop", "peer"]
    assert np.array_equal(frame["origin_asn"].to_numpy(), rib4.lookup_many(ints)["origin_asn"])
    empty = rib4.lookup_many(np.array([], dtype=np.uint32))
    assert empty["found"].shape == empty["next_hop"].shape == empty["peer"].shape == (0,)


def test_lookup_many_nexthops(rib4: ipfib.Rib, swept4: Swept) -> None:
    addrs = probes(swept4, seed=6, n=100)
    nh_of = nexthop_choices(rib4, swept4, addrs, seed=6)
    nexthops: list[str | None] = [nh_of[a] for a in addrs]
    for i in range(0, len(nexthops), 7):
        nexthops[i] = None  # no preference
    ints = np.array([int(ipaddress.ip_address(a)) for a in addrs], dtype=np.uint32)
    for peer in (None, busiest_and_smallest(rib4)[0]):
        got = rib4.lookup_many(ints, peer=peer, nexthops=nexthops)
        assert_many_equals_lookup(rib4, addrs, got, peer=peer, nexthops=nexthops)
        got_text = rib4.lookup_many(addrs, peer=peer, nexthops=nexthops)
        for k in got:
            assert np.array_equal(got[k], got_text[k]), k  # type: ignore[literal-required]
    # Next hops as numbers too (IPv4), and the result differs from no next hops.
    nh_ints = np.array([int(ipaddress.ip_address(nh_of[a])) for a in addrs], dtype=np.uint32)
    got = rib4.lookup_many(ints, nexthops=nh_ints)
    assert_many_equals_lookup(rib4, addrs, got, nexthops=[nh_of[a] for a in addrs])
    plain = rib4.lookup_many(ints)
    assert not np.array_equal(got["next_hop"], plain["next_hop"])


def test_lookup_many_threads(rib4: ipfib.Rib, swept4: Swept) -> None:
    """`threads=N`: inputs long enough for several shares (300,000 rows),
    with per-row next hops and a peer filter, answer every field as one
    thread (next hops renumbered across the threads' parts), which a
    sample checks against `lookup`; the first bad row is named."""
    base = probes(swept4, seed=9, n=300)
    nh_of = nexthop_choices(rib4, swept4, base, seed=9)
    n = 300_000
    addrs = [base[(i * 7919) % len(base)] for i in range(n)]
    nexthops: list[str | None] = [nh_of[a] if i % 5 else None for i, a in enumerate(addrs)]
    ints = np.array([int(ipaddress.ip_address(a)) for a in addrs], dtype=np.uint32)
    for peer in (None, busiest_and_smallest(rib4)[0]):
        for nh in (None, nexthops):
            one = rib4.lookup_many(ints, peer=peer, nexthops=nh)
            assert one["found"].any()
            for t in (2, 3, 0):
                got = rib4.lookup_many(ints, peer=peer, nexthops=nh, threads=t)
                for k in one:
                    assert np.array_equal(got[k], one[k]), (k, peer, t)  # type: ignore[literal-required]
            sample = list(range(0, n, 997))
            assert_many_equals_lookup(
                rib4,
                [addrs[i] for i in sample],
                {k: np.asarray(v)[sample] for k, v in got.items()},
                peer=peer,
                nexthops=[nexthops[i] for i in sample] if nh else None,
            )
    texts: list[str | None] = list(addrs)
    texts[200_000] = "bad-200000"
    texts[250_000] = "bad-250000"
    arrow = pa.array(texts)
    for t in (1, 2, 3):
        with pytest.raises(ValueError, match="at index 200000"):
            rib4.lookup_many(arrow, threads=t)
    coerced = rib4.lookup_many(arrow, errors="coerce")
    got = rib4.lookup_many(arrow, errors="coerce", threads=2)
    assert not coerced["found"][200_000]
    for k in coerced:
        assert np.array_equal(got[k], coerced[k]), k  # type: ignore[literal-required]


def test_lookup_many_v6(rib6: ipfib.Rib, swept6: Swept) -> None:
    addrs = probes(swept6, seed=7, n=100)
    packed = np.frombuffer(b"".join(ipaddress.ip_address(a).packed for a in addrs), np.uint8)
    packed = packed.reshape(-1, 16)
    peer = busiest_and_smallest(rib6)[0]
    for p in (None, peer):
        got = rib6.lookup_many(packed, peer=p)
        assert_many_equals_lookup(rib6, addrs, got, peer=p)
        assert np.array_equal(got["next_hop"], rib6.lookup_many(addrs, peer=p)["next_hop"])
    nh_of = nexthop_choices(rib6, swept6, addrs, seed=7)
    nexthops: list[str | None] = [nh_of[a] for a in addrs]
    got = rib6.lookup_many(packed, nexthops=nexthops)
    assert_many_equals_lookup(rib6, addrs, got, nexthops=nexthops)
    assert got["found"].sum() > 200


# ---------------------------------------------------------------------
# Errors
# ---------------------------------------------------------------------


def test_errors(rib4: ipfib.Rib, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match='invalid IP address "nope"'):
        rib4.lookup("nope")
    with pytest.raises(TypeError):
        rib4.lookup(167837953)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="invalid next hop"):
        rib4.lookup("8.8.8.8", nexthop="x")
    with pytest.raises(ValueError, match='invalid prefix "10.0.0.1/8"'):
        rib4.routes("10.0.0.1/8")
    with pytest.raises(ValueError, match="invalid prefix"):
        rib4.routes("10.0.0.0/33")
    with pytest.raises(ValueError, match="invalid prefix"):
        rib4.routes("bad")
    with pytest.raises(ValueError, match="match must be"):
        rib4.routes("10.0.0.0/8", match="all")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="limit"):
        rib4.routes("10.0.0.0/8", limit=-1)

    # Peer filters that match nothing are errors, not empty answers.
    with pytest.raises(ValueError, match="no peer with id 28"):
        rib4.lookup("8.8.8.8", peer=28)
    with pytest.raises(ValueError, match="no peer with id -1"):
        rib4.lookup("8.8.8.8", peer=-1)
    with pytest.raises(ValueError, match="no peer with address 192.0.2.1"):
        rib4.lookup("8.8.8.8", peer="192.0.2.1")
    with pytest.raises(ValueError, match="neither a peer id"):
        rib4.lookup("8.8.8.8", peer="3")
    with pytest.raises(TypeError, match="bool"):
        rib4.lookup("8.8.8.8", peer=True)
    with pytest.raises(ValueError, match="no peer with id 99"):
        rib4.lookup_many(np.zeros(3, np.uint32), peer=99)

    # lookup_many: bad items named with their index, or coerced to misses.
    with pytest.raises(ValueError, match='invalid IP address "bad" at index 1'):
        rib4.lookup_many(["8.8.8.8", "bad"])
    got = rib4.lookup_many(["8.8.8.8", "bad"], errors="coerce")
    assert got["found"].tolist() == [True, False] and got["peer"][1] == -1
    with pytest.raises(ValueError, match='nexthops: invalid IP address "x" at index 0'):
        rib4.lookup_many(["8.8.8.8"], nexthops=["x"])
    coerced = rib4.lookup_many(["8.8.8.8"], nexthops=["x"], errors="coerce")
    assert coerced["next_hop"][0] == rib4.lookup_many(["8.8.8.8"])["next_hop"][0]
    with pytest.raises(ValueError, match="nexthops holds 1 items, addrs 2"):
        rib4.lookup_many(["8.8.8.8", "1.1.1.1"], nexthops=["1.2.3.4"])
    with pytest.raises(ValueError, match="errors must be"):
        rib4.lookup_many(["8.8.8.8"], errors="ignore")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        rib4.lookup_many("8.8.8.8")

    # Files: missing, not MRT, and strict on a damaged dump.
    missing = tmp_path / "missing.mrt"
    with pytest.raises(FileNotFoundError, match="missing.mrt"):
        ipfib.Rib.from_mrt(missing)
    text = tmp_path / "table.txt"
    text.write_text("10.0.0.0/8 64500\n" * 10)
    with pytest.raises(ipfib.TableFileError, match="table.txt.*not an MRT file"):
        ipfib.Rib.from_mrt(text)
    with pytest.raises(ipfib.TableFileError, match="45827656"):
        ipfib.Rib.from_mrt(data_file(V4_DUMP), strict=True)


def _six_pe_dump(path: Path) -> None:
    """Two peers' routes for 2001:db8::/32, the second with a 6PE-style
    IPv4-mapped next hop (::ffff:192.0.2.1), as TABLE_DUMP_V2."""
    import ipaddress as ip
    import struct

    def mrt(typ: int, sub: int, body: bytes) -> bytes:
        return struct.pack(">IHHI", 0, typ, sub, len(body)) + body

    peers = [("2001:db8::a", 65001, 1), ("2001:db8::b", 65002, 2)]
    pit = struct.pack(">IHH", 0x0A000001, 0, len(peers))
    for addr, asn, bid in peers:
        pit += struct.pack(">BI", 0x03, bid) + ip.IPv6Address(addr).packed + struct.pack(">I", asn)
    entries = b""
    for i, (nh, asn) in enumerate([("2001:db8::1", 65001), ("::ffff:192.0.2.1", 65002)]):
        seg = bytes([2, 1]) + struct.pack(">I", asn)
        mp = bytes([16]) + ip.IPv6Address(nh).packed
        attrs = bytes([0x40, 1, 1, 0, 0x40, 2, len(seg)]) + seg + bytes([0x80, 14, len(mp)]) + mp
        entries += struct.pack(">HIH", i, 0, len(attrs)) + attrs
    rib = struct.pack(">IB", 0, 32) + bytes.fromhex("20010db8") + struct.pack(">H", 2) + entries
    path.write_bytes(mrt(13, 1, pit) + mrt(13, 4, rib))


def test_mapped_next_hops_and_numpy_peer_ids(tmp_path: Path) -> None:
    """A next hop matches in either spelling (::ffff:a.b.c.d or a.b.c.d),
    in lookup and lookup_many; a numpy integer is a peer id; an
    IPv4-mapped prefix is the IPv4 prefix."""
    dump = tmp_path / "6pe.mrt"
    _six_pe_dump(dump)
    r = ipfib.Rib.from_mrt(str(dump))
    routes = r.routes("2001:db8::/32")
    mapped = next(x for x in routes if x["peer_asn"] == 65002)
    for nh in (mapped["next_hop"], "192.0.2.1", "::ffff:192.0.2.1"):
        got = r.lookup("2001:db8::5", nexthop=nh)
        assert got is not None and got["peer"] == mapped["peer"], (nh, got)
        many = r.lookup_many(["2001:db8::5"], nexthops=[nh])
        assert int(many["peer"][0]) == mapped["peer"], (nh, many)
    many = r.lookup_many(["2001:db8::5"])
    one = r.lookup("2001:db8::5", peer=many["peer"][0])  # numpy int64
    assert one is not None and one["peer"] == int(many["peer"][0])
    assert r.routes("::ffff:8.8.8.0/120") == r.routes("8.8.8.0/24")


def test_snapshot_save_and_open(rib4: ipfib.Rib, tmp_path: Path) -> None:
    """Rib.save then Rib.open: every route, peer and lookup of the dump
    back as it was (MRT peers are not stale); damaged files refused with
    the byte offset."""
    path = tmp_path / "rib.snapshot"
    rib4.save(path)
    assert not (tmp_path / "rib.snapshot.tmp").exists()
    back = ipfib.Rib.open(path)
    assert back.info()["routes"] == rib4.info()["routes"]
    assert back.peers() == rib4.peers()
    assert all(not p["stale"] for p in back.peers())
    rnd = random.Random(11)
    for _ in range(3000):
        addr = str(ipaddress.IPv4Address(rnd.getrandbits(32)))
        assert back.lookup(addr) == rib4.lookup(addr), addr
    for prefix in ("8.0.0.0/8", "1.0.0.0/8", "0.0.0.0/0"):
        assert back.routes(prefix, match="longer") == rib4.routes(prefix, match="longer")
    lm = back.lookup_many(np.arange(0, 2**32, 2**32 // 100_000, dtype=np.uint64).astype(np.uint32))
    lm4 = rib4.lookup_many(np.arange(0, 2**32, 2**32 // 100_000, dtype=np.uint64).astype(np.uint32))
    for k in ("found", "prefix_len", "origin_asn", "peer"):
        assert (lm[k] == lm4[k]).all(), k

    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 1
    bad = tmp_path / "bad.snapshot"
    bad.write_bytes(bytes(data))
    with pytest.raises(ipfib.TableFileError, match=r"bad\.snapshot.*byte offset 16.*checksum"):
        ipfib.Rib.open(bad)
    bad.write_bytes(bytes(data[:100]))
    with pytest.raises(ipfib.TableFileError, match="byte offset"):
        ipfib.Rib.open(bad)
    bad.write_text("not a snapshot\n")
    with pytest.raises(ipfib.TableFileError, match="not an ipfib RIB snapshot"):
        ipfib.Rib.open(bad)
    with pytest.raises(FileNotFoundError, match="missing.snapshot"):
        ipfib.Rib.open(tmp_path / "missing.snapshot")
