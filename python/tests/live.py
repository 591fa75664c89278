"""Real BGP routers on loopback that send BMP to a collector under test
(../shared/docs/BMP-TESTING.md says what each sends and why this topology):

    gobgpd B   route source, source_addr (127.0.0.2), passive  <- add_route,
       |       iBGP AS 65001: keeps MRT next hops and AS paths    inject_mrt
    A          monitored router, 127.0.0.1: gobgpd (GoBgpRouters)
       |       or FRR bgpd -M bmp (FrrMonitored); dials the collector
    collector  127.0.0.1:bmp_port, the caller's: listen BEFORE starting A
               (GoBGP retries its BMP connection after 1, 2, 4 ... 32 s)

The parts come from scripts/live-parts: $IPFIB_GOBGPD, $IPFIB_GOBGP,
$IPFIB_BGPD and $IPFIB_CHROMIUM override, else the parts file it writes
($IPFIB_LIVE_CACHE or ~/.cache/ipfib-live, parts.env), else PATH. A test
calls `require(part)`: skip when a part is missing, fail under CI=true.

Only loopback addresses; each port is picked free by binding port 0; every
config and log goes into one temp dir; every wait is bounded; every process
is stopped by its own PID (SIGTERM, bounded wait, SIGKILL), by close(), the
end of a `with`, or at interpreter exit for one left open. Errors raise
LiveError with the tails of every process's stdout and stderr.
"""

from __future__ import annotations

import atexit
import bz2
import ipaddress
import json
import os
import shlex
import shutil
import signal
import socket
import struct
import subprocess
import tempfile
import time
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import TracebackType
from typing import IO, Any, NoReturn

import pytest

PARTS = ("gobgpd", "gobgp", "bgpd", "chromium", "rtrtr", "routinator")
RTRTR_VERSION = "0.3.3"
ROUTINATOR_VERSION = "0.15.3"
GOBGP_VERSION = "4.8.0"
# Debian's place for FRR's daemons, which are not on PATH.
FRR_BGPD = "/usr/lib/frr/bgpd"
AS = 65001  # iBGP between A and B: see the module docstring


class LiveError(RuntimeError):
    """A router did not start, did not peer in time, or a command failed."""


# --- finding the parts ---------------------------------------------------


def cache_dir() -> Path:
    """Where scripts/live-parts keeps GoBGP and parts.env."""
    default = Path.home() / ".cache" / "ipfib-live"
    return Path(os.environ.get("IPFIB_LIVE_CACHE", default))


def _parts_file() -> dict[str, str]:
    """parts.env as written by scripts/live-parts (bash %q quoting)."""
    path = cache_dir() / "parts.env"
    if not path.is_file():
        return {}
    out: dict[str, str] = {}
    for line in path.read_text().splitlines():
        if line.startswith("#") or "=" not in line:
            continue
        key, _, value = line.partition("=")
        words = shlex.split(value)  # '' for a missing part -> []
        out[key.strip()] = words[0] if words else ""
    return out


