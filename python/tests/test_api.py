"""Every call of ipfib.Table against a brute-force oracle, on random tables
rich in edge cases, for every engine; bad inputs; pickling."""

from __future__ import annotations

import enum
import gzip
import ipaddress
import pickle
from decimal import Decimal
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import ipfib
from support import brute_lookup, oracle, probe_addresses, random_routes


def norm(prefix: str) -> str:
    """Python's spelling of a prefix (Rust writes ::ffff:a.b.c.d forms)."""
    return str(ipaddress.ip_network(prefix))


ENGINES = ["auto", "planb", "poptrie", "poptrie:16", "poptrie-flat", "poptrie-flat:13", "radix"]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("seed", [1, 2])
def test_scalar_and_many_match_the_oracle(engine: str, seed: int) -> None:
    routes = random_routes(seed)
    want = oracle(routes)
    t = ipfib.Table.from_prefixes(routes, engine=engine)
    assert len(t) == len(want)
    assert t.engine == engine
    addrs = probe_addresses(routes, seed)
    expect = [brute_lookup(want, a) for a in addrs]
    got = [t.lookup_prefix(a) for a in addrs]
    assert [(norm(g[0]), g[1]) if g else None for g in got] == expect
    assert [t.lookup(a) for a in addrs] == [e[1] if e else None for e in expect]
    vals, lens = t.lookup_many(addrs, default=-1, with_prefix_len=True)
    assert vals.dtype == np.int64 and lens.dtype == np.int16
    assert vals.tolist() == [e[1] if e else -1 for e in expect]
    assert lens.tolist() == [int(e[0].split("/")[1]) if e else -1 for e in expect]
    assert all(norm(p) in want for p in t)
    assert [a in t for a in addrs] == [e is not None for e in expect]


def test_readme_example() -> None:
    t = ipfib.Table.from_prefixes([("10.0.0.0/8", 64500), ("2001:db8::/32", 64501)])
    assert t.lookup("10.1.2.3") == 64500
    assert t.lookup_prefix("2001:db8::1") == ("2001:db8::/32", 64501)
    assert t.lookup("192.0.2.1") is None
    assert t.lookup_many(["10.1.2.3", "192.0.2.1", "2001:db8::1"]).tolist() == [64500, 0, 64501]


def test_mapping_protocol_and_iteration() -> None:
    routes = random_routes(3, 50, 50)
    want = oracle(routes)
    t = ipfib.Table.from_prefixes(routes)
    keys = [norm(k) for k in t]
    assert sorted(keys) == sorted(want)
    v4 = [k for k in keys if ":" not in k]
    assert keys[: len(v4)] == v4, "IPv4 first"
    nets = [ipaddress.ip_network(k) for k in v4]
    assert nets == sorted(nets, key=lambda n: (int(n.network_address), n.prefixlen))
    assert {norm(k): v for k, v in t.items()} == {k: v for k, (_, v) in want.items()}
    for k, (_, v) in want.items():
        assert t[k] == v and t.get(k) == v
    missing = next(f"203.0.113.{i}/32" for i in range(256) if f"203.0.113.{i}/32" not in want)
    with pytest.raises(KeyError):
        t[missing]
    assert t.get(missing) is None and t.get(missing, "none") == "none"
    t2 = ipfib.Table.from_prefixes([("10.0.0.0/8", 1), ("10.1.0.0/16", 2), ("10.1.2.0/24", 3)])
    assert t2.supernets("10.1.2.0/24") == [
        ("10.0.0.0/8", 1),
        ("10.1.0.0/16", 2),
        ("10.1.2.0/24", 3),
    ]
    assert t2.supernets("10.1.2.128/25") == [
        ("10.0.0.0/8", 1),
        ("10.1.0.0/16", 2),
        ("10.1.2.0/24", 3),
    ]
    assert t2.subnets("10.0.0.0/8") == [("10.0.0.0/8", 1), ("10.1.0.0/16", 2), ("10.1.2.0/24", 3)]
    assert t2.subnets("10.1.0.0/16") == [("10.1.0.0/16", 2), ("10.1.2.0/24", 3)]
    assert t2.subnets("11.0.0.0/8") == [] and t2.supernets("11.0.0.0/8") == []
    assert "10.1.2.0/25" in t2 and "11.0.0.0/8" not in t2
    assert t2.lookup(ipaddress.ip_address("10.1.2.3")) == 3
    assert t2[ipaddress.ip_network("10.1.0.0/16")] == 2


