"""MaxMind DB tables against the official reader (PyPI ``maxminddb``, the
oracle): for every file of MaxMind's test suite (test-data/ and bad-data/)
and the real iptoasn-country.mmdb, every address asked gets the same
record and the same prefix length as ``get_with_prefix_len`` gives, with
the whole record as JSON and with ``value=`` field paths (one, and several
at once). Files the oracle refuses to open, we refuse too.

Conversions (docs/architecture.md, "MaxMind DB tables"): bytes are
lowercase hex strings; floats are written as the shortest text of their
float32, so the oracle's value is that text read as a float32; NaN and the
infinities are JSON null. An address whose lookup makes the oracle raise
(a corrupt record or tree, a record over the resource limits) is a miss
for us: that network was skipped and reported."""

from __future__ import annotations

import ipaddress
import json
import math
import random
import struct
import warnings
from pathlib import Path
from typing import Any

import maxminddb
import numpy as np
import pytest
from maxminddb.errors import InvalidDatabaseError

import ipfib
from support import DATA, data_file

SUITE = DATA / "mmdb" / "maxmind-db-test"


def suite_files() -> list[str]:
    files = sorted(SUITE.glob("test-data/*.mmdb")) + sorted(SUITE.glob("bad-data/*/*.mmdb"))
    names = [str(p.relative_to(DATA)) for p in files]
    return names + ["mmdb/iptoasn-country.mmdb"] if names else ["mmdb/maxmind-db-test/missing"]


MISSING = object()


def oracle_get(reader: Any, addr: str) -> tuple[Any, int] | None:
    """The oracle's (record, prefix length); None when it raises for this
    address (an IPv6 address in an IPv4 tree, a corrupt record or tree).

    IPv4-mapped addresses (``::ffff:a.b.c.d``) are the one deliberate
    difference: ipfib answers them from the IPv4 table everywhere (its
    documented rule), so the expectation is the oracle's answer for
    ``a.b.c.d``. (Where the file aliases ``::ffff:0:0/96`` to the IPv4
    subtree, as MaxMind's databases do, the record is the same and only the
    prefix length differs: IPv4 bits instead of 96 more.)"""
    try:
        rec, plen = reader.get_with_prefix_len(unmapped(addr))
    except (ValueError, InvalidDatabaseError):
        return None
    return rec, plen


def unmapped(addr: str) -> str:
    """``a.b.c.d`` for ``::ffff:a.b.c.d``, else the address itself."""
    ip = ipaddress.ip_address(addr)
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return str(ip.ipv4_mapped)
    return addr


def f32(x: float) -> float:
    return float(struct.unpack("f", struct.pack("f", x))[0])


def same(ours: Any, theirs: Any) -> bool:
    """Our JSON-decoded value equals the oracle's record, by the documented
    conversions (types compared too: True is not 1)."""
    if isinstance(theirs, (bytes, bytearray)):
        return bool(ours == bytes(theirs).hex())
    if isinstance(theirs, bool) or theirs is None:
        return ours is theirs
    if isinstance(theirs, int):
        return type(ours) is int and ours == theirs
    if isinstance(theirs, float):
        if not math.isfinite(theirs):
            return ours is None
        if isinstance(ours, bool) or not isinstance(ours, (int, float)):
            return False
        return float(ours) == theirs or f32(float(ours)) == theirs
    if isinstance(theirs, str):
        return bool(ours == theirs)
    if isinstance(theirs, list):
        return isinstance(ours, list) and len(ours) == len(theirs) and all(map(same, ours, theirs))
    if isinstance(theirs, dict):
        return (
            isinstance(ours, dict)
            and ours.keys() == theirs.keys()
            and all(same(ours[k], theirs[k]) for k in theirs)
        )
    raise AssertionError(f"unexpected oracle type {type(theirs)}")


def select(rec: Any, path: str) -> Any:
    """The oracle's record at a dot path (numeric segments index arrays)."""
    for seg in path.split("."):
        if isinstance(rec, dict) and seg in rec:
            rec = rec[seg]
        elif isinstance(rec, list) and seg.isdigit() and (seg == "0" or seg[0] != "0"):
            if int(seg) >= len(rec):
                return MISSING
            rec = rec[int(seg)]
        else:
            return MISSING
    return rec


def field_ok(ours: Any, theirs: Any) -> bool:
    """A ``value=`` field as route text: strings and bytes bare, the rest
    JSON; canonical decimal integers come back as ``int``."""
    text = str(ours)
    if isinstance(theirs, str):
        return text == theirs
    if isinstance(theirs, (bytes, bytearray)):
        return text == bytes(theirs).hex()
    return same(json.loads(text), theirs)


