"""Shared helpers: the real-table data folder (../shared/data beside the
checkout: tests print SKIPPED and skip when it is missing, and fail under
CI=true), the `ipfib` CLI binary, and random tables rich in edge cases."""

from __future__ import annotations

import ipaddress
import json
import os
import random
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
DATA = Path(os.environ.get("IPFIB_DATA", ROOT.parent / "shared" / "data"))


def _missing(what: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"{what} not found, and CI=true requires it")
    print(f"SKIPPED: {what} not found")
    pytest.skip(f"SKIPPED: {what} not found")


def data_file(name: str) -> Path:
    """A file of the shared data folder (skip, or fail under CI=true)."""
    path = DATA / name
    if not path.is_file():
        _missing(f"{path} (real-table tests need ../shared/data)")
    return path


def cli() -> str:
    """The `ipfib` binary: $IPFIB_CLI, else target/{release,debug}/ipfib, else PATH."""
    candidates = [os.environ.get("IPFIB_CLI")]
    candidates += [str(ROOT / "target" / p / "ipfib") for p in ("release", "debug")]
    candidates.append(shutil.which("ipfib"))
    for c in candidates:
        if c and os.access(c, os.X_OK):
            return c
    _missing("the ipfib CLI binary (cargo build -p ipfib-cli)")
    raise AssertionError("unreachable")


def random_routes(seed: int, n4: int = 300, n6: int = 300) -> list[tuple[str, int]]:
    """Random routes with the edge cases: /0, host routes, nested,
    adjacent, duplicates (later wins), top and bottom of the space,
    IPv4-mapped IPv6 prefixes."""
    rnd = random.Random(seed)
    routes: list[tuple[str, int]] = []

    def add(net: ipaddress.IPv4Network | ipaddress.IPv6Network, value: int | None = None) -> None:
        routes.append((str(net), rnd.randrange(0, 70000) if value is None else value))

    families: list[tuple[int, int, Any]] = [
        (32, n4, ipaddress.IPv4Network),
        (128, n6, ipaddress.IPv6Network),
    ]
    for bits, n, cls in families:
        add(cls((0, 0)))
        add(cls((0, bits)))
        add(cls(((1 << bits) - 1, bits)))
        add(cls(((1 << bits) - 256, bits - 8)))
        for _ in range(n):
            length = rnd.choice([rnd.randrange(0, bits + 1), bits // 4 * 3, bits // 2, bits])
            addr = rnd.getrandbits(bits) >> (bits - length) << (bits - length) if length else 0
            net = cls((addr, length))
            add(net)
            if length < bits and rnd.random() < 0.3:  # nested and adjacent
                sub = list(net.subnets())
                add(sub[rnd.randrange(2)])
            if rnd.random() < 0.05:  # duplicate: the later value wins
                add(net)
    routes.append(("::ffff:10.0.0.0/104", 99))
    return routes


def oracle(routes: list[tuple[str, int]]) -> dict[str, tuple[str, int]]:
    """Route table as a dict prefix -> value, the later duplicate winning."""
    d: dict[str, tuple[str, int]] = {}
    for p, v in routes:
        d[str(ipaddress.ip_network(p))] = (p, v)  # p is text: the family is right
    return d


def brute_lookup(table: dict[str, tuple[str, int]], addr: str) -> tuple[str, int] | None:
    """Longest match by trying every length (IPv4-mapped addresses unmapped)."""
    a = ipaddress.ip_address(addr)
    if isinstance(a, ipaddress.IPv6Address) and a.ipv4_mapped is not None:
        a = a.ipv4_mapped
    bits = a.max_prefixlen
    cls = ipaddress.IPv4Network if a.version == 4 else ipaddress.IPv6Network
    for length in range(bits, -1, -1):
        net = cls((int(a) >> (bits - length) << (bits - length), length))
        hit = table.get(str(net))
        if hit is not None:
            return str(net), hit[1]
    return None


def probe_addresses(routes: Sequence[tuple[str, Any]], seed: int, n: int = 2000) -> list[str]:
    """Boundaries of every prefix (first, last, one past) plus random addresses."""
    rnd = random.Random(seed)
    out: list[str] = []
    for p, _ in routes:
        net = ipaddress.ip_network(p)
        first, last = int(net.network_address), int(net.broadcast_address)
        top = (1 << net.max_prefixlen) - 1
        cls = ipaddress.IPv4Address if net.version == 4 else ipaddress.IPv6Address
        for x in (first, last, first - 1, last + 1):
            if 0 <= x <= top:
                out.append(str(cls(x)))
    out += [str(ipaddress.IPv4Address(rnd.getrandbits(32))) for _ in range(n)]
    out += [str(ipaddress.IPv6Address(rnd.getrandbits(128))) for _ in range(n)]
    out += ["::ffff:10.1.2.3", "::ffff:0.0.0.0", "::10.1.2.3", "0.0.0.0", "255.255.255.255"]
    return out


def check_enriched_flows(got: Any, tables: Sequence[Path], geo: Path) -> Any:
    """Check a flows dataset (python/examples/flows.py) enriched by an
    example (src_asn, src_net, src_country from ``src_ip``) row for row:
    values and lengths from the single-process ``lookup_many``, the prefix
    rebuilt with ``ipaddress`` from the address and the length (not the
    route-index path the helpers use). Returns the mask of rows no route
    matched."""
    import numpy as np
    import pyarrow as pa

    import ipfib

    loaded = [ipfib.Table.from_file(t) for t in tables]
    asn = ipfib.Table.from_prefixes([r for t in loaded for r in t.items()])
    country = ipfib.Table.from_file(geo, value="country_code")
    src = pa.array(got["src_ip"], from_pandas=True)
    vals: Any
    lens: Any
    vals, lens = asn.lookup_many(src, errors="coerce", masked=True, with_prefix_len=True)
    miss = np.ma.getmaskarray(vals)
    have = got["src_asn"]
    assert (have.isna().to_numpy() == miss).all()
    assert (have[~miss].astype("int64").to_numpy() == vals.compressed()).all()

    def net(text: str, length: int) -> str:
        addr = ipaddress.ip_address(text)
        if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
            addr = addr.ipv4_mapped  # answered from the IPv4 table
        return str(ipaddress.ip_network(f"{addr}/{length}", strict=False))

    want_nets = [
        None if m else net(a, n)
        for a, n, m in zip(got["src_ip"], np.ma.getdata(lens).tolist(), miss.tolist())
    ]
    assert [x if isinstance(x, str) else None for x in got["src_net"]] == want_nets
    cc = country.lookup_many(src, None, errors="coerce")
    assert [x if isinstance(x, str) else None for x in got["src_country"]] == list(cc)
    assert miss.sum() < len(got) // 2, "real flows must mostly match"
    return miss


RIB_DUMP = "rib.20260730.1400.first2MiB.mrt.bz2"


def rov_of_dump(vrps: Path) -> list[dict[str, Any]]:
    """Writes a VRP/ASPA set drawn from the real 2026 RIB dump to `vrps`
    (`ipfib rov --generate-vrps`) and returns `ipfib rov`'s JSON answer
    for every route of the dump against it."""
    dump = data_file(RIB_DUMP)
    g = subprocess.run(
        [cli(), "rov", "--generate-vrps", str(vrps), str(dump)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert g.returncode == 1 and vrps.is_file(), g.stderr  # the excerpt ends in a cut record
    r = subprocess.run(
        [cli(), "rov", "--vrps", str(vrps), "--output", "json", str(dump)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 1, r.stderr  # the excerpt ends in a cut record
    return [json.loads(line) for line in r.stdout.splitlines()]
