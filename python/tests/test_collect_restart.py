"""Warm restart of `ipfib collect --state DIR`: killed with SIGKILL during
ingest and during a snapshot write, a restarted collector answers exactly
what the last completed snapshot held, its routers' routes marked stale;
a real router (GoBGP, live.py) reconnecting brings it back to the router's
state and its End-of-RIB sweeps the stale routes, those the router no
longer has included."""

from __future__ import annotations

import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import live
from collector import Collector
from support import cli, data_file

GOBGP_V4 = "bmp/gobgp-4.8.0-rv2026-v4-full.bmp.zst"
FRR_V4 = "bmp/frr-8.4.4-rv2026-v4-full.bmp.zst"
DUMP = "rib.20260730.1400.first2MiB.mrt.bz2"
DUMP_V6 = "rib6.20260730.1400.first1MiB.mrt.bz2"

Route = tuple[Any, ...]
GRACE = 25  # s: --stale-grace of the live restart


@pytest.fixture
def state() -> Iterator[Path]:
    d = Path(tempfile.mkdtemp(prefix="ipfib-state-"))
    yield d
    shutil.rmtree(d, ignore_errors=True)


def all_routes(c: Collector) -> dict[Route, bool]:
    """Every route of the global instance, pre/post-policy, Loc-RIB and MRT
    (the API's default), paged through: {route without its peer id: stale}."""
    out: dict[Route, bool] = {}
    for top in ("0.0.0.0/0", "::/0"):
        cursor = None
        while True:
            params = {"prefix": top, "match": "longer", "limit": "10000"}
            if cursor:
                params["cursor"] = cursor
            status, body = c.get("/api/v1/routes", **params)
            assert status == 200, body
            for r in body["routes"]:
                key = (
                    r["prefix"],
                    r["peer_address"],
                    r["peer_asn"],
                    r["rib"],
                    r["path_id"],
                    repr(r["as_path"]),
                    r["next_hop"],
                    tuple(r["communities"]),
                    tuple(r["large_communities"]),
                    r["med"],
                    r["local_pref"],
                    r["origin"],
                )
                assert key not in out, f"route listed twice: {key}"
                out[key] = r["stale"]
            cursor = body.get("next_cursor")
            if not cursor:
                break
    return out


def wait(check: Any, what: str, c: Collector, timeout: float = 120.0) -> None:
    try:
        live.wait_until(check, timeout, what, step=0.05)
    except Exception as e:
        raise AssertionError(f"{e}\ncollector log:\n{c.log()}") from e


def snapshot_now(c: Collector, before: float) -> None:
    """SIGUSR1, then wait for the snapshot count to pass `before`."""
    c.proc.send_signal(signal.SIGUSR1)
    wait(lambda: c.metric("ipfib_snapshots_total") > before, "a snapshot written", c)


