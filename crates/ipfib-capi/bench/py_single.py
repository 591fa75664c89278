"""Single lookups of the benchmark's addresses in pytricia and py-radix
(PyPI; installed into a scratch venv, never the project's), for
comparison with the C ABI's single lookups (README.md, "Benchmark").

    python py_single.py TABLE.txt.gz ADDRS.bin FAMILY(4|6) N PASSES

TABLE is a `PREFIX/LEN VALUE` text table (the one capi-bench-rust
compiled), ADDRS the file it wrote; the first N addresses are looked up
(as text, converted before timing), PASSES times per library.
"""

import gzip
import ipaddress
import statistics
import sys
import time

import pytricia
import radix


def main() -> None:
    table, addrs, family, n, passes = sys.argv[1:6]
    fam, n, passes = int(family), int(n), int(passes)
    width = 4 if fam == 4 else 16
    raw = open(addrs, "rb").read()[: n * width]
    if fam == 4:
        texts = [
            str(ipaddress.IPv4Address(int.from_bytes(raw[i : i + 4], sys.byteorder)))
            for i in range(0, len(raw), 4)
        ]
    else:
        texts = [str(ipaddress.IPv6Address(raw[i : i + 16])) for i in range(0, len(raw), 16)]
    pt = pytricia.PyTricia(32 if fam == 4 else 128)
    rt = radix.Radix()
    with gzip.open(table, "rt") as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            prefix, value = line.split()[:2]
            pt[prefix] = value
            rt.add(prefix).data["v"] = value
    print(f"{len(pt)} prefixes, {len(texts)} addresses")
    for name, fn in (
        ("pytricia get_key", lambda a: pt.get_key(a)),
        ("py-radix search_best", lambda a: rt.search_best(a)),
    ):
        rates = []
        for _ in range(passes):
            t = time.perf_counter()
            hits = 0
            for a in texts:
                if fn(a) is not None:
                    hits += 1
            rates.append(len(texts) / (time.perf_counter() - t) / 1e6)
        rates.sort()
        print(
            f"{name}: median {statistics.median(rates):.2f} M/s "
            f"[{rates[0]:.2f}-{rates[-1]:.2f}] over {passes} passes ({hits} hits)"
        )


if __name__ == "__main__":
    main()
