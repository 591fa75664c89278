#!/usr/bin/env python3
"""Inputs for the `ipfib lookup` stdin benchmark (BENCHMARKS.md, "`ipfib
lookup` on stdin"): 5M lines each, seed 42, into DIR (default: .).

- v4.txt: uniformly random IPv4 addresses;
- v6.txt: IPv6 addresses inside prefixes drawn uniformly from the IPv6 part
  of routeviews-20151101.ipasn.dat.gz (uniform IPv6 would almost all miss);
- mixed.txt: 70% lines as v4.txt, 30% as v6.txt, interleaved.

Usage: bench/lookup/make_inputs.py [DIR]   (run from the repository root)
"""

import gzip
import ipaddress
import os
import random
import sys

TABLE = "../shared/data/routeviews-20151101.ipasn.dat.gz"
N = 5_000_000


def main() -> None:
    out = sys.argv[1] if len(sys.argv) > 1 else "."
    random.seed(42)
    v6 = []
    with gzip.open(TABLE, "rt") as f:
        for line in f:
            if line.startswith(";"):
                continue
            p = line.split()[0]
            if ":" in p:
                v6.append(ipaddress.ip_network(p))

    def r4() -> str:
        return str(ipaddress.IPv4Address(random.getrandbits(32)))

    def r6() -> str:
        n = random.choice(v6)
        host = random.getrandbits(128 - n.prefixlen)
        return str(ipaddress.IPv6Address(int(n.network_address) | host))

    for name, line in [
        ("v4.txt", r4),
        ("v6.txt", r6),
        ("mixed.txt", lambda: r6() if random.random() < 0.3 else r4()),
    ]:
        with open(os.path.join(out, name), "w") as f:
            f.write("".join(line() + "\n" for _ in range(N)))


if __name__ == "__main__":
    main()
