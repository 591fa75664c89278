#!/usr/bin/env python3
"""Markdown tables of the bench suite (docs/benchmark-history.md, "Bench
suite: every table of the sweep"; charts in BENCHMARKS.md), from
the JSON that bench/sweep.sh writes. Usage: python3 bench/suite_tables.py
[bench-out/suite]. Figures: MLPS median [min-max] (IQR)."""
import json
import sys
from pathlib import Path


def fmt(r):
    return f"{r['mlps_median']:.1f} [{r['mlps_min']:.1f}-{r['mlps_max']:.1f}] ({r['mlps_iqr']:.1f})"


def load(out, name):
    p = out / f"{name}.json"
    return json.loads(p.read_text()) if p.exists() else None


def name(r):
    return r["engine"]


def best(rows):
    return max(rows, key=lambda r: r["mlps_median"])


def table(header, lines):
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for l in lines:
        print("| " + " | ".join(str(x) for x in l) + " |")
    print()


def suite(rep):
    rows = rep["results"]
    for fam in (4, 6):
        fr = [r for r in rows if r["family"] == fam]
        if not fr:
            continue
        traces = list(dict.fromkeys(r["trace"] for r in fr))
        engines = list(dict.fromkeys(name(r) for r in fr))
        print(f"**IPv{fam}, synthetic {fr[0]['prefixes']:,} prefixes**: best batch per engine, "
              "MLPS median [min-max] (IQR), batch\n")
        lines = []
        for e in engines:
            er = [r for r in fr if name(r) == e]
            cells = []
            for t in traces:
                tr = [r for r in er if r["trace"] == t]
                b = best(tr)
                cells.append(f"{fmt(b)} b{b['batch']}")
            a = er[0]
            rss = a["rss_delta_bytes"]
            lines.append([e, *cells, f"{a['build_ms']:.1f}", f"{a['bytes_per_prefix']:.1f}",
                          "-" if rss is None else f"{rss / 2**20:.1f}"])
        table(["engine", *traces, "build ms", "B/prefix", "RSS delta MiB"], lines)
    lat = rep.get("latency", [])
    if lat:
        hz = rep["machine"].get("tsc_hz")
        print(f"**Single-lookup latency**, TSC ticks (1 tick = {1e9 / hz:.3f} ns; "
              f"empty measurement {lat[0]['overhead_ticks']:.0f} ticks, included)\n")
        table(["IPv", "trace", "engine", "mean", "p50", "p75", "p95", "p99", "mean ns"],
              [[l["family"], l["trace"], l["engine"], f"{l['ticks_mean']:.0f}", f"{l['ticks_p50']:.0f}",
                f"{l['ticks_p75']:.0f}", f"{l['ticks_p95']:.0f}", f"{l['ticks_p99']:.0f}",
                f"{l['ns_mean']:.1f}"] for l in lat])


def sweep(rep, key, label):
    rows = rep["results"]
    for fam in (4, 6):
        fr = [r for r in rows if r["family"] == fam]
        if not fr:
            continue
        xs = sorted(set(r[key] for r in fr))
        for t in dict.fromkeys(r["trace"] for r in fr):
            tr = [r for r in fr if r["trace"] == t]
            print(f"**IPv{fam}, {t}** ({label}; best batch where not the axis)\n")
            lines = []
            for e in dict.fromkeys(name(r) for r in tr):
                cells = []
                for x in xs:
                    pts = [r for r in tr if name(r) == e and r[key] == x]
                    cells.append(fmt(best(pts)) if pts else "-")
                lines.append([e, *cells])
            table(["engine", *[f"{x:,}" for x in xs]], lines)


def fib_memory(rep):
    rows = [r for r in rep["results"] if r["trace"] == rep["results"][0]["trace"]]
    sizes = sorted(set(r["prefixes"] for r in rows))
    print("**Build ms / bytes per prefix / RSS delta MiB** per table size\n")
    lines = []
    for e in dict.fromkeys(name(r) for r in rows):
        cells = []
        for n in sizes:
            r = next((r for r in rows if name(r) == e and r["prefixes"] == n), None)
            rss = r and r["rss_delta_bytes"]
            cells.append("-" if r is None else
                         f"{r['build_ms']:.1f} / {r['bytes_per_prefix']:.1f} / "
                         + ("-" if rss is None else f"{rss / 2**20:.1f}"))
        lines.append([e, *cells])
    table(["engine", *[f"{n:,}" for n in sizes]], lines)


def main():
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "bench-out/suite")
    if (rep := load(out, "suite")):
        print("### Engines x traces\n")
        suite(rep)
    if (rep := load(out, "batch")):
        print("### Batch size\n")
        sweep(rep, "batch", "MLPS median [min-max] (IQR) per batch size")
    if (rep := load(out, "fib-size")):
        print("### Table size (synthetic IPv6)\n")
        sweep(rep, "prefixes", "MLPS median [min-max] (IQR) per number of prefixes")
        fib_memory(rep)
    if (rep := load(out, "threads")):
        print("### Threads\n")
        sweep(rep, "threads", "aggregate MLPS median [min-max] (IQR) per thread count")


if __name__ == "__main__":
    main()
