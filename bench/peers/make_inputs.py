#!/usr/bin/env python3
"""Write one table and its traces as files that ipfib and every peer read.

Peers are only comparable when they answer the same question: the same
routes, the same addresses, the same values. This script reads a table
(`PREFIX/LEN VALUE` text or pyasn IPASN, gzip or plain; the later duplicate
wins, as in ipfib), renumbers the values 0, 1, 2, ... in order of first
appearance, and writes per family:

  OUT/table.v4.txt, OUT/table.v6.txt    `PREFIX/LEN VALUE` (VALUE an integer)
  OUT/uniform.v4.trace, ...v6.trace     uniformly random addresses
  OUT/matched.v4.trace, ...v6.trace     addresses inside prefixes drawn
                                        uniformly from the table

Loading the written table, ipfib interns value `i` as value index `i`
(values appear in numeric order), so its checksums and the peers' agree.

Trace files: the 16-byte header `IPFIBTR1`, family (1 byte: 4 or 6), 7 zero
bytes, then the addresses in network byte order (4 or 16 bytes each).
"""

from __future__ import annotations

import argparse
import gzip
import ipaddress
import random
import struct
import sys
from pathlib import Path
from typing import IO, Iterator

Net = ipaddress.IPv4Network | ipaddress.IPv6Network


def open_text(path: Path) -> IO[str]:
    with path.open("rb") as f:
        magic = f.read(2)
    if magic == b"\x1f\x8b":
        return gzip.open(path, "rt", encoding="utf-8")
    return path.open("r", encoding="utf-8")


def read_routes(path: Path) -> Iterator[tuple[Net, str]]:
    with open_text(path) as f:
        for line_no, line in enumerate(f, 1):
            text = line.split("#", 1)[0].strip()
            if not text or text.startswith(";"):
                continue
            fields = text.split()
            if len(fields) < 2:
                sys.exit(f"{path}:{line_no}: expected PREFIX/LEN VALUE")
            try:
                net = ipaddress.ip_network(fields[0], strict=True)
            except ValueError as e:
                sys.exit(f"{path}:{line_no}: {e}")
            yield net, fields[1]


def write_trace(path: Path, family: int, addrs: list[int]) -> None:
    width = 4 if family == 4 else 16
    with path.open("wb") as f:
        f.write(b"IPFIBTR1" + bytes([family]) + bytes(7))
        f.write(b"".join(a.to_bytes(width, "big") for a in addrs))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--table", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--len", type=int, default=2_000_000, help="addresses per trace")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()

    routes: dict[Net, str] = {}
    for net, value in read_routes(args.table):
        routes[net] = value  # the later duplicate wins
    args.out.mkdir(parents=True, exist_ok=True)
    rng = random.Random(args.seed)
    for family in (4, 6):
        nets = [n for n in routes if n.version == family]
        if not nets:
            continue
        # Per family: ipfib keeps one value table per family.
        numbers: dict[str, int] = {}
        with (args.out / f"table.v{family}.txt").open("w") as f:
            for n in nets:
                v = numbers.setdefault(routes[n], len(numbers))
                f.write(f"{n} {v}\n")
        bits = 32 if family == 4 else 128
        uniform = [rng.getrandbits(bits) for _ in range(args.len)]
        write_trace(args.out / f"uniform.v{family}.trace", family, uniform)
        matched = []
        for _ in range(args.len):
            n = nets[rng.randrange(len(nets))]
            host = bits - n.prefixlen
            matched.append(int(n.network_address) | (rng.getrandbits(host) if host else 0))
        write_trace(args.out / f"matched.v{family}.trace", family, matched)
        print(f"v{family}: {len(nets)} prefixes, {args.len} addresses per trace", file=sys.stderr)


if __name__ == "__main__":
    main()