def replay(c: Collector, stream: str, *extra: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [
            cli(),
            "bmp-replay",
            str(data_file(stream)),
            "--to",
            f"127.0.0.1:{c.bmp_port}",
            "--keep-routes",
            "--linger",
            "1",
            *extra,
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def fed(c: Collector, r: subprocess.Popen[bytes], sessions: int) -> None:
    """The replay `r` ended and `c` has read and applied all of it: its
    `sessions`-th session closed (the replayer stops waiting for that after
    10 s, a slow machine's collector may still be reading then)."""
    assert r.wait(timeout=120) == 0
    wait(
        lambda: c.metric('ipfib_bmp_session_ends_total{reason="closed"}') >= sessions,
        "the feed read to its end",
        c,
    )


def restarted(state: Path, *extra: str, bmp: str = "127.0.0.1:0") -> Collector:
    c = Collector("--state", str(state), *extra, bmp=bmp)
    assert "snapshot loaded" in c.log(), c.log()
    return c


def check_restored(c: Collector, want: dict[Route, bool]) -> None:
    """`c` answers exactly `want`: BMP routes stale, MRT routes not."""
    got = all_routes(c)
    assert set(got) == set(want), (
        f"{len(got)} routes, want {len(want)}; only here: {list(set(got) - set(want))[:3]};"
        f" missing: {list(set(want) - set(got))[:3]}"
    )
    wrong = [k for k, stale in got.items() if stale != (k[3] != "mrt")]
    assert not wrong, f"{len(wrong)} routes with the wrong stale mark, e.g. {wrong[:3]}"
    bmp_routes = sum(1 for k in want if k[3] != "mrt")
    assert c.metric("ipfib_rib_stale_routes") == bmp_routes


def test_sigkill_during_ingest_and_during_a_snapshot_write(state: Path) -> None:
    dump = data_file(DUMP_V6)
    common = ("--snapshot-every", "3600", "--stale-grace", "3600", "--grace", "3600")
    c1 = Collector("--state", str(state), "--mrt", str(dump), *common)
    try:
        fed(c1, replay(c1, GOBGP_V4), 1)
        snapshot_now(c1, 0)
        s1 = {k: k[3] != "mrt" for k in all_routes(c1)}
        assert sum(1 for k in s1 if k[3] == "mrt") > 150_000
        assert sum(1 for k in s1 if k[3] != "mrt") > 100_000
        # Killed in the middle of another router's feed.
        held = c1.metric("ipfib_rib_routes")
        r = replay(c1, FRR_V4, "--rate", "20000")
        wait(lambda: c1.metric("ipfib_rib_routes") > held + 1000, "ingest under way", c1)
        assert r.poll() is None, "the feed ended before the kill"
        c1.kill()
        r.kill()
        r.wait(timeout=10)
    finally:
        c1.kill()
        c1.stop()
    c2 = restarted(state, *common)
    try:
        check_restored(c2, s1)
        # Changed again, then killed while the snapshot of that is written.
        fed(c2, replay(c2, FRR_V4), 1)
        # The recordings' router (127.0.0.1) and neighbour are the same:
        # the FRR feed takes over the GoBGP feed's stale routes.
        # (FRR sends no Loc-RIB: those stay stale.)
        assert c2.metric("ipfib_rib_stale_routes") < sum(s1.values()) - 80_000
        tmp = state / ".rib.snapshot.tmp"
        good = (state / "rib.snapshot").read_bytes()
        assert not tmp.exists()
        c2.proc.send_signal(signal.SIGUSR1)
        deadline = time.monotonic() + 30
        while not tmp.exists() and time.monotonic() < deadline:
            time.sleep(0.0005)
        c2.kill()
        assert tmp.exists(), "the snapshot write was not caught under way"
        # Killed between the two renames, only the previous one is left.
        last = state / "rib.snapshot"
        if not last.exists():
            last = state / "rib.snapshot.1"
        assert last.read_bytes() == good, "the last good snapshot changed"
    finally:
        c2.kill()
        c2.stop()
    c3 = restarted(state, *common)
    try:
        check_restored(c3, s1)
        # The same file again, after a clean stop: written at shutdown.
    finally:
        assert c3.stop() == 0, c3.log()
    c4 = restarted(state, *common)
    try:
        check_restored(c4, s1)
    finally:
        assert c4.stop() == 0, c4.log()


def test_damaged_snapshot_falls_back_to_the_previous(state: Path) -> None:
    c1 = Collector("--state", str(state), "--snapshot-every", "3600")
    try:
        fed(c1, replay(c1, GOBGP_V4), 1)
        snapshot_now(c1, 0)
        s1 = {k: True for k in all_routes(c1)}
        snapshot_now(c1, 1)
    finally:
        c1.kill()
        c1.stop()
    # The newest damaged in its middle: refused with its offset, the one
    # before loads.
    newest = state / "rib.snapshot"
    b = bytearray(newest.read_bytes())
    b[len(b) // 2] ^= 0x40
    newest.write_bytes(bytes(b))
    c2 = restarted(state)
    try:
        assert "snapshot refused" in c2.log() and "byte offset" in c2.log(), c2.log()
        assert "rib.snapshot.1" in c2.log(), c2.log()
        check_restored(c2, s1)
        # Kept aside, not rotated over by later writes.
        assert (state / "rib.snapshot.refused").read_bytes() == bytes(b)
    finally:
        c2.kill()
        c2.stop()
    # The other one damaged too: the collector starts empty rather than
    # not at all.
    prev = state / "rib.snapshot.1"
    prev.write_bytes(prev.read_bytes()[:1000])
    c3 = Collector("--state", str(state))
    try:
        assert c3.log().count("snapshot refused") == 1, c3.log()
        assert (state / "rib.snapshot.1.refused").exists()
        assert c3.metric("ipfib_rib_routes") == 0
        # A second collector on the same directory is refused.
        other = subprocess.run(
            [
                cli(),
                "collect",
                "--bmp",
                "127.0.0.1:0",
                "--http",
                "127.0.0.1:0",
                "--state",
                str(state),
            ],
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert other.returncode != 0 and "holds" in other.stderr, other.stderr
    finally:
        c3.kill()
        c3.stop()


@pytest.mark.live
def test_gobgp_reconnects_and_sweeps_stale_routes(state: Path) -> None:
    from test_collect_live import RECORDS, check_rib, expected_routes

    port = live.free_port()
    bmp = f"127.0.0.1:{port}"
    kinds = {"pre-policy", "post-policy", "loc-rib"}
    c1 = Collector("--state", str(state), "--snapshot-every", "3600", bmp=bmp)
    try:
        with live.GoBgpRouters(port, policy="all") as routers:
            routers.inject_mrt(data_file(DUMP), only_best=True, max_rib_records=RECORDS)
            # Routes the router will withdraw while the collector is down.
            gone = [f"100.64.{i}.0/24" for i in range(20)]
            for p in gone:
                routers.add_route(p, "10.0.0.2", aspath=[64520, 64521])
            want = expected_routes(routers.source_rib("ipv4"))
            assert len(want) >= RECORDS + 20
            wait(lambda: c1.metric("ipfib_rib_routes") >= len(want) * 3, "every route", c1)
            check_rib(c1, want, kinds)
            snapshot_now(c1, 0)
            s1 = {k: True for k in all_routes(c1)}
            c1.kill()
            # While the collector is down the router changes: 20 routes
            # withdrawn, one added.
            for p in gone:
                routers.del_route(p)
            routers.add_route("192.0.2.0/24", "10.0.0.2", aspath=[64510, 64511])
            now = expected_routes(routers.source_rib("ipv4"))
            assert len(now) == len(want) - 20 + 1
            started = time.monotonic()
            # Answers at once, from the snapshot: the old state, stale.
            # Checked on a port the router does not know (it reconnects
            # within a second and would change the answers while they are
            # read), then stopped cleanly: the routes' stale time goes on
            # from this start, in the snapshot written at shutdown.
            c2 = restarted(state, "--stale-grace", str(GRACE))
            try:
                check_restored(c2, s1)
            finally:
                assert c2.stop() == 0, c2.log()
            c2 = restarted(state, "--stale-grace", str(GRACE), bmp=bmp)
            try:
                # GoBGP reconnects, sends its tables and End-of-RIB for
                # pre- and post-policy (GoBGP 4.8 sends none for Loc-RIB):
                # those stale routes are swept at once.
                wait(
                    lambda: c2.metric("ipfib_rib_stale_peers") == 1,
                    "pre- and post-policy stale routes swept by End-of-RIB",
                    c2,
                    timeout=GRACE - 5,
                )
                assert time.monotonic() - started < GRACE
                _, peers = c2.get("/api/v1/peers")
                left = [p for p in peers["peers"] if p["stale"] and p["state"] == "up"]
                assert [p["rib"] for p in left] == ["loc-rib"], left
                # Loc-RIB's: once the grace period is over.
                wait(
                    lambda: c2.metric("ipfib_rib_stale_peers") == 0,
                    "the Loc-RIB stale routes swept after the grace period",
                    c2,
                    timeout=GRACE + 30,
                )
                check_rib(c2, now, kinds)
                for p in gone:
                    assert c2.routes(p) == [], p
                after = all_routes(c2)
                assert not any(after.values()), "a stale route is left"
                assert len(after) == len(now) * 3
            finally:
                assert c2.stop() == 0, c2.log()
    finally:
        c1.kill()
        c1.stop()
