"""Route origin validation (RFC 6811) in plain Python, the baseline of
BENCHMARKS.md's "RPKI" rows: VRPs in a dict by (family, network, length),
each route checked at every length up to its own.

    python3 plain_rov.py VRPS.json ROUTES.txt    (ROUTES: "PREFIX ASN" lines)

Prints the per-state counts and routes per second (validation only)."""

from __future__ import annotations

import collections
import ipaddress
import json
import sys
import time


def main() -> None:
    doc = json.load(open(sys.argv[1]))
    vrps: dict[tuple[int, int, int], list[tuple[int, int]]] = collections.defaultdict(list)
    for r in doc["roas"]:
        n = ipaddress.ip_network(r["prefix"])
        asn = int(str(r["asn"]).removeprefix("AS"))
        vrps[(n.version, int(n.network_address), n.prefixlen)].append((asn, r["maxLength"]))
    routes = []
    for line in open(sys.argv[2]):
        p, a = line.split()
        n = ipaddress.ip_network(p)
        routes.append((n.version, int(n.network_address), n.prefixlen, n.max_prefixlen, int(a)))
    t = time.perf_counter()
    counts: collections.Counter[str] = collections.Counter()
    for version, addr, length, width, asn in routes:
        covered = match = False
        state = None
        for ln in range(length + 1):
            net = addr >> (width - ln) << (width - ln) if ln else 0
            for v_asn, max_len in vrps.get((version, net, ln), ()):
                covered = True
                if v_asn == asn and asn != 0:
                    match = True
                    if length <= max_len:
                        state = "valid"
                        break
            if state:
                break
        if not state:
            state = "not-found" if not covered else ("invalid-length" if match else "invalid-as")
        counts[state] += 1
    took = time.perf_counter() - t
    print(dict(counts))
    print(f"plain Python: {len(routes)} routes in {took:.2f} s = {len(routes) / took / 1e6:.3f} M routes/s")


main()
