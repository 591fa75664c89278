"""Table.from_file(..., format="ranges", value_column=N): IP range tables
(FIRST,LAST,VALUE... as CSV or TSV) against a model written here with
Python's own ipaddress: the value of an address is the last range in the
file that holds it, and the table's prefixes are exactly
ipaddress.summarize_address_range over each maximal run of one value."""

from __future__ import annotations

import bisect
import csv
import gzip
import ipaddress
import random
import warnings
from pathlib import Path

import pytest

import ipfib
from support import data_file

Range = tuple[int, int, int, int, str]  # (bits, first, last, asn, org)


def random_ranges(seed: int, n: int) -> list[Range]:
    """Ranges of both families rich in edges: the ends of the space,
    single addresses, the full space, adjacent and overlapping ranges,
    IPv6 ranges wider than 64 bits; few values, so runs of one value form."""
    rnd = random.Random(seed)
    out: list[Range] = []
    for i in range(n):
        bits = rnd.choice([32, 128])
        top = (1 << bits) - 1
        kind = rnd.randrange(6)
        if kind == 0:
            first, last = 0, rnd.choice([0, top, rnd.getrandbits(bits)])
        elif kind == 1:
            first, last = rnd.choice([top, rnd.getrandbits(bits)]), top
        elif kind == 2:
            first = last = rnd.getrandbits(bits)
        elif kind == 3 and bits == 128:
            width = rnd.randrange(64, 100)
            first = rnd.getrandbits(bits) >> width << width
            last = min(top, first + (rnd.randrange(1, 4) << width) - rnd.randrange(2))
        else:
            # Small numbers near a few bases: touching and overlapping.
            base = rnd.choice([0x0A000000, 1 << (bits - 1), top - 5000])
            a, b = base + rnd.randrange(5000), base + rnd.randrange(5000)
            first, last = min(a, b), max(a, b)
        asn = 64496 + rnd.randrange(4)
        org = rnd.choice(["Cloudflare, Inc.", 'LLC "X"', "Plain Org", f"Org {i % 3}"])
        out.append((bits, first, last, asn, org))
    return out


def addr(bits: int, a: int) -> str:
    return str(ipaddress.IPv4Address(a) if bits == 32 else ipaddress.IPv6Address(a))


def write_csv(path: Path, ranges: list[Range]) -> None:
    with path.open("w", newline="") as f:
        f.write("# a comment line\n")
        w = csv.writer(f)
        for bits, first, last, asn, org in ranges:
            w.writerow([addr(bits, first), addr(bits, last), asn, org])


def answer(ranges: list[Range], bits: int, a: int, column: int) -> int | str | None:
    for r in reversed(ranges):
        if r[0] == bits and r[1] <= a <= r[2]:
            return r[3] if column == 3 else r[4]
    return None


def model_prefixes(ranges: list[Range], column: int) -> set[tuple[str, int | str]]:
    out: set[tuple[str, int | str]] = set()
    for bits in (32, 128):
        top = (1 << bits) - 1
        cuts = {0}
        for r in ranges:
            if r[0] == bits:
                cuts.add(r[1])
                if r[2] < top:
                    cuts.add(r[2] + 1)
        starts = sorted(cuts)
        runs: list[list[int | str | None]] = []
        for i, s in enumerate(starts):
            end = starts[i + 1] - 1 if i + 1 < len(starts) else top
            v = answer(ranges, bits, s, column)
            if runs and runs[-1][2] == v:
                runs[-1][1] = end
            else:
                runs.append([s, end, v])
        for lo, hi, v in runs:
            if v is None:
                continue
            cls = ipaddress.IPv4Address if bits == 32 else ipaddress.IPv6Address
            for net in ipaddress.summarize_address_range(cls(lo), cls(hi)):
                out.add((str(net), v))
    return out


@pytest.mark.parametrize("seed", range(6))
def test_ranges_answer_as_the_last_range_holding_the_address(tmp_path: Path, seed: int) -> None:
    ranges = random_ranges(seed, 60)
    path = tmp_path / "r.csv"
    write_csv(path, ranges)
    probes: list[tuple[int, int]] = []
    for bits, first, last, *_ in ranges:
        top = (1 << bits) - 1
        probes += [(bits, first), (bits, last), (bits, (first - 1) & top), (bits, (last + 1) & top)]
    rnd = random.Random(seed)
    probes += [(b, rnd.getrandbits(b)) for b in (32, 128) for _ in range(200)]
    for column in (3, 4):
        t = ipfib.Table.from_file(path, format="ranges", value_column=column)
        assert set(t.items()) == model_prefixes(ranges, column)
        texts = [addr(b, a) for b, a in probes]
        want = [answer(ranges, b, a, column) for b, a in probes]
        assert [t.lookup(x) for x in texts] == want
        assert t.lookup_many(texts, default=None).tolist() == want
    # auto finds the format; the default column is 3 (ASNs become ints).
    t = ipfib.Table.from_file(path)
    assert set(t.items()) == model_prefixes(ranges, 3)


