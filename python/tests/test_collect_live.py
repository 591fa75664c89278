"""`ipfib collect` fed by real routers on loopback (live.py: GoBGP 4.8.0
and FRR 8.4.4, BMP-TESTING.md): real routes from the 2026 RouteViews dump
go in through a route source, and the collector's HTTP API must show every
one of them (prefix, origin AS, AS path, next hop) from the monitored
router's BMP feed; when the route source stops, the routes must go. The
looking-glass page is checked in headless Chromium, with a screenshot.
Skipped without the parts (scripts/live-parts), failed under CI=true."""

from __future__ import annotations

import ipaddress
import os
import random
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import live
from collector import Collector, running
from support import ROOT, cli, data_file

pytestmark = pytest.mark.live

DUMP = "rib.20260730.1400.first2MiB.mrt.bz2"
RECORDS = 1000  # RIB records injected (prefixes): ~3 s through GoBGP
WAIT = 120.0  # s, for the collector to hold what the routers sent


@pytest.fixture
def collector() -> Iterator[Collector]:
    yield from running("--grace", "0")


def wait_until(check: Any, what: str, c: Collector, timeout: float = WAIT) -> None:
    try:
        live.wait_until(check, timeout, what)
    except Exception as e:
        raise AssertionError(f"{e}\ncollector log:\n{c.log()}") from e


def expected_routes(rib: dict[str, list[dict[str, Any]]]) -> dict[str, tuple[list[int], str]]:
    """{prefix: (AS path, next hop)} of the best path of each prefix, from
    GoBGP's JSON."""
    out: dict[str, tuple[list[int], str]] = {}
    for prefix, paths in rib.items():
        best = next((p for p in paths if p.get("best")), paths[0])
        asns: list[int] = []
        nexthop = ""
        for a in best.get("attrs", []):
            if a.get("type") == 2:
                for seg in a.get("as_paths") or []:
                    asns += seg.get("asns") or []
            elif a.get("type") in (3, 14) and a.get("nexthop"):
                nexthop = a["nexthop"]
        out[prefix] = (asns, nexthop)
    return out


def check_rib(c: Collector, want: dict[str, tuple[list[int], str]], ribs: set[str]) -> None:
    """Every wanted prefix has, for each RIB kind in `ribs`, a route with
    the wanted AS path, origin and next hop; lookups of an address inside
    choose one of them."""
    bad = []
    for prefix, (path, nexthop) in want.items():
        got = c.routes(prefix)
        kinds = {r["rib"] for r in got}
        if kinds != ribs:
            bad.append(f"{prefix}: RIB kinds {sorted(kinds)}, want {sorted(ribs)}")
            continue
        for r in got:
            flat = [a for a in r["as_path"] if isinstance(a, int)]
            if (
                flat != path
                or r["next_hop"] != nexthop
                or r["origin_asn"] != (path[-1] if path else None)
            ):
                bad.append(
                    f"{prefix}: {r['rib']} route {flat} via {r['next_hop']},"
                    f" want {path} via {nexthop}"
                )
    assert not bad, f"{len(bad)} of {len(want)} prefixes differ, e.g.:\n" + "\n".join(bad[:10])


def sample_addresses(want: dict[str, tuple[list[int], str]], n: int = 50) -> list[tuple[str, str]]:
    """(address inside, prefix) for prefixes with no more specific route
    among the wanted ones, so the longest match is that prefix."""
    nets = [ipaddress.ip_network(p) for p in want]
    rnd = random.Random(7)
    out: list[tuple[str, str]] = []
    for net in rnd.sample(nets, min(len(nets), 400)):
        addr = net.network_address
        if any(
            o != net and o.version == net.version and addr in o and o.prefixlen > net.prefixlen
            for o in nets
        ):
            continue
        out.append((str(addr), str(net)))
        if len(out) == n:
            break
    return out


