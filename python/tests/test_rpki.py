"""`ipfib.Vrps` and `Rib.lookup_many(..., rpki=)` against plain Python:
RFC 6811 written out (every VRP whose prefix covers the route, found by
`ipaddress`), the ASPA draft's ramps, on random sets rich in nesting and on
the real 2026 data with a VRP set drawn from it by `ipfib rov
--generate-vrps` (itself checked route for route against bgpkit-parser's
view in crates/ipfib-cli/tests/rov.rs)."""

from __future__ import annotations

import ipaddress
import json
import random
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import ipfib
from support import data_file, rov_of_dump

DUMP = "rib.20260730.1400.first2MiB.mrt.bz2"
Net = ipaddress.IPv4Network | ipaddress.IPv6Network


def covers(outer: str, inner: str) -> bool:
    a, b = ipaddress.ip_network(outer), ipaddress.ip_network(inner)
    return a.version == b.version and b.subnet_of(a)  # type: ignore[arg-type]


def rov(vrps: list[tuple[str, int, int]], prefix: str, origin: int | None) -> str:
    """RFC 6811 §2, plainly."""
    p = ipaddress.ip_network(prefix)
    covered = as_match = False
    for v, max_len, asn in vrps:
        n = ipaddress.ip_network(v)
        if n.version != p.version or not p.subnet_of(n):  # type: ignore[arg-type]
            continue
        covered = True
        if origin is not None and origin == asn and asn != 0:
            as_match = True
            if p.prefixlen <= max_len:
                return "valid"
    if not covered:
        return "not-found"
    return "invalid-length" if as_match else "invalid-as"


def aspa(aspas: dict[int, set[int]], path: list[Any]) -> str:
    """The draft's upstream procedure, ramp form; path neighbour first."""
    if any(isinstance(a, list) for a in path):
        return "invalid"
    hops: list[int] = []
    for a in reversed(path):
        if not hops or hops[-1] != a:
            hops.append(a)
    n = len(hops)
    if n == 0:
        return "unknown"

    def hop(i: int) -> int:  # 0 provider+, 1 not provider+, 2 no attestation
        ps = aspas.get(hops[i])
        if ps is None:
            return 2
        return 0 if hops[i + 1] in ps else 1

    max_up = next((i + 1 for i in range(n - 1) if hop(i) == 1), n)
    min_up = next((i + 1 for i in range(n - 1) if hop(i) != 0), n)
    if max_up < n:
        return "invalid"
    return "unknown" if min_up < n else "valid"


def random_case(seed: int) -> tuple[list[tuple[str, int, int]], list[tuple[str, int | None]]]:
    rng = random.Random(seed)

    def prefix() -> str:
        if rng.random() < 0.7:
            bits = rng.choice([0x0A000000, 0x0A010000, 0x0A010100, 0xC0000200])
            length = rng.randint(8, 28)
            addr = bits | rng.getrandbits(8) << rng.choice([0, 8])
            return str(ipaddress.ip_network((addr & 0xFFFFFFFF, length), strict=False))
        length = rng.randint(16, 64)
        addr = (0x20010DB8 << 96) | (rng.getrandbits(16) << 80)
        return str(ipaddress.ip_network((addr, length), strict=False))

    vrps = []
    for _ in range(rng.randint(0, 40)):
        p = prefix()
        width = ipaddress.ip_network(p).max_prefixlen
        plen = ipaddress.ip_network(p).prefixlen
        vrps.append((p, min(width, plen + rng.choice([0, 0, 1, 4, 8])), rng.randint(0, 4)))
    routes: list[tuple[str, int | None]] = [
        (prefix(), None if rng.random() < 0.1 else rng.randint(0, 4)) for _ in range(80)
    ]
    return vrps, routes


@pytest.mark.parametrize("seed", range(30))
def test_validate_equals_the_rfc(seed: int) -> None:
    vrps, routes = random_case(seed)
    v = ipfib.Vrps.from_records(vrps)
    got = v.validate_many([p for p, _ in routes], [o for _, o in routes])
    assert got.dtype == np.uint8
    for (p, o), code in zip(routes, got.tolist()):
        want = rov(vrps, p, o)
        assert ipfib.Vrps.STATES[code] == want, (p, o, vrps)
        assert v.validate(p, o) == want
        assert set(v.covering(p)) == {x for x in vrps if covers(x[0], p)}


@pytest.mark.parametrize("seed", range(30))
def test_verify_path_equals_the_draft(seed: int) -> None:
    rng = random.Random(seed)
    aspas = {c: set(rng.sample(range(1, 8), rng.randint(0, 3))) for c in rng.sample(range(1, 8), 4)}
    v = ipfib.Vrps.from_records([], aspas=[(c, sorted(p)) for c, p in aspas.items()])
    assert v.aspa_count == len(aspas)
    for _ in range(60):
        path: list[Any] = [rng.randint(1, 8) for _ in range(rng.randint(0, 6))]
        if path and rng.random() < 0.1:
            path.append([rng.randint(1, 8)])
        assert v.verify_path(path) == aspa(aspas, path), (path, aspas)