def test_tsv_quoting_and_bad_lines(tmp_path: Path) -> None:
    tsv = tmp_path / "ip2asn.tsv"
    tsv.write_text(
        "1.0.0.0\t1.0.0.255\t13335\tUS\tCLOUDFLARENET - Cloudflare, Inc.\n"
        "1.0.1.0\t1.0.3.255\t0\tNone\tNot routed\n"
    )
    t = ipfib.Table.from_file(tsv, format="ranges", value_column=5)
    assert t.lookup("1.0.0.7") == "CLOUDFLARENET - Cloudflare, Inc."
    assert t.lookup_prefix("1.0.2.1") == ("1.0.2.0/23", "Not routed")
    bad = tmp_path / "bad.csv"
    bad.write_text('10.0.0.0,10.0.0.255,1\n10.0.1.9,10.0.1.0,2\n10.0.2.0,10.0.2.255,"x\n')
    with pytest.warns(ipfib.DamagedTableWarning) as caught:
        t = ipfib.Table.from_file(bad, format="ranges")
    message = str(caught[0].message)
    assert f"{bad}:2:" in message and f"{bad}:3:" in message, message
    assert t.lookup("10.0.0.1") == 1 and t.lookup("10.0.1.5") is None
    with pytest.raises(ipfib.TableFileError, match=r"bad\.csv:2:"):
        ipfib.Table.from_file(bad, format="ranges", strict=True)
    with pytest.raises(ValueError, match="column 3 or later"):
        ipfib.Table.from_file(tsv, format="ranges", value_column=2)
    text = tmp_path / "t.txt"
    text.write_text("10.0.0.0/8 1\n")
    with pytest.raises(ValueError, match="value-column applies to ranges"):
        ipfib.Table.from_file(text, value_column=3)


def file_value(text: str) -> int | str:
    """A value as Table.from_file gives it: canonical decimal (no sign, no
    leading zero, within int64) as int, anything else as str."""
    canonical = text.isascii() and text.isdigit() and (text == "0" or not text.startswith("0"))
    return int(text) if canonical and int(text) < 2**63 else text


def test_real_ipv4_asn_file_against_bisection() -> None:
    path = data_file("ranges/asn-ipv4.csv.gz")
    rows: list[tuple[int, int, int | str]] = []
    with gzip.open(path, "rt", newline="") as f:
        for line in f:
            # The first three columns never hold a comma or a quote. The
            # organisation: quoted (kept exactly, "" for "), or bare (blanks
            # around it are no part of it, as ipfib documents: the file has
            # both kinds with a trailing space).
            first_text, last_text, _asn, org_text = line.rstrip("\r\n").split(",", 3)
            if org_text.startswith('"'):
                assert org_text.endswith('"'), line
                org_text = org_text[1:-1].replace('""', '"')
            else:
                org_text = org_text.strip(" \t")
            rows.append(
                (
                    int(ipaddress.IPv4Address(first_text)),
                    int(ipaddress.IPv4Address(last_text)),
                    file_value(org_text),
                )
            )
    # The painted map, by hand: sorted disjoint pieces, whose ends grow, so
    # the pieces a new range can touch are those at the end of the list
    # that end at or after its FIRST; they keep what lies outside it.
    painted: list[tuple[int, int, int | str]] = []
    for first, last, org in rows:
        touched = []
        while painted and painted[-1][1] >= first:
            touched.append(painted.pop())
        pieces: list[tuple[int, int, int | str]] = [(first, last, org)]
        for pf, pl, po in touched:
            if pf < first:
                pieces.append((pf, min(pl, first - 1), po))
            if pl > last:
                pieces.append((max(pf, last + 1), pl, po))
        painted.extend(sorted(pieces, key=lambda p: p[0]))
    starts = [p[0] for p in painted]

    def want(a: int) -> int | str | None:
        i = bisect.bisect_right(starts, a) - 1
        return painted[i][2] if i >= 0 and painted[i][1] >= a else None

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        t = ipfib.Table.from_file(path, format="ranges", value_column=4)
    rnd = random.Random(4)
    probes = [rnd.getrandbits(32) for _ in range(20000)]
    for first, last, _ in rows[::7]:
        probes += [first, last, (first - 1) & 0xFFFFFFFF, (last + 1) & 0xFFFFFFFF]
    texts = [str(ipaddress.IPv4Address(a)) for a in probes]
    assert t.lookup_many(texts, default=None).tolist() == [want(a) for a in probes]
    assert t.lookup("1.0.0.1") == "Cloudflare, Inc."