def test_insert_remove_republish() -> None:
    t = ipfib.Table(engine="poptrie")
    assert len(t) == 0 and t.lookup("1.2.3.4") is None
    assert t.insert("0.0.0.0/0", "default") is None
    assert t.insert("10.0.0.0/8", "ten") is None
    assert t.insert("10.0.0.0/8", "TEN") == "ten"
    t["2001:db8::/32"] = "doc"
    assert t.lookup_many(["10.1.1.1", "1.1.1.1", "2001:db8::5", "::1"], default=None).tolist() == [
        "TEN",
        "default",
        "doc",
        None,
    ]
    assert t.remove("10.0.0.0/8") == "TEN"
    with pytest.raises(KeyError):
        t.remove("10.0.0.0/8")
    del t["2001:db8::/32"]
    assert t.lookup("10.1.1.1") == "default" and t.lookup("2001:db8::5") is None
    assert len(t) == 1


def test_value_kinds_and_object_arrays() -> None:
    t = ipfib.Table.from_prefixes(
        [
            ("10.0.0.0/8", 7),
            ("11.0.0.0/8", "eleven"),
            ("12.0.0.0/8", ("as", 1)),
            ("13.0.0.0/8", 2**70),
        ]
    )
    out = t.lookup_many(["10.0.0.1", "11.0.0.1", "12.0.0.1", "13.0.0.1", "14.0.0.1"], default=None)
    assert out.dtype == object
    assert out.tolist() == [7, "eleven", ("as", 1), 2**70, None]
    with pytest.raises(TypeError, match="route 0"):
        ipfib.Table.from_prefixes([("10.0.0.0/8", [1])])
    ints = ipfib.Table.from_prefixes([("10.0.0.0/8", 7)])
    assert ints.lookup_many(["10.0.0.1", "9.0.0.1"], default=None).tolist() == [7, None]
    assert ints.lookup_many(["10.0.0.1", "9.0.0.1"], default=-5).dtype == np.int64


def test_equal_values_of_different_types_stay_apart() -> None:
    # Python calls these equal (with equal hashes); each route must still
    # answer the object it was given, not the first equal one.
    class Small(enum.IntEnum):
        ONE = 1

    class Name(str):
        pass

    given = [1.0, True, Decimal(1), 2**70, float(2**70), 1, Small.ONE, Name("x"), "x"]
    t = ipfib.Table.from_prefixes([(f"10.{i}.0.0/16", v) for i, v in enumerate(given)])
    for i, v in enumerate(given):
        got = t[f"10.{i}.0.0/16"]
        assert got == v and type(got) is type(v), (i, got, v)
    out = t.lookup_many([f"10.{i}.0.1" for i in range(len(given))])
    assert [type(o) for o in out.tolist()] == [type(v) for v in given]


def test_masked_and_prefix_lengths() -> None:
    t = ipfib.Table.from_prefixes([("0.0.0.0/0", 1), ("10.0.0.0/8", 2), ("::/0", 3)])
    addrs = np.array([0x0A000001, 0x0B000001], dtype=np.uint32)
    vals, lens = t.lookup_many(addrs, with_prefix_len=True)
    assert vals.tolist() == [2, 1] and lens.tolist() == [8, 0]
    t2 = ipfib.Table.from_prefixes([("10.0.0.0/8", 2)])
    m = t2.lookup_many(["10.0.0.1", "11.0.0.1"], masked=True)
    assert isinstance(m, np.ma.MaskedArray) and np.ma.getmaskarray(m).tolist() == [False, True]
    m, ml = t2.lookup_many(["10.0.0.1", "11.0.0.1"], masked=True, with_prefix_len=True)
    assert np.ma.getmaskarray(ml).tolist() == [False, True] and ml[0] == 8


