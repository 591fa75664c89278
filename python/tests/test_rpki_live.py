"""RPKI in `ipfib collect` against a real RTR cache: NLnet Labs' rtrtr
(scripts/live-parts builds it) on loopback, serving VRPs and ASPAs from a
local JSON file it re-reads every second; no network anywhere.

The collector holds the real 2026 RIB dump (--mrt) and takes its RPKI data
over RTR (--rtr). Its answers are compared with `ipfib rov` on the same
dump and VRP file (itself checked route for route against the RFC's text
in crates/ipfib-cli/tests/rov.rs); then the file changes (VRPs added and
removed, an ASPA that makes a path invalid) and the statuses must follow
within seconds; a restarted cache (a new session: cache reset) is
followed; a cache gone for good keeps the last statuses until the expire
interval, then routes are not-found. The looking glass is checked in
headless Chromium with a screenshot."""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import live
from collector import Collector, running
from support import ROOT, data_file, rov_of_dump

DUMP = "rib.20260730.1400.first2MiB.mrt.bz2"
EXPIRE = 6  # --rtr-expire: how long a lost cache's data stays in use


def stop_process(proc: subprocess.Popen[bytes], log: Any, directory: Path) -> None:
    """SIGTERM by PID, a bounded wait (then SIGKILL); its log closed, its
    directory removed."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)
    log.close()
    shutil.rmtree(directory, ignore_errors=True)


class Rtrtr:
    """rtrtr serving `doc` (rpki-client JSON) over RTR on a free loopback
    port; `write` replaces the file (rtrtr notices within a second)."""

    def __init__(self, doc: dict[str, Any], port: int | None = None) -> None:
        self.binary = live.require("rtrtr")
        self.dir = Path(tempfile.mkdtemp(prefix="ipfib-rtrtr-"))
        self.file = self.dir / "vrps.json"
        self.port = port or live.free_port()
        self.write(doc)
        conf = self.dir / "rtrtr.conf"
        conf.write_text(
            f"""log_level = "info"