def paths_of(rec: Any, prefix: str = "", depth: int = 0) -> list[str]:
    """Dot paths into a record (maps and the first array items), for
    choosing fields to pick."""
    out: list[str] = []
    if depth > 3:
        return out
    items: list[tuple[str, Any]] = []
    if isinstance(rec, dict):
        items = list(rec.items())
    elif isinstance(rec, list):
        items = [(str(i), v) for i, v in enumerate(rec[:2])]
    for k, v in items:
        if "." in k or not k:
            continue
        p = f"{prefix}{k}"
        out.append(p)
        out += paths_of(v, p + ".", depth + 1)
    return out


def networks(reader: Any, limit: int = 200_000) -> list[Any]:
    """The oracle's own networks (its iteration; it stops on some corrupt
    files and skips the IPv4 aliases: our table's networks are added too)."""
    out = []
    try:
        for net, _ in reader:
            out.append(net)
            if len(out) >= limit:
                break
    except Exception:  # noqa: BLE001 - the oracle's iteration fails on corrupt trees
        pass
    return out


def addresses(
    reader: Any, table: ipfib.Table | None, seed: int, sample: int, randoms: int
) -> list[str]:
    """Random addresses of both families (IPv4-mapped, 6to4, IPv4-compatible
    included), and the first, last, first - 1 and last + 1 addresses of a
    sample of the oracle's networks and of ours."""
    rnd = random.Random(seed)
    out = [str(ipaddress.IPv4Address(rnd.getrandbits(32))) for _ in range(randoms)]
    out += [str(ipaddress.IPv6Address(rnd.getrandbits(128))) for _ in range(randoms // 3)]
    out += [
        str(ipaddress.IPv6Address((0x2000 + rnd.getrandbits(12)) << 112 | rnd.getrandbits(112)))
        for _ in range(randoms // 2)
    ]
    for _ in range(randoms // 5):
        v4 = rnd.getrandbits(32)
        out += [
            str(ipaddress.IPv6Address(0xFFFF << 32 | v4)),  # ::ffff:a.b.c.d
            str(ipaddress.IPv6Address(0x2002 << 112 | v4 << 80 | rnd.getrandbits(80))),
            str(ipaddress.IPv6Address(v4)),  # ::a.b.c.d
            str(ipaddress.IPv6Address(0x2001 << 112 | rnd.getrandbits(96))),  # Teredo
        ]
    nets = [ipaddress.ip_network(n) for n in networks(reader)]
    if table is not None:
        nets += [ipaddress.ip_network(p) for p in table]
    for net in rnd.sample(nets, min(len(nets), sample)):
        first, last = int(net.network_address), int(net.broadcast_address)
        cls = ipaddress.IPv4Address if net.version == 4 else ipaddress.IPv6Address
        for a in (first - 1, first, last, last + 1):
            if 0 <= a < 1 << net.max_prefixlen:
                out.append(str(cls(a)))
    return out


def load(path: Path, **kw: Any) -> ipfib.Table:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ipfib.DamagedTableWarning)
        return ipfib.Table.from_file(str(path), **kw)


def check_file(name: str) -> None:
    path = data_file(name)
    try:
        reader = maxminddb.open_database(str(path))
    except (InvalidDatabaseError, ValueError, TypeError, UnicodeDecodeError):
        # The oracle refuses the file: so do we, with the path in the message.
        with pytest.raises(ipfib.TableFileError, match=path.name):
            load(path)
        return
    t = load(path)
    # Some denial-of-service records are megabytes each in the oracle's
    # answer (kept for the later passes): few addresses for those.
    heavy = any(w in name for w in ("limit", "amplification", "pointer-decoder"))
    sample, randoms = (3000, 1500) if "iptoasn" in name else (20, 10) if heavy else (400, 1500)
    addrs = addresses(reader, t, seed=len(name), sample=sample, randoms=randoms)
    expected = [oracle_get(reader, a) for a in addrs]
    records: list[Any] = []
    for a, exp in zip(addrs, expected):
        got = t.lookup_prefix(a)
        if exp is None or exp[0] is None:
            assert got is None, (name, a, exp, got)
            continue
        rec, plen = exp
        assert got is not None, (name, a, exp)
        prefix, value = got
        assert int(prefix.split("/")[1]) == plen, (name, a, prefix, plen)
        assert ipaddress.ip_address(unmapped(a)) in ipaddress.ip_network(prefix), (name, a)
        assert same(json.loads(str(value)), rec), (name, a, value, rec)
        records.append(rec)
    # The vectorised path answers the same.
    many, lens = t.lookup_many(addrs, None, with_prefix_len=True)
    for a, v, n, exp in zip(addrs, many.tolist(), lens.tolist(), expected):
        hit = exp is not None and exp[0] is not None
        assert (v is not None) == hit, (name, a)
        assert not hit or exp is None or n == exp[1], (name, a, n, exp)
    # Fields: two paths some record has, and one none has.
    paths = sorted({p for r in records[:200] for p in paths_of(r)})
    chosen = paths[:: max(1, len(paths) // 2)][:2] + ["no.such.field"]
    for field in chosen:
        tf = load(path, value=field)
        for a, exp in zip(addrs, expected):
            got = tf.lookup_prefix(a)
            theirs = MISSING if exp is None or exp[0] is None else select(exp[0], field)
            if theirs is MISSING or theirs is None:
                assert got is None, (name, field, a, got)
                continue
            assert got is not None and exp is not None, (name, field, a)
            assert int(got[0].split("/")[1]) == exp[1], (name, field, a, got)
            assert field_ok(got[1], theirs), (name, field, a, got, theirs)
    # All fields at once: a tuple per network, one array per field.
    tm = load(path, value=chosen)
    assert tm.fields == chosen
    cols = tm.lookup_fields(addrs)
    assert list(cols) == chosen
    for i, (a, exp) in enumerate(zip(addrs, expected)):
        got = tm.lookup(a)
        theirs = [MISSING if exp is None or exp[0] is None else select(exp[0], f) for f in chosen]
        present = [x is not MISSING and x is not None for x in theirs]
        if not any(present):
            assert got is None, (name, a, got)
        else:
            assert isinstance(got, tuple) and len(got) == len(chosen)
            for item, x, ok in zip(got, theirs, present):
                assert (item is not None) == ok, (name, a, got)
                assert not ok or field_ok(item, x), (name, a, item, x)
        for f, item in zip(chosen, got or (None,) * len(chosen)):
            assert cols[f][i] == item or (cols[f][i] is None and item is None), (name, a, f)


@pytest.mark.parametrize("name", suite_files())
def test_answers_equal_the_official_reader(name: str) -> None:
    check_file(name)


def test_several_fields_as_arrays_and_frames() -> None:
    path = data_file("mmdb/iptoasn-country.mmdb")
    t = ipfib.Table.from_file(str(path), value=["country_code", "nope"])
    assert t.fields == ["country_code", "nope"]
    assert t.lookup("1.0.0.1") == ("US", None)
    addrs = np.array([0x01000001, 0x0A000001, 0x08080808], dtype=np.uint32)
    cols = t.lookup_fields(addrs)
    assert cols["country_code"].tolist() == ["US", None, "US"]
    assert cols["nope"].tolist() == [None, None, None]
    # An int default makes an int column where every value is an int.
    asn = ipfib.Table.from_file(
        str(data_file("mmdb/maxmind-db-test/test-data/GeoLite2-ASN-Test.mmdb")),
        value=["autonomous_system_number", "autonomous_system_organization"],
    )
    reader = maxminddb.open_database(
        str(data_file("mmdb/maxmind-db-test/test-data/GeoLite2-ASN-Test.mmdb"))
    )
    probe = ["1.128.0.1", "2600:6000::1", "10.0.0.1"]
    cols = asn.lookup_fields(probe, 0)
    assert cols["autonomous_system_number"].dtype == np.int64
    recs: list[Any] = [reader.get(a) or {} for a in probe]
    want = [r.get("autonomous_system_number", 0) for r in recs]
    assert cols["autonomous_system_number"].tolist() == want
    assert cols["autonomous_system_organization"].dtype == object
    pd = pytest.importorskip("pandas")
    df = asn.lookup_fields(probe, 0, frame="pandas")
    assert isinstance(df, pd.DataFrame)
    assert list(df.columns) == ["autonomous_system_number", "autonomous_system_organization"]
    assert df["autonomous_system_number"].tolist() == want
    pl = pytest.importorskip("polars")
    # polars: misses are nulls (the default is not used).
    dfp = asn.lookup_fields(probe, 0, frame="polars")
    assert isinstance(dfp, pl.DataFrame)
    assert dfp["autonomous_system_number"].to_list() == [
        r.get("autonomous_system_number") for r in recs
    ]
    assert dfp["autonomous_system_organization"].dtype == pl.String
    with pytest.raises(ValueError, match="frame"):
        asn.lookup_fields(probe, frame="excel")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="several fields"):
        ipfib.Table.from_file(str(path)).lookup_fields(probe)
    # Pickling keeps the fields.
    import pickle

    back = pickle.loads(pickle.dumps(t))
    assert back.fields == t.fields
    assert back.lookup_fields(addrs)["country_code"].tolist() == ["US", None, "US"]


def test_format_names_and_refusals() -> None:
    path = str(data_file("mmdb/iptoasn-country.mmdb"))
    t = ipfib.Table.from_file(path, format="mmdb", value="country_code")
    assert t.lookup("1.0.0.1") == "US"
    assert t.lookup_prefix("::1.0.0.1") == ("::100:0/120", "US")
    with pytest.raises(ValueError, match="MaxMind DB"):
        ipfib.Table.from_file(path, format="text", value=["country_code"])
    with pytest.raises(ValueError, match="field path"):
        ipfib.Table.from_file(path, value="a..b", format="mmdb")
    text = str(data_file("routeviews-20151101.ipasn.dat.gz"))
    with pytest.raises(ipfib.TableFileError, match="MaxMind DB"):
        ipfib.Table.from_file(text, value=["x"])