def test_numpy_origins_and_errors() -> None:
    v = ipfib.Vrps.from_records([("10.0.0.0/8", 16, 64500)])
    codes = v.validate_many(
        ["10.1.0.0/16", "10.1.0.0/16", "10.1.1.0/24"], np.array([64500, -1, 64500])
    )
    assert codes.tolist() == [1, 2, 3]
    assert v.validate_many(["10.1.0.0/16"], np.array([64500], np.uint32)).tolist() == [1]
    with pytest.raises(ValueError, match="prefixes\\[1\\]"):
        v.validate_many(["10.0.0.0/8", "10.0.0.1/8"], [1, 2])
    with pytest.raises(ValueError, match="one origin per prefix"):
        v.validate_many(["10.0.0.0/8"], [1, 2])
    with pytest.raises(ValueError, match="max length"):
        ipfib.Vrps.from_records([("10.0.0.0/8", 7, 1)])


def test_files_and_slurm(tmp_path: Path) -> None:
    (tmp_path / "v.csv").write_text(
        "ASN,IP Prefix,Max Length,Trust Anchor\nAS64500,10.0.0.0/8,16,x\n"
    )
    (tmp_path / "s.json").write_text(
        json.dumps(
            {
                "slurmVersion": 1,
                "validationOutputFilters": {"prefixFilters": [{"asn": 64500}]},
                "locallyAddedAssertions": {
                    "prefixAssertions": [
                        {"asn": 64501, "prefix": "10.0.0.0/8", "maxPrefixLength": 24}
                    ]
                },
            }
        )
    )
    v = ipfib.Vrps.from_file(tmp_path / "v.csv")
    assert v.validate("10.1.0.0/16", 64500) == "valid"
    w = ipfib.Vrps.from_file([tmp_path / "v.csv"], slurm=tmp_path / "s.json")
    assert w.validate("10.1.0.0/16", 64500) == "invalid-as"
    assert w.validate("10.1.1.0/24", 64501) == "valid"
    (tmp_path / "bad.csv").write_text("AS1,10.0.0.0/8,8\nAS2,10.0.0.1/8,8\n")
    with pytest.raises(ipfib.TableFileError, match="bad.csv: line 2"):
        ipfib.Vrps.from_file(tmp_path / "bad.csv")


@pytest.fixture(scope="module")
def real(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict[str, Any]]]:
    f = tmp_path_factory.mktemp("rpki") / "vrps.json"
    return f, rov_of_dump(f)


def test_real_routes_equal_ipfib_rov(real: tuple[Path, list[dict[str, Any]]]) -> None:
    f, routes = real
    v = ipfib.Vrps.from_file(f)
    doc = json.loads(f.read_text())
    assert len(v) == len({(r["prefix"], r["maxLength"], r["asn"]) for r in doc["roas"]})
    codes = v.validate_many([r["prefix"] for r in routes], [r["origin_asn"] for r in routes])
    names = [ipfib.Vrps.STATES[c] for c in codes.tolist()]
    want = [f"invalid-{r['rov_reason']}" if r["rov"] == "invalid" else r["rov"] for r in routes]
    assert names == want
    # And plain RFC 6811 on a sample (the whole dump is too slow in Python).
    vrps = [(r["prefix"], r["maxLength"], r["asn"]) for r in doc["roas"]]
    by_len: dict[tuple[int, int, int], list[tuple[str, int, int]]] = {}
    for x in vrps:
        n = ipaddress.ip_network(x[0])
        by_len.setdefault((n.version, int(n.network_address), n.prefixlen), []).append(x)
    for i in random.Random(3).sample(range(len(routes)), 2000):
        r = routes[i]
        p = ipaddress.ip_network(r["prefix"])
        cands = [
            x
            for plen in range(p.prefixlen + 1)
            for x in by_len.get(
                (p.version, int(p.supernet(new_prefix=plen).network_address), plen), []
            )
        ]
        assert names[i] == rov(cands, r["prefix"], r["origin_asn"]), r


def test_rib_lookup_many_carries_states(real: tuple[Path, list[dict[str, Any]]]) -> None:
    f, routes = real
    v = ipfib.Vrps.from_file(f)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ipfib.DamagedTableWarning)
        rib = ipfib.Rib.from_mrt(data_file(DUMP))
    by_route = {
        (r["prefix"], r["peer_address"]): (
            f"invalid-{r['rov_reason']}" if r["rov"] == "invalid" else r["rov"],
            r["aspa"],
        )
        for r in routes
    }
    addrs = [
        str(ipaddress.ip_network(r["prefix"]).network_address)
        for r in random.Random(5).sample(routes, 3000)
    ]
    addrs += ["203.0.113.77", "not an address"]
    out = rib.lookup_many(addrs, rpki=v, errors="coerce")
    plain = rib.lookup_many(addrs, errors="coerce")
    assert np.array_equal(out["found"], plain["found"]) and np.array_equal(
        out["peer"], plain["peer"]
    )
    address_of = {p["id"]: p["address"] for p in rib.peers()}
    checked = 0
    for i, a in enumerate(addrs):
        if not out["found"][i]:
            assert out["rov"][i] == 255 and out["aspa"][i] == 255
            continue
        prefix = str(ipaddress.ip_network(f"{a}/{out['prefix_len'][i]}", strict=False))
        want = by_route[(prefix, address_of[int(out["peer"][i])])]
        got = (ipfib.Vrps.STATES[out["rov"][i]], ipfib.Vrps.ASPA_STATES[out["aspa"][i]])
        assert got == want, (a, prefix)
        checked += 1
    assert checked >= 2900