log_target = "stderr"
http-listen = []
[units.file]
type = "json"
uri = "file:{self.file}"
refresh = 1
[targets.rtr]
type = "rtr"
listen = ["127.0.0.1:{self.port}"]
unit = "file"
refresh = 1
retry = 1
expire = {EXPIRE}
"""
        )
        self.log_path = self.dir / "rtrtr.log"
        self._log = open(self.log_path, "wb")  # noqa: SIM115 (closed in stop)
        self.proc = subprocess.Popen(
            [self.binary, "-c", str(conf)], stdout=self._log, stderr=subprocess.STDOUT
        )
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                break
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return
            except OSError:
                time.sleep(0.1)
        self.stop()
        raise AssertionError(f"rtrtr did not listen:\n{self.log_path.read_text()[-3000:]}")

    def write(self, doc: dict[str, Any]) -> None:
        tmp = self.file.with_suffix(".tmp")
        tmp.write_text(json.dumps(doc))
        os.replace(tmp, self.file)

    def stop(self) -> None:
        stop_process(self.proc, self._log, self.dir)


def wait_for(
    what: str, check: Callable[[], bool], timeout: float = 15, show: Callable[[], Any] = str
) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.2)
    raise AssertionError(f"{what}: not within {timeout} s; {show()}")


@pytest.fixture(scope="module")
def sets() -> Iterator[tuple[Path, dict[str, Any], list[dict[str, Any]]]]:
    """The generated VRP/ASPA file, its document, and `ipfib rov`'s
    per-route answers for the dump."""
    d = Path(tempfile.mkdtemp(prefix="ipfib-rpki-"))
    f = d / "vrps.json"
    routes = rov_of_dump(f)
    assert len(routes) == 679347
    yield f, json.loads(f.read_text()), routes
    shutil.rmtree(d, ignore_errors=True)


def rpki(c: Collector) -> dict[str, Any]:
    status, body = c.get("/api/v1/rpki")
    assert status == 200, body
    result: dict[str, Any] = body
    return result


def route_of(c: Collector, prefix: str, peer: str) -> dict[str, Any]:
    for r in c.routes(prefix):
        if r["peer_address"] == peer:
            return r
    raise AssertionError(f"no route {prefix} from {peer}")


def state(r: dict[str, Any]) -> str:
    return f"invalid-{r['rov_reason']}" if r["rov"] == "invalid" else str(r["rov"])


def test_statuses_follow_a_live_cache(
    sets: tuple[Path, dict[str, Any], list[dict[str, Any]]],
) -> None:
    _, doc, offline = sets
    cache = Rtrtr(doc)
    try:
        with contextlib_running(cache.port) as c:
            n_vrps, n_aspas = len(doc["roas"]), len(doc["aspas"])
            wait_for(
                "the collector synced",
                lambda: rpki(c)["vrps"] == n_vrps and rpki(c)["aspas"] == n_aspas,
            )
            src = rpki(c)["sources"][0]
            assert src["state"] == "synced" and src["version"] == 2, src

            # Every status as `ipfib rov` gives it, on a sample of routes.
            rng = random.Random(7)
            for r in rng.sample(offline, 300):
                got = route_of(c, r["prefix"], r["peer_address"])
                assert (state(got), got["aspa"]) == (state(r), r["aspa"]), (r, got)

            # The counts in /api/v1/rpki and /metrics equal rov's totals.
            def counted() -> bool:
                counts = rpki(c)["counts"]
                return bool(counts) and counts["generation"] == rpki(c)["generation"]

            wait_for("the statuses counted", counted)
            counts = rpki(c)["counts"]
            for name in ("valid", "invalid-as", "invalid-length", "not-found"):
                assert counts["rov"][name] == sum(1 for r in offline if state(r) == name), name
            for name in ("valid", "invalid", "unknown"):
                assert counts["aspa"][name] == sum(1 for r in offline if r["aspa"] == name), name
            _, metrics = c.get("/metrics")
            assert 'ipfib_rpki_routes{peer="' in metrics and 'rov="invalid-length"}' in metrics

            # rov= and aspa= filter the routes listing.
            status, page = c.get(
                "/api/v1/routes", prefix="0.0.0.0/0", match="longer", rov="invalid", limit="200"
            )
            assert status == 200 and page["routes"], page
            assert all(r["rov"] == "invalid" for r in page["routes"])
            status, page = c.get(
                "/api/v1/routes", prefix="0.0.0.0/0", match="longer", aspa="invalid", limit="50"
            )
            assert status == 200 and page["routes"], page
            assert all(r["aspa"] == "invalid" for r in page["routes"])
            assert c.get("/api/v1/routes", prefix="0.0.0.0/0", rov="bogus")[0] == 400

            # Changes: a valid route loses its VRPs, a not-found route gets
            # one, an ASPA makes a path invalid.
            valid = next(r for r in offline if state(r) == "valid")
            # (Not a short prefix: a VRP for it would cover the first.)
            missing = next(
                r
                for r in offline
                if state(r) == "not-found"
                and r["origin_asn"]
                and int(r["prefix"].split("/")[1]) >= 16
                and not covers(r["prefix"], valid["prefix"])
            )
            path_route = route_of(c, valid["prefix"], valid["peer_address"])
            path = [a for a in path_route["as_path"] if isinstance(a, int)]
            assert len(path) >= 2, path_route
            origin, upstream = path[-1], path[-2]
            doc2 = json.loads(json.dumps(doc))
            doc2["roas"] = [v for v in doc2["roas"] if not covers(v["prefix"], valid["prefix"])] + [
                {
                    "asn": missing["origin_asn"],
                    "prefix": missing["prefix"],
                    "maxLength": int(missing["prefix"].split("/")[1]),
                }
            ]
            doc2["aspas"] = [a for a in doc2["aspas"] if a["customer_asid"] != origin] + [
                {"customer_asid": origin, "providers": [upstream + 1]}
            ]
            t = time.monotonic()
            cache.write(doc2)
            wait_for(
                "a removed VRP",
                lambda: route_of(c, valid["prefix"], valid["peer_address"])["rov"] == "not-found",
                show=lambda: (
                    valid,
                    missing,
                    route_of(c, valid["prefix"], valid["peer_address"]),
                    rpki(c),
                ),
            )
            took = time.monotonic() - t
            got = route_of(c, missing["prefix"], missing["peer_address"])
            assert got["rov"] == "valid", got
            got = route_of(c, valid["prefix"], valid["peer_address"])
            assert got["aspa"] == "invalid", got
            print(f"statuses changed {took:.1f} s after the cache's file changed")

            # The lookup answer carries the covering VRPs.
            addr = missing["prefix"].split("/")[0]
            status, hit = c.get("/api/v1/lookup", ip=addr)
            assert status == 200 and hit["prefix"] == missing["prefix"], hit
            assert {
                "prefix": missing["prefix"],
                "asn": missing["origin_asn"],
                "max_length": int(missing["prefix"].split("/")[1]),
            } in hit["vrps"], hit
            screenshot(c, addr, missing["prefix"])

            # A restarted cache (a new session id): the collector asks
            # again from scratch and follows the new data.
            cache.stop()
            doc3 = {"roas": doc2["roas"][:100], "aspas": []}
            cache = Rtrtr(doc3, port=cache.port)
            wait_for("the cache reset followed", lambda: rpki(c)["vrps"] == 100, timeout=20)

            # The cache gone for good: statuses stay until expire, then
            # every route is not-found.
            cache.stop()
            lost = time.monotonic()
            time.sleep(1.5)
            assert rpki(c)["vrps"] == 100
            wait_for("expiry", lambda: rpki(c)["vrps"] == 0, timeout=EXPIRE + 10)
            gone_after = time.monotonic() - lost
            assert gone_after >= EXPIRE - 2.5, gone_after
            src = rpki(c)["sources"][0]
            assert src["state"] == "expired" and src["problem"], src
            got = route_of(c, missing["prefix"], missing["peer_address"])
            assert got["rov"] == "not-found", got
    finally:
        cache.stop()


def covers(outer: str, inner: str) -> bool:
    import ipaddress

    a, b = ipaddress.ip_network(outer), ipaddress.ip_network(inner)
    return a.version == b.version and b.subnet_of(a)  # type: ignore[arg-type]


class contextlib_running:  # noqa: N801 (a `with` helper)
    """The collector on the dump, taking RPKI data from the cache."""

    def __init__(self, port: int) -> None:
        self.gen = running(
            "--mrt",
            str(data_file(DUMP)),
            "--rtr",
            f"127.0.0.1:{port}",
            "--rtr-retry",
            "1",
            "--rtr-expire",
            str(EXPIRE),
        )

    def __enter__(self) -> Collector:
        return next(self.gen)

    def __exit__(self, *exc: object) -> None:
        try:
            next(self.gen)
        except StopIteration:
            pass


def screenshot(c: Collector, addr: str, prefix: str) -> None:
    """The looking glass shows the statuses and the covering VRPs."""
    chromium = live.require("chromium")
    url = f"{c.http}/?q={addr}"
    flags = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={c.dir / 'chromium'}",
        "--window-size=1500,700",
        "--virtual-time-budget=10000",
    ]
    dom = subprocess.run(
        [chromium, *flags, "--dump-dom", url],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    ).stdout
    assert f"route(s) for {prefix}" in dom, dom[-2000:]
    assert "ROV valid" in dom and f"VRPs covering {prefix}" in dom, dom[-3000:]
    out = Path(os.environ.get("IPFIB_SCREENSHOT_DIR", ROOT / "target")) / "looking-glass-rpki.png"
    out.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [chromium, *flags, f"--screenshot={out}", url],
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert out.is_file() and out.stat().st_size > 10_000, f"no screenshot at {out}"
    print(f"looking-glass screenshot: {out}")


class Routinator:
    """Routinator as an RTR cache on a free loopback port: no TALs, no
    rsync, no RRDP (no network); its VRPs are the prefix assertions of a
    local SLURM file, which it reads again at every refresh (1 s)."""

    def __init__(self, vrps: list[dict[str, Any]]) -> None:
        self.binary = live.require("routinator")
        self.dir = Path(tempfile.mkdtemp(prefix="ipfib-routinator-"))
        self.port = live.free_port()
        (self.dir / "tals").mkdir()
        conf = self.dir / "routinator.conf"
        conf.write_text(f'repository-dir = "{self.dir / "cache"}"\n')
        self.slurm = self.dir / "exceptions.json"
        self.write(vrps)
        self.log_path = self.dir / "routinator.log"
        self._log = open(self.log_path, "wb")  # noqa: SIM115 (closed in stop)
        argv = [
            self.binary,
            "-c",
            str(conf),
            "--no-rir-tals",
            "--extra-tals-dir",
            str(self.dir / "tals"),
            "--exceptions",
            str(self.slurm),
            "--disable-rsync",
            "--disable-rrdp",
            "server",
            "--rtr",
            f"127.0.0.1:{self.port}",
            "--refresh",
            "1",
        ]
        self.proc = subprocess.Popen(argv, stdout=self._log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and self.proc.poll() is None:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return
            except OSError:
                time.sleep(0.1)
        self.stop()
        raise AssertionError(f"Routinator did not listen:\n{self.log_path.read_text()[-3000:]}")

    def write(self, vrps: list[dict[str, Any]]) -> None:
        doc = {
            "slurmVersion": 1,
            "validationOutputFilters": {"prefixFilters": [], "bgpsecFilters": []},
            "locallyAddedAssertions": {
                "prefixAssertions": [
                    {"asn": v["asn"], "prefix": v["prefix"], "maxPrefixLength": v["maxLength"]}
                    for v in vrps
                ],
                "bgpsecAssertions": [],
            },
        }
        tmp = self.slurm.with_suffix(".tmp")
        tmp.write_text(json.dumps(doc))
        os.replace(tmp, self.slurm)

    def stop(self) -> None:
        stop_process(self.proc, self._log, self.dir)


def test_routinator_feeds_the_collector(
    sets: tuple[Path, dict[str, Any], list[dict[str, Any]]],
) -> None:
    """The same checks against Routinator: its VRPs (the generated set, as
    its local exceptions) reach the collector over RTR and every sampled
    route's state equals `ipfib rov`'s; a VRP removed from and one added
    to its file are followed."""
    _, doc, offline = sets
    cache = Routinator(doc["roas"])
    try:
        with contextlib_running(cache.port) as c:
            want = len({(v["prefix"], v["maxLength"], v["asn"]) for v in doc["roas"]})
            wait_for(
                "synced with Routinator",
                lambda: rpki(c)["vrps"] == want,
                timeout=30,
                show=lambda: (rpki(c)["sources"], cache.log_path.read_text()[-2000:]),
            )
            src = rpki(c)["sources"][0]
            assert src["state"] == "synced", src
            rng = random.Random(11)
            for r in rng.sample(offline, 200):
                got = route_of(c, r["prefix"], r["peer_address"])
                assert state(got) == state(r), (r, got)
            valid = next(r for r in offline if state(r) == "valid")
            missing = next(
                r
                for r in offline
                if state(r) == "not-found"
                and r["origin_asn"]
                and int(r["prefix"].split("/")[1]) >= 16
                and not covers(r["prefix"], valid["prefix"])
            )
            roas = [v for v in doc["roas"] if not covers(v["prefix"], valid["prefix"])]
            roas.append(
                {
                    "asn": missing["origin_asn"],
                    "prefix": missing["prefix"],
                    "maxLength": int(missing["prefix"].split("/")[1]),
                }
            )
            cache.write(roas)
            wait_for(
                "Routinator's change followed",
                lambda: (
                    route_of(c, valid["prefix"], valid["peer_address"])["rov"] == "not-found"
                    and route_of(c, missing["prefix"], missing["peer_address"])["rov"] == "valid"
                ),
                timeout=30,
            )
    finally:
        cache.stop()