@cache
def _version(path: str) -> str:
    """The last word of the first line of `PATH --version` ("gobgpd version
    4.8.0" -> "4.8.0"), or "" when it does not answer within 10 s."""
    try:
        r = subprocess.run(
            [path, "--version"], capture_output=True, text=True, timeout=10, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return ""
    words = (r.stdout or r.stderr).split("\n", 1)[0].split()
    return words[-1] if words else ""


def locate(part: str) -> tuple[str | None, str]:
    """(path, "") for a usable part, else (None, why not)."""
    if part not in PARTS:
        raise ValueError(f"unknown part {part!r}: one of {', '.join(PARTS)}")
    env = f"IPFIB_{part.upper()}"
    override = os.environ.get(env)
    candidates: list[tuple[str, str | None]]
    if override:  # the caller's choice: used, or refused with the reason
        candidates = [(f"${env}", override)]
    else:
        candidates = [
            (str(cache_dir() / "parts.env"), _parts_file().get(part.upper())),
            ("PATH", shutil.which(part)),
        ]
        if part == "bgpd":
            candidates.append(("Debian's FRR", FRR_BGPD))
    why = "not found"
    for origin, path in candidates:
        if path == "" and origin.endswith("parts.env"):
            why = f"{origin} marks it missing"
        if not path:
            continue
        if not os.access(path, os.X_OK):
            why = f"{path} (from {origin}) is not an executable file"
            continue
        if part in ("gobgpd", "gobgp"):
            version = _version(path)
            if version != GOBGP_VERSION:
                # Debian's GoBGP 3.10 drops prefixes in `mrt inject`.
                why = f"{path} (from {origin}) is version {version!r}, not {GOBGP_VERSION}"
                continue
        if part == "rtrtr" and _version(path) != RTRTR_VERSION:
            why = f"{path} (from {origin}) is version {_version(path)!r}, not {RTRTR_VERSION}"
            continue
        if part == "routinator" and _version(path) != ROUTINATOR_VERSION:
            why = f"{path} (from {origin}) is version {_version(path)!r}, not {ROUTINATOR_VERSION}"
            continue
        return path, ""
    return None, why


def require(part: str) -> str:
    """The part's path; else skip the test (fail it under CI=true) naming
    the part and what to run."""
    path, why = locate(part)
    if path is not None:
        return path
    message = f"{part} not available: run scripts/live-parts ({why})"
    if os.environ.get("CI") == "true":
        pytest.fail(f"{message}; CI=true requires it")
    print(f"SKIPPED: {message}")
    pytest.skip(f"SKIPPED: {message}")


def free_port(addr: str = "127.0.0.1") -> int:
    """A TCP port free on `addr` now (the kernel's pick for port 0)."""
    if not ipaddress.ip_address(addr).is_loopback:
        raise ValueError(f"{addr} is not a loopback address")
    family = socket.AF_INET6 if ":" in addr else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.bind((addr, 0))
        port: int = s.getsockname()[1]
        return port


def wait_until(check: Callable[[], bool], timeout: float, what: str, step: float = 0.25) -> None:
    """Poll `check` until it is true; LiveError naming `what` after `timeout` s."""
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() >= deadline:
            raise LiveError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(step)


# --- MRT (RFC 6396) ------------------------------------------------------

MRT_HEADER = struct.Struct(">IHHI")  # timestamp, type, subtype, length
TABLE_DUMP_V2 = 13
PEER_INDEX_TABLE = 1


@dataclass(frozen=True)
class MrtRecord:
    offset: int  # of the 12-byte common header in the dump
    timestamp: int
    type: int
    subtype: int
    body: bytes


def read_dump(path: Path) -> bytes:
    """A dump's bytes, decompressing .bz2 and .gz. A truncated compressed
    file (the shared data's "first2MiB" dumps are cut mid-stream) gives
    what its complete blocks hold: bz2.decompress and gzip.decompress
    refuse it whole, a decompressor object does not."""
    raw = path.read_bytes()
    if path.suffix not in (".bz2", ".gz"):
        return raw
    out = []
    while raw:  # one stream (member) after another, as bzip2 -d and gzip -d do
        d: bz2.BZ2Decompressor | zlib._Decompress
        d = bz2.BZ2Decompressor() if path.suffix == ".bz2" else zlib.decompressobj(wbits=31)
        out.append(d.decompress(raw))
        raw = d.unused_data
    return b"".join(out)


def mrt_records(data: bytes) -> Iterator[MrtRecord]:
    """Every complete record, in order; stops at a truncated last one."""
    offset = 0
    while offset + MRT_HEADER.size <= len(data):
        timestamp, type_, subtype, length = MRT_HEADER.unpack_from(data, offset)
        end = offset + MRT_HEADER.size + length
        if end > len(data):
            return
        yield MrtRecord(offset, timestamp, type_, subtype, data[offset + MRT_HEADER.size : end])
        offset = end


def is_rib_record(r: MrtRecord) -> bool:
    """A TABLE_DUMP_V2 record holding one prefix's routes (any subtype but
    the peer index table)."""
    return r.type == TABLE_DUMP_V2 and r.subtype != PEER_INDEX_TABLE


def mrt_cut(data: bytes, max_rib_records: int | None = None) -> tuple[bytes, list[MrtRecord]]:
    """The dump up to its last complete record, or up to its first
    `max_rib_records` RIB records (the peer index table always kept), and
    the RIB records kept."""
    end = 0
    kept: list[MrtRecord] = []
    for r in mrt_records(data):
        if is_rib_record(r):
            if max_rib_records is not None and len(kept) >= max_rib_records:
                break
            kept.append(r)
        end = r.offset + MRT_HEADER.size + len(r.body)
    return data[:end], kept


# --- processes -----------------------------------------------------------

_RUNNING: set[_Process] = set()


class _Process:
    """One child started by the harness, its stdout and stderr in files."""

    def __init__(self, name: str, argv: Sequence[str], logdir: Path) -> None:
        self.name = name
        self.argv = list(argv)
        self.stdout_path = logdir / f"{name}.stdout"
        self.stderr_path = logdir / f"{name}.stderr"
        # Closed by stop(), which every path out of the harness calls.
        self._out: IO[bytes] = open(self.stdout_path, "wb")
        self._err: IO[bytes] = open(self.stderr_path, "wb")
        self.stopped = False
        # Own session: a Ctrl-C to pytest reaches the test, which stops the
        # routers by PID, instead of killing them mid-test.
        try:
            self.popen = subprocess.Popen(
                self.argv,
                stdin=subprocess.DEVNULL,
                stdout=self._out,
                stderr=self._err,
                start_new_session=True,
            )
        except OSError:
            self._out.close()
            self._err.close()
            raise
        self.pid = self.popen.pid
        _RUNNING.add(self)

    def alive(self) -> bool:
        return self.popen.poll() is None

    def stop(self, timeout: float = 5.0) -> bool:
        """SIGTERM, up to `timeout` s, then SIGKILL. True when SIGKILL was needed."""
        killed = False
        self.stopped = True
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)  # Popen signals only its own PID
            try:
                self.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait(5)
                killed = True
        self._out.close()
        self._err.close()
        _RUNNING.discard(self)
        return killed

    def tail(self, lines: int = 15) -> str:
        parts = []
        for path in (self.stdout_path, self.stderr_path):
            try:
                text = path.read_text(errors="replace").splitlines()[-lines:]
            except OSError:
                continue
            if text:
                parts.append(f"--- {path.name} (last {len(text)} lines)\n" + "\n".join(text))
        state = "running" if self.alive() else f"exited {self.popen.returncode}"
        return f"=== {self.name} pid {self.pid} ({state}): {shlex.join(self.argv)}\n" + (
            "\n".join(parts) or "(no output)"
        )