def test_a_miss_is_none_among_objects_and_0_among_ints() -> None:
    strings = ipfib.Table.from_prefixes([("10.0.0.0/8", "a"), ("11.0.0.0/8", "b")])
    addrs = ["10.0.0.1", "11.0.0.1", "12.0.0.1"]
    got = strings.lookup_many(addrs)
    assert got.dtype == object and got.tolist() == ["a", "b", None]
    # A default given, whatever it is, is kept.
    assert strings.lookup_many(addrs, default=0).tolist() == ["a", "b", 0]
    assert strings.lookup_many(addrs, default="-").tolist() == ["a", "b", "-"]
    mixed = ipfib.Table.from_prefixes([("10.0.0.0/8", 7), ("11.0.0.0/8", "b")])
    assert mixed.lookup_many(addrs).tolist() == [7, "b", None]
    ints = ipfib.Table.from_prefixes([("10.0.0.0/8", 7)])
    assert ints.lookup_many(addrs).tolist() == [7, 0, 0]
    assert ints.lookup_many(addrs, dtype=object).tolist() == [7, 0, 0]
    assert ints.lookup_many(addrs, default=None).tolist() == [7, None, None]
    assert ints.lookup_many(addrs, return_index=True).tolist() == [0, -1, -1]


def test_bad_addresses_name_item_and_index() -> None:
    t = ipfib.Table.from_prefixes([("10.0.0.0/8", 1)])
    with pytest.raises(ValueError, match=r'"10.0.0.999" at index 2'):
        t.lookup_many(["10.0.0.1", "10.0.0.2", "10.0.0.999"])
    assert t.lookup_many(["10.0.0.1", "bad", None], errors="coerce").tolist() == [1, 0, 0]
    with pytest.raises(ValueError, match="at index 1"):
        t.lookup_many(["10.0.0.1", 5])
    with pytest.raises(ValueError, match="at index 1"):
        t.lookup_many(np.array([1, -1], dtype=np.int64))
    with pytest.raises(ValueError, match="at index 0"):
        t.lookup_many([b"\x01\x02\x03"])
    with pytest.raises(ValueError, match="errors must be"):
        t.lookup_many(["10.0.0.1"], errors="ignore")  # type: ignore[call-overload]
    with pytest.raises(TypeError):
        t.lookup_many(np.zeros((3, 3), dtype=np.float32))
    with pytest.raises(TypeError):
        t.lookup_many("10.0.0.1")
    with pytest.raises(ValueError, match="invalid IP address"):
        t.lookup("10.0.0.256")
    with pytest.raises(ValueError, match="host bits"):
        ipfib.Table.from_prefixes([("10.0.0.0/8", 1), ("10.0.0.1/8", 2)])
    with pytest.raises(ValueError, match="route 1"):
        ipfib.Table.from_prefixes([("10.0.0.0/8", 1), ("10.0.0.0/33", 2)])
    assert ipfib.Table.from_prefixes([("10.0.0.1/8", 2)], mask_host_bits=True)["10.0.0.0/8"] == 2
    with pytest.raises(ValueError, match="unknown engine"):
        ipfib.Table(engine="btree")
    with pytest.raises(ValueError, match="from 0 to 24"):
        ipfib.Table(engine="poptrie:30")
    with pytest.raises(ValueError, match="bench. only"):
        ipfib.Table(engine="planb-routes")
    # The registry's names, old ones included, answer alike.
    for name in ["poptrie32", "poptrie32:16", "poptrie5", "poptrie-flat:12", "planb", "radix"]:
        e = ipfib.Table.from_prefixes([("10.0.0.0/8", 1), ("10.1.0.0/16", 2)], engine=name)
        assert [e.lookup("10.1.2.3"), e.lookup("10.2.0.0"), e.lookup("11.0.0.0")] == [2, 1, None]
    assert ipfib.Table(engine="poptrie5:12").engine == "poptrie32:12"
    assert t.lookup_many([]).tolist() == []


