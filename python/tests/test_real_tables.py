"""On every real table in ../shared/data, the Python package answers
exactly what the native CLI (`ipfib lookup`) prints: same prefix, same
value text, for random, matched and boundary addresses of both families,
through the scalar calls and every lookup_many path; engines agree."""

from __future__ import annotations

import gzip
import ipaddress
import random
import subprocess
import warnings

import numpy as np
import pytest

import ipfib
from support import cli, data_file

TABLES = [
    "routeviews-20151101.ipasn.dat.gz",
    "routeviews-rv2-20260730-1400.pfx2as.txt.gz",
    "routeviews-rv6-20260730-1400.pfx2as.txt.gz",
    "linx-rib-ipv6.20141225.0000.p69.txt.gz",
    "linx-update.20141217.0000-p52.txt.gz",
    "rib.20140523.0600.first1MiB.mrt.bz2",
    "rib6.20151101.0600.first1MiB.mrt.bz2",
    "rib6.20260730.1400.first1MiB.mrt.bz2",
    "bview.20140112.1600.3samples.mrt.bz2",
    "mrt-samples/bird6-mrtdump_rib",
    "mrt-samples/openbgpd_rib_table-v2",
    "mrt-samples/quagga_bgp",
    "mmdb/iptoasn-country.mmdb",
]


def addresses(t: ipfib.Table, seed: int) -> list[str]:
    """Random addresses of both families, plus the first, last and
    one-past-last address of a sample of the table's prefixes."""
    rnd = random.Random(seed)
    out = [str(ipaddress.IPv4Address(rnd.getrandbits(32))) for _ in range(3000)]
    out += [str(ipaddress.IPv6Address(rnd.getrandbits(128))) for _ in range(1000)]
    out += [
        str(ipaddress.IPv6Address((0x2000 + rnd.getrandbits(12)) << 112 | rnd.getrandbits(112)))
        for _ in range(2000)
    ]
    keys = list(t)
    for p in rnd.sample(keys, min(len(keys), 3000)):
        net = ipaddress.ip_network(p)
        first, last = int(net.network_address), int(net.broadcast_address)
        cls = ipaddress.IPv4Address if net.version == 4 else ipaddress.IPv6Address
        out += [str(cls(first)), str(cls(last))]
        if last + 1 < 1 << net.max_prefixlen:
            out.append(str(cls(last + 1)))
    return out


def native(path: str, addrs: list[str], engine: str) -> list[tuple[str, str] | None]:
    """`ipfib lookup` answers: (prefix, value text) or None."""
    run = subprocess.run(
        [cli(), "lookup", "--table", path, "--engine", engine],
        input="\n".join(addrs) + "\n",
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode in (0, 1), run.stderr
    answers: list[tuple[str, str] | None] = []
    for line, a in zip(run.stdout.splitlines(), addrs):
        addr, prefix, value = line.split(" ", 2)
        assert addr == a
        answers.append(None if prefix == "-" else (prefix, value))
    assert len(answers) == len(addrs)
    return answers


@pytest.mark.parametrize("name", TABLES)
def test_python_equals_the_cli(name: str) -> None:
    path = str(data_file(name))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ipfib.DamagedTableWarning)
        t = ipfib.Table.from_file(path)
        tp = ipfib.Table.from_file(path, engine="poptrie")
        tf = ipfib.Table.from_file(path, engine="poptrie-flat")
    assert len(t) > 0
    addrs = addresses(t, len(name))
    want = native(path, addrs, "planb")
    got = [t.lookup_prefix(a) for a in addrs]
    assert [(p, str(v)) if p else None for p, v in (g or (None, None) for g in got)] == want
    # The vectorised paths, and another engine, agree with the CLI too.
    values = t.lookup_many(addrs, default=None)
    assert [None if v is None else str(v) for v in values.tolist()] == [
        w[1] if w else None for w in want
    ]
    _, lens = t.lookup_many(addrs, with_prefix_len=True)
    assert lens.tolist() == [int(w[0].rsplit("/", 1)[1]) if w else -1 for w in want]
    # Origin-ASN tables answer in uint32 too (dtype=), exactly what the CLI prints.
    assert t.info()["integer_values"] or not name.endswith(("ipasn.dat.gz", "pfx2as.txt.gz"))
    if t.info()["integer_values"]:
        u32 = t.lookup_many(addrs, dtype=np.uint32)
        assert u32.dtype == np.uint32
        assert u32.tolist() == [int(w[1]) if w else 0 for w in want]
    assert tp.lookup_many(addrs, default=None).tolist() == values.tolist()
    assert tf.lookup_many(addrs, default=None).tolist() == values.tolist()
    v4 = [i for i, a in enumerate(addrs) if ":" not in a]
    nums = np.array([int(ipaddress.IPv4Address(addrs[i])) for i in v4], dtype=np.uint32)
    assert tp.lookup_many(nums, default=None).tolist() == [values[i] for i in v4]
    v6 = [i for i, a in enumerate(addrs) if ":" in a]
    packed = b"".join(ipaddress.IPv6Address(addrs[i]).packed for i in v6)
    rows = np.frombuffer(packed, dtype=np.uint8).reshape(-1, 16)
    assert t.lookup_many(rows, default=None).tolist() == [values[i] for i in v6]
    assert tf.lookup_many(rows, default=None).tolist() == [values[i] for i in v6]


def test_value_policies_on_mrt() -> None:
    path = str(data_file("rib.20140523.0600.first1MiB.mrt.bz2"))
    addrs = [f"{a}.{b}.1.1" for a in range(1, 224, 3) for b in range(0, 256, 17)]
    # Peer index 0 holds no route in the file's first MiB (the CLI refuses
    # that table, see below); peer 1 does.
    for value, peer in (("peer-count", None), ("next-hop", "1")):
        args = ["--value", value] + (["--peer", peer] if peer else [])
        run = subprocess.run(
            [cli(), "lookup", "--table", path, *args],
            input="\n".join(addrs) + "\n",
            capture_output=True,
            text=True,
            timeout=300,
        )
        want = [line.split(" ", 1)[1] for line in run.stdout.splitlines()]
        with pytest.warns(ipfib.DamagedTableWarning, match="damaged at byte"):
            t = ipfib.Table.from_file(path, value=value, peer=peer)
        got = [t.lookup_prefix(a) for a in addrs]
        assert [f"{g[0]} {g[1]}" if g else "- -" for g in got] == want
        assert len(want) == len(addrs)
        assert any(line != "- -" for line in want)
    empty = subprocess.run(
        [cli(), "lookup", "--table", path, "--value", "next-hop", "--peer", "0"],
        input="1.0.1.1\n",
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert empty.returncode == 2 and "no route could be read" in empty.stderr


def test_pyasn_dat_matches_line_by_line() -> None:
    """The ipasn file read by hand (later line wins) equals the table."""
    path = data_file("routeviews-20151101.ipasn.dat.gz")
    t = ipfib.Table.from_file(path, format="ipasn")
    want: dict[str, int] = {}
    with gzip.open(path, "rt") as f:
        for line in f:
            if line.startswith(";") or not line.strip():
                continue
            p, asn = line.split()
            want[p] = int(asn)
    assert len(t) == len(want)
    sample = random.Random(1).sample(sorted(want), 5000)
    assert [t[p] for p in sample] == [want[p] for p in sample]