@atexit.register
def _stop_leftovers() -> None:
    for p in list(_RUNNING):
        p.stop(2.0)


# --- the routers ---------------------------------------------------------


def _gobgp_toml(
    router_id: str,
    addr: str,
    port: int,
    neighbor: str,
    neighbor_port: int,
    passive: bool,
    bmp: tuple[int, str, int] | None = None,
) -> str:
    """A gobgpd config as in BMP-TESTING.md; `bmp` = (port, policy, stats timeout)."""
    text = f"""[global.config]
  as = {AS}
  router-id = "{router_id}"
  port = {port}
  local-address-list = ["{addr}"]
"""
    if bmp is not None:
        bmp_port, policy, stats = bmp
        text += f"""[[bmp-servers]]
  [bmp-servers.config]
    address = "127.0.0.1"
    port = {bmp_port}
    route-monitoring-policy = "{policy}"
    statistics-timeout = {stats}
"""
    text += f"""[[neighbors]]
  [neighbors.config]
    neighbor-address = "{neighbor}"
    peer-as = {AS}
  [neighbors.transport.config]
    local-address = "{addr}"
    remote-port = {neighbor_port}
"""
    if passive:
        text += "    passive-mode = true\n"
    text += """  [neighbors.timers.config]
    connect-retry = 1
    hold-time = 9
    keepalive-interval = 3
"""
    for family in ("ipv4-unicast", "ipv6-unicast"):
        text += f"""  [[neighbors.afi-safis]]
    [neighbors.afi-safis.config]
      afi-safi-name = "{family}"
"""
    return text