def test_files_and_their_errors(tmp_path: Path) -> None:
    good = tmp_path / "t.txt.gz"
    with gzip.open(good, "wt") as f:
        f.write("# comment\n10.0.0.0/8 64500\n2001:db8::/32 via-a\n10.1.0.0/16 007\n")
    t = ipfib.Table.from_file(good)
    assert t.lookup("10.0.0.1") == 64500
    assert t.lookup("2001:db8::1") == "via-a"
    assert t.lookup("10.1.0.1") == "007", "non-canonical integers stay text"
    bad = tmp_path / "bad.txt"
    bad.write_text("10.0.0.0/8 1\n10.0.0.1/8 2\n")
    with pytest.raises(ipfib.TableFileError, match=r"bad.txt:2"):
        ipfib.Table.from_file(bad)
    assert ipfib.Table.from_file(bad, mask_host_bits=True)["10.0.0.0/8"] == 2
    with pytest.raises(FileNotFoundError, match="nope.txt"):
        ipfib.Table.from_file(tmp_path / "nope.txt")
    with pytest.raises(ValueError, match="unknown"):
        ipfib.Table.from_file(good, format="csv")
    with pytest.raises(ipfib.TableFileError, match="MRT"):
        ipfib.Table.from_file(good, value="peer-count")
    trunc = tmp_path / "trunc.txt.gz"
    body = "".join(f"10.{i >> 8 & 255}.{i & 255}.0/24 {i}\n" for i in range(20000)).encode()
    packed = gzip.compress(b"10.0.0.0/8 1\n" + body)
    trunc.write_bytes(packed[: len(packed) // 2])
    with pytest.warns(ipfib.DamagedTableWarning, match="trunc.txt.gz"):
        t = ipfib.Table.from_file(trunc)
    assert t.lookup("10.0.0.1") == 0 and t.lookup("10.200.0.1") == 1
    assert 1000 < len(t) < 20001, "what was complete is loaded, the rest is not"
    with pytest.raises(ipfib.TableFileError, match="trunc.txt.gz"):
        ipfib.Table.from_file(trunc, strict=True)


def test_from_pandas() -> None:
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame({"net": ["10.0.0.0/8", "2001:db8::/32"], "asn": [64500, 64501]})
    t = ipfib.Table.from_pandas(df, "net", "asn", engine="radix")
    assert t.lookup_many(pd.Series(["10.9.9.9", "2001:db8::9", None])).tolist() == [64500, 64501, 0]


@pytest.mark.parametrize("engine", ENGINES)
def test_pickle_round_trip(engine: str) -> None:
    routes: list[tuple[str, Any]] = [
        *random_routes(5, 100, 100),
        ("192.0.2.0/24", "text"),
        ("198.51.100.0/24", (1, 2)),
    ]
    t = ipfib.Table.from_prefixes(routes, engine=engine)
    before = ipfib.unpickled
    t2 = pickle.loads(pickle.dumps(t))
    assert ipfib.unpickled == before + 1
    assert t2.engine == engine and t2.items() == t.items()
    addrs = probe_addresses(routes, 5, 200)
    assert (
        t2.lookup_many(addrs, default=None).tolist() == t.lookup_many(addrs, default=None).tolist()
    )


def test_auto_calibrates_large_tables_and_reuses_the_choice_on_change() -> None:
    # 20K distinct /24s with 300 values: above the calibration threshold.
    routes = [
        (f"{10 + i // 65536}.{i // 256 % 256}.{i % 256}.0/24", i % 300) for i in range(20_000)
    ]
    t = ipfib.Table.from_prefixes(routes)
    i = t.info()
    assert "calibrated" in i["chosen_reason_v4"], i["chosen_reason_v4"]
    n = int(i["chosen_reason_v4"].split(" intervals")[0])
    t.insert("200.0.0.0/8", 7)
    j = t.info()
    assert j["chosen_v4"] == i["chosen_v4"]
    assert j["chosen_reason_v4"] == f"reused: chosen for this table at {n} intervals"
    assert t.lookup("200.1.2.3") == 7 and t.lookup("10.0.5.9") == 5 % 300


def test_info() -> None:
    t = ipfib.Table.from_prefixes([("10.0.0.0/8", 1), ("11.0.0.0/8", 1), ("::/0", 2)])
    i = t.info()
    assert i["prefixes"] == 3 and i["prefixes_v4"] == 2 and i["prefixes_v6"] == 1
    assert i["values_v4"] == 1 and i["integer_values"] is True
    # The default is auto; a table this small takes the family default
    # without timing, and says so.
    assert i["engine"] == "auto" and i["engine_v4"].startswith("auto:poptrie[")
    assert i["chosen_v4"] == "poptrie:18" and i["chosen_v6"] == "poptrie-flat:18"
    assert "too small to be worth timing" in i["chosen_reason_v4"]
    assert i["footprint_bytes"] > 0 and i["route_table_bytes"] > 0
    p = ipfib.Table(engine="poptrie").info()
    assert p["engine_v6"].startswith("poptrie[") and p["chosen_v6"] == "poptrie:18"
    assert p["chosen_reason_v6"] == "named explicitly"
    r = ipfib.Table(engine="radix").info()
    assert r["chosen_v4"] is None and r["chosen_reason_v6"] is None
    assert "3" not in repr(ipfib.Table()) and "2 IPv4" in repr(t)