def live_check(
    c: Collector, routers: live.GoBgpRouters | live.FrrMonitored, ribs: set[str]
) -> dict[str, tuple[list[int], str]]:
    dump = data_file(DUMP)
    routers.add_route(
        "2001:db8:1::/48",
        "2001:db8::1",
        aspath=[64502, 64503],
        communities=["65001:100"],
        large_communities=["65001:1:2"],
    )
    routers.inject_mrt(dump, only_best=True, max_rib_records=RECORDS)
    want = expected_routes(routers.source_rib("ipv4"))
    want.update(expected_routes(routers.source_rib("ipv6")))
    assert len(want) >= RECORDS, f"the source holds {len(want)} prefixes"
    routes_wanted = len(want) * len(ribs)
    wait_until(lambda: c.metric("ipfib_rib_routes") >= routes_wanted, f"{routes_wanted} routes", c)
    check_rib(c, want, ribs)
    v6 = c.routes("2001:db8:1::/48")
    assert v6 and all(
        r["communities"] == ["65001:100"] and r["large_communities"] == ["65001:1:2"] for r in v6
    ), v6
    for addr, prefix in sample_addresses(want):
        status, body = c.get("/api/v1/lookup", ip=addr)
        assert status == 200 and body["prefix"] == prefix, (addr, body)
        assert body["as_path"] == want[prefix][0] and body["next_hop"] == want[prefix][1], body
    status, body = c.get("/api/v1/lookup", ip="not-an-address")
    assert status == 400, body
    return want


def check_gone(c: Collector, want: dict[str, tuple[list[int], str]]) -> None:
    wait_until(
        lambda: c.metric("ipfib_rib_routes") == 0, "every route gone after the source stopped", c
    )
    for addr, _ in sample_addresses(want, 20):
        status, body = c.get("/api/v1/lookup", ip=addr)
        assert status == 404 and body == {"ip": addr, "error": "no route"}, body
    _, peers = c.get("/api/v1/peers")
    assert peers["sessions"] and peers["sessions"][0]["state"] == "open", peers["sessions"]
    assert all(p["routes"] == 0 for p in peers["peers"]), peers["peers"]


def test_gobgp_feeds_the_collector(collector: Collector) -> None:
    with live.GoBgpRouters(collector.bmp_port, policy="all") as routers:
        want = live_check(collector, routers, {"pre-policy", "post-policy", "loc-rib"})
        _, peers = collector.get("/api/v1/peers")
        kinds = sorted(p["rib"] for p in peers["peers"] if p["state"] == "up")
        assert kinds == ["loc-rib", "post-policy", "pre-policy"], peers
        screenshot_looking_glass(collector, want)
        routers.stop_source()
        check_gone(collector, want)


def test_frr_feeds_the_collector(collector: Collector) -> None:
    with live.FrrMonitored(collector.bmp_port) as routers:
        want = live_check(collector, routers, {"pre-policy", "post-policy"})
        routers.stop_source()
        # FRR sends no withdrawals, only Peer Down: the collector flushes.
        check_gone(collector, want)


def screenshot_looking_glass(c: Collector, want: dict[str, tuple[list[int], str]]) -> None:
    """The page at / in headless Chromium: it loads, a search shows the
    route; the DOM after the search is checked, and a screenshot kept."""
    chromium = live.require("chromium")
    addr, prefix = sample_addresses(want, 1)[0]
    url = f"{c.http}/?q={addr}"
    flags = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={c.dir / 'chromium'}",
        "--window-size=1400,800",
        "--virtual-time-budget=10000",
    ]
    dom = subprocess.run(
        [chromium, *flags, "--dump-dom", url],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    ).stdout
    path = " ".join(str(a) for a in want[prefix][0])
    assert f"route(s) for {prefix}" in dom, dom[-2000:]
    assert path in dom and want[prefix][1] in dom, dom[-2000:]
    out = Path(os.environ.get("IPFIB_SCREENSHOT_DIR", ROOT / "target")) / "looking-glass.png"
    out.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [chromium, *flags, f"--screenshot={out}", url],
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert out.is_file() and out.stat().st_size > 10_000, f"no screenshot at {out}"
    print(f"looking-glass screenshot: {out}")


def test_collect_rejects_bad_arguments() -> None:
    r = subprocess.run(
        [cli(), "collect", "--bmp", "not-an-address"], capture_output=True, text=True, timeout=30
    )
    assert r.returncode == 2, r
    r = subprocess.run(
        [cli(), "collect", "--bmp", "127.0.0.1:0", "--http", "127.0.0.1:0", "--grace=-1"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert r.returncode == 2 and "--grace" in r.stderr, r