class _Routers:
    """Route source B (gobgpd) and whatever A the subclass starts; the
    methods that feed routes in through B and stop it."""

    def __init__(self, source_addr: str, timeout: float, keep_dir: bool) -> None:
        if not ipaddress.ip_address(source_addr).is_loopback:
            raise ValueError(f"source_addr {source_addr} is not a loopback address")
        self.gobgpd = require("gobgpd")
        self.gobgp = require("gobgp")
        self.source_addr = source_addr
        self.timeout = timeout
        self.keep_dir = keep_dir
        self.source_port = free_port(source_addr)
        self.source_api = free_port()
        self.source: _Process | None = None
        self._procs: list[_Process] = []
        self._injected = 0
        self.dir = Path(tempfile.mkdtemp(prefix="ipfib-live-"))

    # Subclasses call this inside their __init__ and close() on any error.
    def _start_source(self, monitored_port: int) -> None:
        conf = self.dir / "b.toml"
        conf.write_text(
            _gobgp_toml(
                "10.0.0.2", self.source_addr, self.source_port, "127.0.0.1", monitored_port, True
            )
        )
        self.source = self._start("gobgpd-b", self._gobgpd_argv(conf, self.source_api))
        # Instead of BMP-TESTING's `sleep 0.5`: B's API answering means it
        # has read its config and listens, so A's first dial finds it.
        self._wait(lambda: self._cli_try(self.source_api, "global") is not None, "gobgpd B's API")

    def _gobgpd_argv(self, conf: Path, api_port: int) -> list[str]:
        # -p: plain-text logs. --pprof-disable alone (as in BMP-TESTING.md)
        # still leaves the metrics server on localhost:6060, which the second
        # gobgpd then fails to bind (a WARN): an empty --metrics-path turns it
        # off too, so the gRPC API is each gobgpd's only port besides BGP.
        return [
            self.gobgpd,
            "-f",
            str(conf),
            "-p",
            "--api-hosts",
            f"127.0.0.1:{api_port}",
            "--pprof-disable",
            "--metrics-path=",
        ]

    def _start(self, name: str, argv: Sequence[str]) -> _Process:
        p = _Process(name, argv, self.dir)
        self._procs.append(p)
        return p

    def _tails(self) -> str:
        return "\n".join(p.tail() for p in self._procs)

    def _fail(self, message: str) -> NoReturn:
        raise LiveError(f"{message}\n{self._tails()}")

    def _wait(self, check: Callable[[], bool], what: str) -> None:
        """Poll `check` for up to self.timeout s; fail at once, with the
        logs, when a router not stopped on purpose has exited."""
        deadline = time.monotonic() + self.timeout
        while True:
            for p in self._procs:
                if not p.stopped and not p.alive():
                    self._fail(f"{p.name} exited ({p.popen.returncode}) while waiting for {what}")
            if check():
                return
            if time.monotonic() >= deadline:
                self._fail(f"timed out after {self.timeout:g} s waiting for {what}")
            time.sleep(0.25)

    def _cli(self, api_port: int, *args: str, timeout: float = 30.0) -> str:
        """`gobgp -p API_PORT ARGS...`'s stdout; LiveError when it fails."""
        argv = [self.gobgp, "-u", "127.0.0.1", "-p", str(api_port), *args]
        try:
            r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
        except subprocess.TimeoutExpired:
            self._fail(f"{shlex.join(argv)} took over {timeout:g} s")
        if r.returncode != 0:
            self._fail(f"{shlex.join(argv)} exited {r.returncode}: {r.stderr.strip() or r.stdout}")
        return r.stdout

    def _cli_try(self, api_port: int, *args: str) -> str | None:
        """`gobgp ...`'s stdout, or None when it fails or takes over 10 s
        (for polling)."""
        argv = [self.gobgp, "-u", "127.0.0.1", "-p", str(api_port), *args]
        try:
            r = subprocess.run(argv, capture_output=True, text=True, timeout=10, check=False)
        except subprocess.TimeoutExpired:
            return None
        return r.stdout if r.returncode == 0 else None

    def source_established(self) -> bool:
        """B's session with A is up (`gobgp neighbor` shows Establ)."""
        return "Establ" in (self._cli_try(self.source_api, "neighbor") or "")

    def add_route(
        self,
        prefix: str,
        nexthop: str,
        aspath: Sequence[int] = (),
        communities: Sequence[str] = (),
        large_communities: Sequence[str] = (),
    ) -> None:
        """Originate a route at B, which announces it to A over iBGP.
        communities as "65001:100", large ones as "65001:1:2"."""
        family = "ipv6" if ipaddress.ip_network(prefix).version == 6 else "ipv4"
        ipaddress.ip_address(nexthop)  # gobgp would only say "invalid nexthop address"
        args = ["global", "rib", "-a", family, "add", prefix, "nexthop", nexthop]
        if aspath:
            args += ["aspath", " ".join(str(a) for a in aspath)]
        if communities:
            args += ["community", ",".join(communities)]
        if large_communities:
            args += ["large-community", ",".join(large_communities)]
        self._cli(self.source_api, *args)

    def del_route(self, prefix: str) -> None:
        """Withdraw a route B originated (added or injected): A withdraws it."""
        family = "ipv6" if ipaddress.ip_network(prefix).version == 6 else "ipv4"
        self._cli(self.source_api, "global", "rib", "-a", family, "del", prefix)

    def inject_mrt(
        self,
        path: Path | str,
        only_best: bool = True,
        nexthop: str | None = None,
        max_rib_records: int | None = None,
        timeout: float = 600.0,
    ) -> list[MrtRecord]:
        """Inject a TABLE_DUMP_V2 dump (.bz2, .gz or plain) at B with
        `gobgp mrt inject global`, cut at its last complete record (or after
        `max_rib_records` RIB records) since gobgp needs whole records.
        only_best: one path per prefix (otherwise every best-path change is
        re-announced); nexthop: rewrite next hops (RouteViews IPv6 dumps
        need it). Returns the RIB records injected."""
        data, kept = mrt_cut(read_dump(Path(path)), max_rib_records)
        if not kept:
            self._fail(f"{path} holds no complete TABLE_DUMP_V2 RIB record")
        self._injected += 1
        cut = self.dir / f"inject-{self._injected}.mrt"
        cut.write_bytes(data)
        args = ["mrt", "inject", "global"]
        if only_best:
            args.append("--only-best")
        if nexthop is not None:
            ipaddress.ip_address(nexthop)
            args += ["--nexthop", nexthop]
        self._cli(self.source_api, *args, str(cut), timeout=timeout)
        return kept

    def source_rib(self, family: str = "ipv4") -> dict[str, list[dict[str, Any]]]:
        """The route source B's own RIB (`gobgp global rib -a FAMILY -j`):
        what was put in, as {prefix: [path, ...]} in GoBGP's JSON."""
        out = self._cli(self.source_api, "global", "rib", "-a", family, "-j")
        rib: dict[str, list[dict[str, Any]]] = json.loads(out) if out.strip() else {}
        return rib

    def stop_source(self, timeout: float = 5.0) -> None:
        """Stop B (SIGTERM by its PID): A loses the peer and sends Peer Down."""
        if self.source is not None:
            self.source.stop(timeout)

    def close(self) -> None:
        """Stop every process started here, newest first, and remove the
        temp dir (unless keep_dir)."""
        for p in reversed(self._procs):
            p.stop()
            if p.name == "bgpd-a":
                # FRR removes its crash-log dir itself only on a clean exit
                # (not after SIGKILL, nor when it fails at startup).
                shutil.rmtree(f"/var/tmp/frr/bgpd.{p.pid}", ignore_errors=True)
        if not self.keep_dir:
            shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> _Routers:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class GoBgpRouters(_Routers):
    """GoBGP 4.8.0 as both B and the monitored A (BMP-TESTING.md's a.toml:
    Initiation, Peer Up plus a Loc-RIB Peer Up, Route Monitoring per
    `policy`: pre-policy | post-policy | both | local-rib | all, Stats
    every `statistics_timeout` s (15 is GoBGP's minimum), Peer Down).
    Returns once A and B are Established."""

    def __init__(
        self,
        bmp_port: int,
        source_addr: str = "127.0.0.2",
        policy: str = "all",
        statistics_timeout: int = 15,
        timeout: float = 30.0,
        keep_dir: bool = False,
    ) -> None:
        if policy not in ("pre-policy", "post-policy", "both", "local-rib", "all"):
            raise ValueError(f"unknown route-monitoring-policy {policy!r}")
        if statistics_timeout < 15:
            raise ValueError("GoBGP refuses a statistics-timeout below 15 s")
        super().__init__(source_addr, timeout, keep_dir)
        try:
            self.port = free_port()
            self.api = free_port()
            self._start_source(self.port)
            conf = self.dir / "a.toml"
            conf.write_text(
                _gobgp_toml(
                    "10.0.0.1",
                    "127.0.0.1",
                    self.port,
                    source_addr,
                    self.source_port,
                    False,
                    (bmp_port, policy, statistics_timeout),
                )
            )
            self.monitored = self._start("gobgpd-a", self._gobgpd_argv(conf, self.api))
            self._wait(self.established, "A and B to reach Established")
        except BaseException:
            self.close()
            raise

    def established(self) -> bool:
        """A's session with B is up."""
        return "Establ" in (self._cli_try(self.api, "neighbor") or "")

    def __enter__(self) -> GoBgpRouters:
        return self


class FrrMonitored(_Routers):
    """FRR bgpd (Debian 8.4.4, -M bmp) as the monitored A, GoBGP B as the
    route source. BMP: Initiation, Peer Up, pre/post-policy Route Monitoring
    for the `families` given, Stats, Peer Down (no withdrawals first, and
    repeated every ~3 s while B is down), Route Mirroring with mirror=True.
    Returns once B sees the session Established.

    Running bgpd as root in a temp dir (found by trying, FRR 8.4.4):
    - -S (skip_runas) keeps root: without it bgpd switches to user frr and
      exits "Can't create pid lock file ... Permission denied" in a 0700
      temp dir.
    - -i DIR/bgpd.pid: the default /var/run/frr/bgpd.pid is shared, so a
      second bgpd (Debian's service, another test) would clash; bgpd makes
      /var/run/frr itself when missing.
    - -P 0: otherwise bgpd's vty listens on 0.0.0.0:2605 and [::]:2605;
      --vty_socket DIR puts the vty socket (for vtysh) in the temp dir.
    - it keeps a crash-log dir /var/tmp/frr/bgpd.PID, which it removes only
      on a clean exit; close() removes it after bgpd has exited.
    - -Z (no zebra) logs "sendmsg_nexthop: zclient_send_message() failed"
      once: harmless.
    - `soft-reconfiguration inbound` per family: without it every
      pre-policy message is a withdrawal (BMP-TESTING.md).
    """

    def __init__(
        self,
        bmp_port: int,
        source_addr: str = "127.0.0.2",
        policies: Sequence[str] = ("pre-policy", "post-policy"),
        families: Sequence[str] = ("ipv4", "ipv6"),
        mirror: bool = False,
        timeout: float = 30.0,
        keep_dir: bool = False,
    ) -> None:
        for policy in policies:
            if policy not in ("pre-policy", "post-policy"):
                raise ValueError(f"FRR 8.4 monitors pre-policy or post-policy, not {policy!r}")
        for family in families:
            if family not in ("ipv4", "ipv6"):
                raise ValueError(f"unknown family {family!r}")
        self.bgpd = require("bgpd")
        super().__init__(source_addr, timeout, keep_dir)
        try:
            self.port = free_port()
            self._start_source(self.port)
            conf = self.dir / "bgpd-a.conf"
            conf.write_text(
                self._config(bmp_port, source_addr, self.source_port, policies, families, mirror)
            )
            self.monitored = self._start(
                "bgpd-a",
                [
                    self.bgpd,
                    "-f",
                    str(conf),
                    "-M",
                    "bmp",
                    "-Z",
                    "-n",
                    "-p",
                    str(self.port),
                    "-l",
                    "127.0.0.1",
                    "--vty_socket",
                    str(self.dir),
                    "-S",
                    "-P",
                    "0",
                    "-i",
                    str(self.dir / "bgpd.pid"),
                ],
            )
            self._wait(self.source_established, "FRR A and B to reach Established")
        except BaseException:
            self.close()
            raise

    def vtysh(self, command: str, timeout: float = 10.0) -> str:
        """A show command through bgpd's vty socket ("show bmp", "show bgp
        summary"); vtysh needs the same --vty_socket dir."""
        vtysh = shutil.which("vtysh") or "/usr/bin/vtysh"
        argv = [vtysh, "--vty_socket", str(self.dir), "-c", command]
        try:
            r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
        except (OSError, subprocess.TimeoutExpired) as e:
            self._fail(f"{shlex.join(argv)}: {e}")
        if r.returncode != 0:
            self._fail(f"{shlex.join(argv)} exited {r.returncode}: {r.stderr.strip() or r.stdout}")
        return r.stdout

    @staticmethod
    def _config(
        bmp_port: int,
        neighbor: str,
        neighbor_port: int,
        policies: Sequence[str],
        families: Sequence[str],
        mirror: bool,
    ) -> str:
        lines = [
            "frr defaults traditional",
            "hostname ipfib-live-a",
            "log stdout informational",
            "!",
            f"router bgp {AS}",
            " bgp router-id 10.0.0.1",
            " bgp log-neighbor-changes",
            " no bgp default ipv4-unicast",
            f" neighbor {neighbor} remote-as {AS}",
            f" neighbor {neighbor} port {neighbor_port}",
            f" neighbor {neighbor} update-source 127.0.0.1",
            f" neighbor {neighbor} timers 3 9",
            f" neighbor {neighbor} timers connect 1",
        ]
        for family in ("ipv4", "ipv6"):
            lines += [
                f" address-family {family} unicast",
                f"  neighbor {neighbor} activate",
                f"  neighbor {neighbor} soft-reconfiguration inbound",
                " exit-address-family",
            ]
        lines.append(" bmp targets collector")
        for family in families:
            for policy in policies:
                lines.append(f"  bmp monitor {family} unicast {policy}")
        if mirror:
            lines.append("  bmp mirror")
        lines += [
            f"  bmp connect 127.0.0.1 port {bmp_port} min-retry 100 max-retry 1000",
            " exit",
            "!",
        ]
        return "\n".join(lines) + "\n"

    def __enter__(self) -> FrrMonitored:
        return self
