"""IP enrichment on Spark (local mode) and Dask (LocalCluster, worker
processes): ipfib (``ipfib.spark.enrich`` / ``ipfib.dask.enrich``) against
the usual way (a per-row Python function around ``maxminddb`` and around
``pyasn``, each reader opened once per worker process: usual.py), on the
same flows dataset, tables and cluster; and what the table costs in memory
per worker (sampled from /proc while each case runs). bench/cluster/run.sh
builds the inputs and calls this.

    python bench/cluster/bench.py --flows DIR --ipfib RV.ipfib --mmdb RV.mmdb \\
        --ipasn RV.dat [--passes 3] [--cores 2] [--json OUT]

Every case is timed end to end: read the Parquet dataset, add the
``src_asn`` column, force every row. Spark forces with
``write.format("noop")`` (every column of every row is produced, nothing is
written); Dask with a ``map_partitions`` that reduces each enriched
partition to one row (rows, columns, sum of ``src_asn``) and ``compute()``
(every row enriched, nothing big sent back; the sums check that the engines
agree on all rows). One warm-up pass, then ``--passes`` timed passes:
median (min-max). Each case gets a fresh SparkSession / LocalCluster, so
its worker processes start clean and their memory is its own.

While a case runs, a thread samples the workers every 0.3 s (Pss/Rss from
/proc/PID/smaps_rollup; every third sample the table file's mappings from
/proc/PID/smaps), and each timed pass counts CPU seconds: the JVM's or the
driver's, the workers', and what other processes used meanwhile (a pass
that shared the machine with other load is run again, see --max-other).
The ``diag:`` cases say where the time goes; the scaling runs repeat the
ipfib case with 1, 2 and 4 workers.
"""

from __future__ import annotations

import argparse
import functools
import json
import logging
import os
import platform
import re
import statistics
import subprocess
import sys
import threading
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import usual  # noqa: E402

# F.udf over a functools.partial: no type hints to read, and none needed.
warnings.filterwarnings("ignore", "Cannot infer the eval type")

MiB = 1024 * 1024


# ---------------------------------------------------------------- memory


def rollup(pid: int) -> tuple[int, int]:
    """(Pss, Rss) of a process in bytes, from /proc/PID/smaps_rollup."""
    pss = rss = 0
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            if line.startswith("Pss:"):
                pss = int(line.split()[1]) * 1024
            elif line.startswith("Rss:"):
                rss = int(line.split()[1]) * 1024
    return pss, rss


def file_maps(pid: int, name: str) -> tuple[int, int]:
    """(Pss, Rss) in bytes of a process's mappings of files whose name
    contains ``name``, from /proc/PID/smaps (read only when /proc/PID/maps,
    much cheaper, shows such a mapping)."""
    with open(f"/proc/{pid}/maps") as f:
        if name not in f.read():
            return 0, 0
    pss = rss = 0
    with open(f"/proc/{pid}/smaps") as f:
        text = f.read()
    for block in _SMAPS_BLOCK.split(text):
        header, _, body = block.partition("\n")
        # ADDR-ADDR PERMS OFFSET DEV INODE [PATH]
        parts = header.split(None, 5)
        if len(parts) == 6 and name in os.path.basename(parts[5]):
            pss += int(_PSS.search(body).group(1)) * 1024  # type: ignore[union-attr]
            rss += int(_RSS.search(body).group(1)) * 1024  # type: ignore[union-attr]
    return pss, rss


_SMAPS_BLOCK = re.compile(r"\n(?=[0-9a-f]+-[0-9a-f]+ )")
_PSS = re.compile(r"^Pss:\s+(\d+) kB", re.M)
_RSS = re.compile(r"^Rss:\s+(\d+) kB", re.M)


def machine_busy_seconds() -> float:
    """CPU seconds all CPUs spent busy (not idle, not waiting for I/O)."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    return (sum(fields[:8]) - fields[3] - fields[4]) / TICK


TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process so far."""
    with open(f"/proc/{pid}/stat") as f:
        stat = f.read()
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def _proc_table() -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, command line) of every process."""
    out = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                stat = f.read()
            with open(f"/proc/{d}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        ppid = int(stat[stat.rindex(")") + 2 :].split()[1])
        out[int(d)] = (ppid, cmd)
    return out


def spark_workers(jvm_pid: int) -> list[int]:
    """The Python worker processes of the Spark JVM ``jvm_pid``: its
    descendants whose command line runs ``pyspark.daemon`` or
    ``pyspark.worker``, without the daemon itself (it only forks them)."""
    procs = _proc_table()

    def under_jvm(pid: int) -> bool:
        seen = 0
        while pid > 1 and seen < 64:
            if pid == jvm_pid:
                return True
            pid = procs.get(pid, (0, ""))[0]
            seen += 1
        return False

    py = {
        pid
        for pid, (_, cmd) in procs.items()
        if ("pyspark.daemon" in cmd or "pyspark.worker" in cmd) and under_jvm(pid)
    }
    # A worker forked by the daemon has the daemon's command line: the
    # daemon is the one whose parent is not one of them. (Without the
    # daemon, workers run ``-m pyspark.worker`` themselves.)
    return sorted(p for p in py if procs[p][0] in py or "pyspark.daemon" not in procs[p][1])


class Sampler(threading.Thread):
    """Every ``interval`` s, the Pss/Rss of each worker process (from
    smaps_rollup), and every ``every``-th time their mappings of the table
    file (``match``: part of the file's name; from smaps, which costs the
    kernel a page-table walk) and which processes are the workers. From
    ``mark_steady`` (the timed passes) on, also the CPU time of the workers
    and of ``others`` (the JVM, the driver), and of the whole machine, by
    ``snapshot``: what is left is other people's load."""

    def __init__(
        self,
        pids: Callable[[], list[int]],
        match: str | None,
        others: dict[str, int],
        interval: float = 0.3,
        every: int = 3,
    ) -> None:
        super().__init__(daemon=True)
        self.find_pids = pids
        self.match = match
        self.others = others
        self.interval = interval
        self.every = every
        self._stop_event = threading.Event()
        self._pids: list[int] = []
        self.peak_pss: dict[int, int] = {}
        self.peak_rss: dict[int, int] = {}
        self.peak_table_rss: dict[int, int] = {}
        # The table mapping's Pss summed over workers (and with the
        # driver's share), per sample of the timed passes: the steady
        # state. (A peak would catch the moments when a process has
        # mapped the file and the next one not yet, read a few ms apart.)
        self.steady = False
        self.table_pss_workers: list[int] = []
        self.table_pss_all: list[int] = []
        self.samples = 0

    def mark_steady(self) -> None:
        """The timed passes start: the table mapping counts from here."""
        self.steady = True

    def snapshot(self) -> dict[str, Any]:
        """CPU seconds so far: of the machine (all CPUs busy), of each of
        ``others`` and of each worker process."""
        out: dict[str, Any] = {"machine": machine_busy_seconds(), "workers": {}}
        for name, pid in self.others.items():
            out[name] = cpu_seconds(pid)
        for pid in self.find_pids():
            try:
                out["workers"][pid] = cpu_seconds(pid)
            except OSError:
                pass
        return out

    def run(self) -> None:
        while True:
            self.sample()
            if self._stop_event.wait(self.interval):
                break

    def sample(self, full: bool = False) -> None:
        full = full or self.samples % self.every == 0
        if full or not self._pids:
            try:
                self._pids = self.find_pids()
            except Exception:  # the cluster is going away
                return
        table_sum = 0
        for pid in self._pids:
            try:
                pss, rss = rollup(pid)
                tpss, trss = file_maps(pid, self.match) if self.match and full else (0, 0)
            except (OSError, ValueError):
                continue  # gone
            self.peak_pss[pid] = max(self.peak_pss.get(pid, 0), pss)
            self.peak_rss[pid] = max(self.peak_rss.get(pid, 0), rss)
            self.peak_table_rss[pid] = max(self.peak_table_rss.get(pid, 0), trss)
            table_sum += tpss
        if self.match and self.steady and full:
            # This process (the driver) maps the table too: what the
            # machine holds is the workers' and its share together.
            dpss, _ = file_maps(os.getpid(), self.match)
            self.table_pss_workers.append(table_sum)
            self.table_pss_all.append(table_sum + dpss)
        self.samples += 1

    def stop(self) -> dict[str, Any]:
        """Stop sampling (call right after the timed passes)."""
        self._stop_event.set()
        self.join()
        self.sample(full=True)

        def med(xs: list[int]) -> float | None:
            return statistics.median(xs) / MiB if self.match and xs else None

        return {
            "workers": len(self.peak_pss),
            "worker_pids": sorted(self.peak_pss),
            "peak_pss_per_worker_mib": max(self.peak_pss.values(), default=0) / MiB,
            "peak_rss_per_worker_mib": max(self.peak_rss.values(), default=0) / MiB,
            "table_file": self.match,
            "table_rss_per_worker_mib": (
                max(self.peak_table_rss.values(), default=0) / MiB if self.match else None
            ),
            "table_pss_sum_workers_mib": med(self.table_pss_workers),
            "table_pss_sum_all_mib": med(self.table_pss_all),
            "table_pss_sum_workers_max_mib": max(self.table_pss_workers, default=0) / MiB,
            "samples": self.samples,
            "steady_table_samples": len(self.table_pss_workers),
        }


# ---------------------------------------------------------------- timing


def cpu_used(before: dict[str, Any], after: dict[str, Any]) -> dict[str, float]:
    """CPU seconds between two ``Sampler.snapshot``s: the machine's, each
    named process's, the workers' (a worker that appeared in between
    counts whole), and ``other``: the machine's less all of those."""
    out = {k: after[k] - before[k] for k in after if k != "workers"}
    w0, w1 = before["workers"], after["workers"]
    out["workers"] = sum(v - w0.get(pid, 0.0) for pid, v in w1.items())
    out["other"] = out["machine"] - sum(v for k, v in out.items() if k != "machine")
    return out


def timed(run: Callable[[], Any], a: argparse.Namespace, sampler: Sampler) -> dict[str, Any]:
    """One warm-up pass, then ``a.passes`` timed ones. A timed pass during
    which other processes kept the machine busy (``other`` CPU over
    ``a.max_other`` of its capacity) is run again, ``a.retries`` times at
    most (the last try stands, flagged)."""
    t = time.perf_counter()
    result = run()
    warm = time.perf_counter() - t
    sampler.mark_steady()
    capacity = os.cpu_count() or 1
    times, cpus, dropped = [], [], []
    for _ in range(a.passes):
        for attempt in range(a.retries + 1):
            before = sampler.snapshot()
            t = time.perf_counter()
            result = run()
            dt = time.perf_counter() - t
            cpu = cpu_used(before, sampler.snapshot())
            if cpu["other"] <= a.max_other * dt * capacity or attempt == a.retries:
                break
            dropped.append({"s": dt, "other_cpu_s": cpu["other"]})
            print(
                f"    (pass of {dt:.2f} s run again: other processes used "
                f"{cpu['other']:.1f} CPU s meanwhile)",
                flush=True,
            )
        times.append(dt)
        cpus.append(cpu)
    median_cpu = {k: statistics.median(c[k] for c in cpus) for k in cpus[0]}
    return {
        "warmup_s": warm,
        "times_s": times,
        "median_s": statistics.median(times),
        "min_s": min(times),
        "max_s": max(times),
        "cpu_s_per_pass": median_cpu,
        "cpu_s_passes": cpus,
        "passes_run_again": dropped,
        "result": result,
    }


def case_record(name: str, what: str, rows: int, cores: int, t: dict[str, Any]) -> dict[str, Any]:
    rate = rows / t["median_s"]
    return {
        "case": name,
        "what": what,
        "rows": rows,
        "rows_per_s": rate,
        "rows_per_s_per_core": rate / cores,
        "rows_per_s_min": rows / t["max_s"],
        "rows_per_s_max": rows / t["min_s"],
        **{k: v for k, v in t.items() if k != "result"},
    }


# ---------------------------------------------------------------- Spark


def spark_session(master: str, driver_memory: str) -> Any:
    from pyspark.sql import SparkSession

    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    spark = (
        SparkSession.builder.master(master)
        .appName("ipfib-cluster-bench")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.driver.memory", driver_memory)
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    spark.sparkContext.addPyFile(str(HERE / "usual.py"))
    return spark


def spark_case(
    a: argparse.Namespace,
    master: str,
    name: str,
    what: str,
    match: str | None,
    build: Callable[[Any], Callable[[], Any]],
) -> dict[str, Any]:
    """One case in a fresh SparkSession: ``build(spark)`` sets it up and
    returns the pass to time."""
    spark = spark_session(master, a.driver_memory)
    try:
        jvm = int(spark._jvm.java.lang.ProcessHandle.current().pid())
        run = build(spark)
        sampler = Sampler(lambda: spark_workers(jvm), match, {"jvm": jvm, "driver": os.getpid()})
        sampler.start()
        try:
            t = timed(run, a, sampler)
        finally:
            mem = sampler.stop()
        rec = case_record(name, what, a.rows, a.cores, t)
        rec["memory"] = mem
        rec["master"] = master
        rec["conf"] = {
            k: _conf(spark, k)
            for k in (
                "spark.sql.execution.arrow.maxRecordsPerBatch",
                "spark.sql.execution.pythonUDF.arrow.enabled",
                "spark.python.worker.reuse",
            )
        }
        extra = t["result"]
        if isinstance(extra, dict):
            rec.update(extra)
        return rec
    finally:
        spark.stop()


def _conf(spark: Any, key: str) -> str:
    try:
        return str(spark.conf.get(key))
    except Exception:
        return "unset"


def spark_cases(a: argparse.Namespace) -> list[dict[str, Any]]:
    from pyspark.sql import functions as F
    from pyspark.sql.types import LongType

    from ipfib.spark import Counters, enrich, register

    flows = str(a.flows)
    ipfib_name = a.ipfib.name

    def noop(df: Any) -> None:
        df.write.format("noop").mode("overwrite").save()

    def floor(spark: Any) -> Callable[[], Any]:
        return lambda: noop(spark.read.parquet(flows))

    def ipfib_case(
        out: Any, select: bool = False, batch: int | None = None, ship: str = "file"
    ) -> Callable[[Any], Callable[[], Any]]:
        def build(spark: Any) -> Callable[[], Any]:
            if batch is not None:
                spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", str(batch))
            counters = Counters(spark)
            passes = [0]

            def run() -> dict[str, Any]:
                df = spark.read.parquet(flows)
                if select:
                    df = df.select("src_ip")
                noop(enrich(df, str(a.ipfib), "src_ip", out, counters=counters, ship=ship))
                passes[0] += 1
                c = counters.value
                return {
                    "counters": {
                        "rows_per_pass": c["rows"] / passes[0],
                        "nulls_per_pass": c["nulls"] / passes[0],
                        "bad_per_pass": c["bad"] / passes[0],
                        "matched_per_pass": c["matched"] / passes[0],
                        "opened": c["opened"],
                        "open_pids": sorted(c["pids"]),
                    }
                }

            return run

        return build

    def identity_case(spark: Any) -> Callable[[], Any]:
        # Spark's exchange with the Python workers alone: the column
        # function enrich uses (an Arrow UDF on src_ip), answering nulls.
        import pyarrow as pa

        def nothing(arr: Any) -> Any:
            return pa.nulls(len(arr), pa.int64())

        nothing.__annotations__ = {"arr": pa.Array, "return": pa.Array}
        udf = F.arrow_udf(nothing, LongType())

        def run() -> None:
            df = spark.read.parquet(flows)
            noop(df.withColumn("src_asn", udf("src_ip")))

        return run

    def pandas_case(spark: Any) -> Callable[[], Any]:
        # What pyspark before 4.1 gets: the same lookups through a pandas UDF.
        import ipfib.spark

        ipfib.spark.use_arrow_udf = False
        try:
            lookup = register(spark, "ip_asn", str(a.ipfib))
        finally:
            ipfib.spark.use_arrow_udf = True

        def run() -> None:
            df = spark.read.parquet(flows)
            noop(df.withColumn("src_asn", lookup("src_ip")))

        return run

    def udf_case(
        kind: str, path: Path, arrow: bool | None = None
    ) -> Callable[[Any], Callable[[], Any]]:
        def build(spark: Any) -> Callable[[], Any]:
            spark.sparkContext.addFile(str(path))
            fn = usual.mmdb_asn if kind == "mmdb" else usual.pyasn_asn
            lookup = F.udf(functools.partial(fn, "spark:" + path.name), LongType(), useArrow=arrow)

            def run() -> None:
                df = spark.read.parquet(flows)
                noop(df.withColumn("src_asn", lookup("src_ip")))

            return run

        return build

    master = f"local[{a.cores}]"
    cases: list[tuple[str, str, str | None, Callable[[Any], Callable[[], Any]]]] = [
        ("floor", "read + noop write, no lookup", None, floor),
        (
            "ipfib",
            'enrich(df, rv.ipfib, "src_ip", "src_asn")',
            ipfib_name,
            ipfib_case("src_asn"),
        ),
        (
            "ipfib+prefix",
            'enrich(..., {"src_asn": "value", "src_net": "prefix"})',
            ipfib_name,
            ipfib_case({"src_asn": "value", "src_net": "prefix"}),
        ),
        (
            "udf-maxminddb",
            "F.udf: maxminddb reader.get(ip) per row",
            a.mmdb.name,
            udf_case("mmdb", a.mmdb),
        ),
        (
            "udf-pyasn",
            "F.udf: pyasn.lookup(ip)[0] per row",
            a.ipasn.name,
            udf_case("pyasn", a.ipasn),
        ),
    ]
    if a.diagnostics:
        cases += [
            (
                "udf-maxminddb pickled",
                "the same, useArrow=False (rows pickled to the worker)",
                a.mmdb.name,
                udf_case("mmdb", a.mmdb, arrow=False),
            ),
            (
                "diag: Arrow UDF, no lookup",
                "withColumn(arrow_udf answering nulls on src_ip): Spark's Python exchange alone",
                None,
                identity_case,
            ),
            (
                "diag: ipfib src_ip only",
                'select("src_ip") then enrich (1 column through Arrow)',
                ipfib_name,
                ipfib_case("src_asn", select=True),
            ),
            (
                "diag: ipfib batch 100k",
                "enrich with spark.sql.execution.arrow.maxRecordsPerBatch=100000",
                ipfib_name,
                ipfib_case("src_asn", batch=100_000),
            ),
            (
                "diag: ipfib ship=path",
                'enrich(..., ship="path"): the file opened where it is, no addFile copy',
                ipfib_name,
                ipfib_case("src_asn", ship="path"),
            ),
            (
                "diag: ipfib pandas UDF",
                "the same lookups through a pandas UDF (what pyspark < 4.1 gets)",
                ipfib_name,
                pandas_case,
            ),
        ]
    out = []
    for name, what, match, build in cases:
        if a.only and not any(o in name for o in a.only):
            continue
        rec = spark_case(a, master, name, what, match, build)
        print_progress("spark", rec)
        out.append(rec)
    return out


def spark_scaling(a: argparse.Namespace, base: list[dict[str, Any]]) -> list[dict[str, Any]]:
    from ipfib.spark import Counters, enrich

    out = []
    for n in a.scale:
        master = f"local[{n}]"
        same = [r for r in base if r["case"] == "ipfib" and r["master"] == master]
        if same:
            out.append({**same[0], "workers_asked": n, "reused": True})
            continue

        def build(spark: Any) -> Callable[[], Any]:
            counters = Counters(spark)

            def run() -> dict[str, Any]:
                df = spark.read.parquet(str(a.flows))
                enrich(df, str(a.ipfib), "src_ip", "src_asn", counters=counters).write.format(
                    "noop"
                ).mode("overwrite").save()
                c = counters.value
                return {"counters": {"opened": c["opened"], "open_pids": sorted(c["pids"])}}

            return run

        rec = spark_case(a, master, "ipfib", "enrich(...)", a.ipfib.name, build)
        rec["workers_asked"] = n
        print_progress(f"spark {master}", rec)
        out.append(rec)
    return out


# ---------------------------------------------------------------- Dask


def dask_case(
    a: argparse.Namespace,
    n_workers: int,
    name: str,
    what: str,
    match: str | None,
    build: Callable[[Any], Callable[[], Any]],
) -> dict[str, Any]:
    """One case on a fresh LocalCluster of ``n_workers`` worker processes
    (one thread each)."""
    from distributed import Client, LocalCluster

    cluster = LocalCluster(
        n_workers=n_workers,
        threads_per_worker=1,
        processes=True,
        host="127.0.0.1",
        dashboard_address=None,
        # Not the workers' heartbeat errors as the cluster closes (a
        # failing task still raises in compute()).
        silence_logs=logging.CRITICAL,
    )
    client = Client(cluster)
    try:
        client.upload_file(str(HERE / "usual.py"))
        pids = sorted(client.run(os.getpid).values())
        run = build(client)
        sampler = Sampler(lambda: pids, match, {"driver": os.getpid()})
        sampler.start()
        try:
            t = timed(run, a, sampler)
        finally:
            mem = sampler.stop()
        rec = case_record(name, what, a.rows, a.cores, t)
        rec["memory"] = mem
        rec["n_workers"] = n_workers
        rec.update(t["result"])
        # Tables / readers each worker process opened over all passes.
        rec["opened_per_worker"] = sorted(client.run(usual.opened_here).values())
        return rec
    finally:
        client.close()
        cluster.close()


def _force(ddf: Any, column: str) -> dict[str, Any]:
    import pandas as pd

    meta = pd.DataFrame(
        {"rows": pd.Series([], dtype="int64"), "columns": pd.Series([], dtype="int64")}
    ).assign(sum=pd.Series([], dtype="int64"))
    got = ddf.map_partitions(usual.digest, column, meta=meta).compute()
    return {
        "rows_seen": int(got["rows"].sum()),
        "columns_seen": int(got["columns"].max()),
        "partitions": len(got),
        "column_sum": int(got["sum"].sum()),
    }


def dask_cases(a: argparse.Namespace) -> list[dict[str, Any]]:
    import dask.dataframe as dd
    import pandas as pd

    from ipfib.dask import enrich

    flows = str(a.flows)

    def floor(client: Any) -> Callable[[], Any]:
        return lambda: _force(dd.read_parquet(flows), "bytes")

    def ipfib_case(client: Any) -> Callable[[], Any]:
        return lambda: _force(
            enrich(dd.read_parquet(flows), str(a.ipfib), column="src_ip", out="src_asn"),
            "src_asn",
        )

    def rowwise(kind: str, path: Path) -> Callable[[Any], Callable[[], Any]]:
        def build(client: Any) -> Callable[[], Any]:
            def run() -> dict[str, Any]:
                ddf = dd.read_parquet(flows)
                meta = ddf._meta.assign(src_asn=pd.Series([], dtype="Int64"))
                out = ddf.map_partitions(
                    usual.rowwise_partition, kind, str(path), "src_ip", "src_asn", meta=meta
                )
                return _force(out, "src_asn")

            return run

        return build

    cases: list[tuple[str, str, str | None, Callable[[Any], Callable[[], Any]]]] = [
        ("floor", "read_parquet + reduce, no lookup", None, floor),
        (
            "ipfib",
            'enrich(ddf, rv.ipfib, column="src_ip", out="src_asn")',
            a.ipfib.name,
            ipfib_case,
        ),
        (
            "rowwise-maxminddb",
            "map_partitions: Series.map(reader.get) per row",
            a.mmdb.name,
            rowwise("mmdb", a.mmdb),
        ),
        (
            "rowwise-pyasn",
            "map_partitions: Series.map(pyasn.lookup) per row",
            a.ipasn.name,
            rowwise("pyasn", a.ipasn),
        ),
    ]
    out = []
    for name, what, match, build in cases:
        if a.only and not any(o in name for o in a.only):
            continue
        rec = dask_case(a, a.cores, name, what, match, build)
        print_progress("dask", rec)
        out.append(rec)
    return out


def dask_scaling(a: argparse.Namespace, base: list[dict[str, Any]]) -> list[dict[str, Any]]:
    import dask.dataframe as dd

    from ipfib.dask import enrich

    out = []
    for n in a.scale:
        same = [r for r in base if r["case"] == "ipfib" and r["n_workers"] == n]
        if same:
            out.append({**same[0], "workers_asked": n, "reused": True})
            continue

        def build(client: Any) -> Callable[[], Any]:
            return lambda: _force(
                enrich(dd.read_parquet(str(a.flows)), str(a.ipfib), column="src_ip", out="src_asn"),
                "src_asn",
            )

        rec = dask_case(a, n, "ipfib", "enrich(...)", a.ipfib.name, build)
        rec["workers_asked"] = n
        print_progress(f"dask {n} workers", rec)
        out.append(rec)
    return out


# ---------------------------------------------------------------- checks


def agreement(a: argparse.Namespace) -> dict[str, Any]:
    """Answers of ipfib, maxminddb and pyasn for ``a.agree`` random
    ``src_ip`` values of the dataset: counted where all are plain ints."""
    import numpy as np
    import pyarrow.parquet as pq

    import ipfib

    first = sorted(a.flows.glob("*.parquet"))[0]
    col = pq.read_table(first, columns=["src_ip"]).column(0).combine_chunks()
    rng = np.random.default_rng(7)
    idx = rng.choice(len(col), min(a.agree, len(col)), replace=False)
    ips = col.take(idx).to_pylist()
    table = ipfib.Table.from_file(a.ipfib)
    got = table.lookup_many(ips, None, errors="coerce", dtype=object)
    # Values of the table that are not plain ints (pfx2as multi-origin
    # "A_B" or AS sets "A,B" stay text in ipfib).
    non_int_routes = sum(1 for _, v in table.items() if not isinstance(v, int))
    counts = {
        "sampled": len(ips),
        "null_inputs": 0,
        "bad_inputs": 0,
        "all_miss": 0,
        "agree_int": 0,
        "excluded_not_int": 0,
        "disagree": 0,
    }
    examples = []
    import ipaddress

    for ip, v in zip(ips, got.tolist()):
        m = usual.mmdb_asn(str(a.mmdb), ip)
        p = usual.pyasn_asn(str(a.ipasn), ip)
        if ip is None:
            counts["null_inputs"] += 1
            ok = v is None and m is None and p is None
        else:
            try:
                ipaddress.ip_address(ip)
            except ValueError:
                counts["bad_inputs"] += 1
                ok = v is None and m is None and p is None
            else:
                if v is None and m is None and p is None:
                    counts["all_miss"] += 1
                    continue
                if v is not None and not isinstance(v, int):
                    counts["excluded_not_int"] += 1
                    continue
                ok = v == m == p
                if ok:
                    counts["agree_int"] += 1
        if not ok:
            counts["disagree"] += 1
            if len(examples) < 10:
                examples.append({"ip": ip, "ipfib": v, "maxminddb": m, "pyasn": p})
    usual.close_readers()  # the driver keeps no reader (nor its memory)
    return {
        **counts,
        "examples": examples,
        "table_routes": len(table),
        "table_routes_not_int": non_int_routes,
        "integer_values": table.info()["integer_values"],
    }


LOAD_COST = r"""
import json, os, sys, time
sys.path.insert(0, sys.argv[4])
import pyarrow.parquet as pq
from bench import rollup
kind, path, flows = sys.argv[1], sys.argv[2], sys.argv[3]
ips = pq.read_table(flows, columns=["src_ip"]).column(0).combine_chunks()
ips = ips.slice(0, 1_000_000)
py_ips = ips.to_pylist()[:200_000]
import pyarrow, numpy
if kind == "ipfib":
    import ipfib
elif kind == "mmdb":
    import maxminddb
else:
    import pyasn
before = rollup(os.getpid())
t = time.perf_counter()
if kind == "ipfib":
    r = ipfib.Table.from_file(path)
elif kind == "mmdb":
    r = maxminddb.open_database(path)
else:
    r = pyasn.pyasn(path)
load_s = time.perf_counter() - t
loaded = rollup(os.getpid())
if kind == "ipfib":
    r.lookup_many(ips, errors="coerce")
else:
    for ip in py_ips:
        try:
            (r.get if kind == "mmdb" else r.lookup)(ip) if ip else None
        except ValueError:
            pass
used = rollup(os.getpid())
print(json.dumps({"kind": kind, "load_s": load_s, "before": before, "loaded": loaded,
                  "used": used}))
"""


def load_costs(a: argparse.Namespace) -> list[dict[str, Any]]:
    """Per process, what opening each reader costs: Pss/Rss of a fresh
    Python process before, after opening, and after lookups."""
    first = sorted(a.flows.glob("*.parquet"))[0]
    out = []
    for kind, path in (("ipfib", a.ipfib), ("mmdb", a.mmdb), ("pyasn", a.ipasn)):
        got = subprocess.run(
            [sys.executable, "-c", LOAD_COST, kind, str(path), str(first), str(HERE)],
            check=True,
            capture_output=True,
            text=True,
        )
        r = json.loads(got.stdout.strip().splitlines()[-1])
        r["file_mib"] = path.stat().st_size / MiB
        r["pss_load_mib"] = (r["loaded"][0] - r["before"][0]) / MiB
        r["pss_used_mib"] = (r["used"][0] - r["before"][0]) / MiB
        r["rss_used_mib"] = (r["used"][1] - r["before"][1]) / MiB
        out.append(r)
    return out


def pyarrow_profile(a: argparse.Namespace) -> dict[str, Any]:
    """One process, one thread: Parquet read of the whole dataset, and
    ``lookup_many`` over its src_ip column in 10,000-row batches (what
    mapInArrow hands enrich) and whole."""
    import pyarrow.dataset as ds

    import ipfib

    t = time.perf_counter()
    table = ds.dataset(str(a.flows), format="parquet").to_table(use_threads=False)
    read_s = time.perf_counter() - t
    col = table.column("src_ip").combine_chunks()
    ft = ipfib.Table.from_file(a.ipfib)
    ft.lookup_many(col.slice(0, 100_000), errors="coerce")
    t = time.perf_counter()
    ft.lookup_many(col, errors="coerce")
    whole_s = time.perf_counter() - t
    t = time.perf_counter()
    for off in range(0, len(col), 10_000):
        ft.lookup_many(col.slice(off, 10_000), errors="coerce", masked=True)
    batched_s = time.perf_counter() - t
    n = len(col)
    return {
        "rows": n,
        "parquet_read_1_thread_rows_per_s": n / read_s,
        "lookup_many_whole_rows_per_s": n / whole_s,
        "lookup_many_10k_batches_masked_rows_per_s": n / batched_s,
        "dataset_bytes_in_memory_mib": table.nbytes / MiB,
    }


# ---------------------------------------------------------------- report


def print_progress(where: str, r: dict[str, Any]) -> None:
    print(
        f"  [{where}] {r['case']}: {r['median_s']:.2f} s median "
        f"({', '.join(f'{x:.2f}' for x in r['times_s'])}; warm-up {r['warmup_s']:.2f})",
        flush=True,
    )


def fmt_rate(x: float) -> str:
    return f"{x / 1e6:.2f}M" if x >= 1e6 else f"{x / 1e3:.0f}k"


def fmt_mib(x: float | None) -> str:
    return "-" if x is None else f"{x:.1f}"


def print_cases(title: str, rows: list[dict[str, Any]], main: str) -> None:
    print(f"\n== {title}")
    print(
        f"{'case':<24} {'rows/s':>7} {'/core':>7} {'(min-max)':>13} {'median s':>8} "
        f"{'CPU ' + main:>8} {'CPU wkrs':>8} {'other':>5} {'again':>5} "
        f"{'workers':>7} {'Pss/wkr':>7} {'tbl Rss/wkr':>11} {'tbl PssΣ':>8} {'+driver':>7}"
    )
    for r in rows:
        m = r["memory"]
        cpu = r["cpu_s_per_pass"]
        print(
            f"{r['case']:<24} {fmt_rate(r['rows_per_s']):>7} "
            f"{fmt_rate(r['rows_per_s_per_core']):>7} "
            f"{fmt_rate(r['rows_per_s_min']) + '-' + fmt_rate(r['rows_per_s_max']):>13} "
            f"{r['median_s']:>8.2f} {cpu[main]:>8.1f} {cpu['workers']:>8.1f} "
            f"{cpu['other']:>5.1f} {len(r['passes_run_again']):>5} "
            f"{m['workers']:>7} {m['peak_pss_per_worker_mib']:>7.1f} "
            f"{fmt_mib(m['table_rss_per_worker_mib']):>11} "
            f"{fmt_mib(m['table_pss_sum_workers_mib']):>8} "
            f"{fmt_mib(m['table_pss_sum_all_mib']):>7}"
        )
    for r in rows:
        print(f"  {r['case']}: {r['what']}")


def ratios(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    by = {r["case"]: r for r in rows}
    floor = by.get("floor")
    out = []
    for fast in ("ipfib", "ipfib+prefix"):
        for slow in by:
            if fast not in by or not slow.startswith(("udf", "rowwise")):
                continue
            f, s = by[fast]["median_s"], by[slow]["median_s"]
            net = None
            if floor is not None and f > floor["median_s"]:
                net = (s - floor["median_s"]) / (f - floor["median_s"])
            out.append({"ipfib": fast, "baseline": slow, "end_to_end": s / f, "net_of_floor": net})
    return out


def print_ratios(rs: list[dict[str, Any]]) -> None:
    for r in rs:
        net = "-" if r["net_of_floor"] is None else f"{r['net_of_floor']:.1f}x"
        print(
            f"  {r['ipfib']:<13} vs {r['baseline']:<22} {r['end_to_end']:5.1f}x end to end, "
            f"{net} net of the floor"
        )


def print_scaling(title: str, rows: list[dict[str, Any]], file_mib: float) -> None:
    print(f"\n== {title} (ipfib; table file {file_mib:.1f} MiB)")
    print(
        f"{'workers':>7} {'rows/s':>7} {'median s':>8} {'other':>5} {'again':>5} {'procs':>5} "
        f"{'opened':>6} "
        f"{'Pss/wkr':>7} {'tbl Rss/wkr':>11} {'tbl PssΣ':>8} {'+driver':>7}"
    )
    for r in rows:
        m = r["memory"]
        opened = r.get("counters", {}).get("opened")
        if opened is None:
            opened = sum(r.get("opened_per_worker", [])) or "-"
        print(
            f"{r['workers_asked']:>7} {fmt_rate(r['rows_per_s']):>7} {r['median_s']:>8.2f} "
            f"{r['cpu_s_per_pass']['other']:>5.1f} {len(r['passes_run_again']):>5} "
            f"{m['workers']:>5} "
            f"{opened!s:>6} {m['peak_pss_per_worker_mib']:>7.1f} "
            f"{fmt_mib(m['table_rss_per_worker_mib']):>11} "
            f"{fmt_mib(m['table_pss_sum_workers_mib']):>8} "
            f"{fmt_mib(m['table_pss_sum_all_mib']):>7}"
        )


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--flows", type=Path, required=True)
    ap.add_argument("--ipfib", type=Path, required=True, help="compiled table file")
    ap.add_argument("--mmdb", type=Path, required=True, help="the same table as an ASN MMDB")
    ap.add_argument("--ipasn", type=Path, required=True, help="the same table as pyasn .dat")
    ap.add_argument("--passes", type=int, default=3)
    ap.add_argument(
        "--max-other",
        type=float,
        default=0.1,
        help="run a pass again when other processes used more than this share of the "
        "machine's CPU during it (default 0.1)",
    )
    ap.add_argument("--retries", type=int, default=3, help="at most this many times per pass")
    ap.add_argument("--cores", type=int, default=2, help="local[N] and Dask workers")
    ap.add_argument("--scale", type=int, nargs="*", default=[1, 2, 4])
    ap.add_argument("--agree", type=int, default=5000)
    ap.add_argument("--driver-memory", default="4g")
    ap.add_argument("--no-diagnostics", dest="diagnostics", action="store_false")
    ap.add_argument("--only", nargs="*", help="run only cases whose name contains one of these")
    ap.add_argument("--skip", nargs="*", default=[], help="spark, dask, scaling, profile")
    ap.add_argument("--json")
    a = ap.parse_args(argv[1:])

    import pyarrow.parquet as pq

    files = sorted(a.flows.glob("*.parquet"))
    a.rows = sum(pq.ParquetFile(f).metadata.num_rows for f in files)
    started = time.strftime("%Y-%m-%d %H:%M:%S %z")
    import dask
    import maxminddb
    import pyarrow
    import pyspark

    import ipfib

    env = {
        "date": started,
        "host": platform.node(),
        "cpus": os.cpu_count(),
        "loadavg_at_start": os.getloadavg(),
        "python": platform.python_version(),
        "pyspark": pyspark.__version__,
        "dask": dask.__version__,
        "pyarrow": pyarrow.__version__,
        "maxminddb": maxminddb.__version__,
        "pyasn": _version("pyasn"),
        "ipfib": _version("ipfib"),
        "java": _java(),
        "rows": a.rows,
        "files": len(files),
        "dataset_mib": sum(f.stat().st_size for f in files) / MiB,
        "tables_mib": {p.name: p.stat().st_size / MiB for p in (a.ipfib, a.mmdb, a.ipasn)},
        "ipfib_info": {
            k: v
            for k, v in ipfib.Table.from_file(a.ipfib).info().items()
            if k in ("engine_v4", "engine_v6", "prefixes_v4", "prefixes_v6", "integer_values")
        },
        "pinned": False,
    }
    print(f"ipfib cluster benchmark, {started}, {env['cpus']} cpus, load {env['loadavg_at_start']}")
    print(
        f"  {a.rows:,} rows in {len(files)} Parquet files ({env['dataset_mib']:.0f} MiB); "
        f"tables: "
        + ", ".join(f"{k} {v:.1f} MiB" for k, v in env["tables_mib"].items())
        + f"; {env['ipfib_info']}"
    )
    print(
        f"  python {env['python']}, pyspark {env['pyspark']} ({env['java']}), "
        f"dask {env['dask']}, pyarrow {env['pyarrow']}, maxminddb {env['maxminddb']}, "
        f"pyasn {env['pyasn']}, ipfib {env['ipfib']}; not pinned (taskset: none)",
        flush=True,
    )
    result: dict[str, Any] = {"env": env}

    agree = agreement(a)
    result["agreement"] = agree
    print(
        f"\n== agreement on {agree['sampled']} random src_ip values: "
        f"{agree['agree_int']} plain-int answers equal in ipfib, maxminddb and pyasn; "
        f"{agree['all_miss']} no route in all three; {agree['null_inputs']} null and "
        f"{agree['bad_inputs']} bad inputs (all three: none); excluded (not a plain int): "
        f"{agree['excluded_not_int']} (table routes whose value is not an int: "
        f"{agree['table_routes_not_int']} of {agree['table_routes']}); "
        f"disagreements: {agree['disagree']} {agree['examples'] or ''}",
        flush=True,
    )

    if "spark" not in a.skip:
        spark = spark_cases(a)
        result["spark"] = spark
        result["spark_ratios"] = ratios(spark)
        if "scaling" not in a.skip and not a.only:
            result["spark_scaling"] = spark_scaling(a, spark)
    if "dask" not in a.skip:
        dsk = dask_cases(a)
        result["dask"] = dsk
        result["dask_ratios"] = ratios(dsk)
        if "scaling" not in a.skip and not a.only:
            result["dask_scaling"] = dask_scaling(a, dsk)
    if "profile" not in a.skip:
        result["load_cost"] = load_costs(a)
        result["profile"] = pyarrow_profile(a)
    result["loadavg_at_end"] = os.getloadavg()

    # ---- the report
    print(
        f"\n##### results: {a.rows:,} rows, {a.cores} cores, median of {a.passes} passes "
        f"after 1 warm-up (min-max: of the passes); rows/s per core = rows/s / {a.cores}; "
        "memory in MiB, sampled every 0.3 s: peak Pss of a worker process (Pss/wkr), "
        "peak Rss of its mapping of the table file (tbl Rss/wkr), the table mapping's "
        "Pss summed over the workers (tbl PssΣ) and with the driver's share (+driver), "
        "median over the samples of the timed passes; CPU: CPU seconds per timed pass of "
        "the Spark JVM (or the Dask driver: client and scheduler) and of the workers, and "
        "'other': the machine's busy CPU seconds less this benchmark's processes (the "
        "driver, the JVM, the workers): other load; a pass with other > "
        f"{a.max_other:.0%} of the machine is run again (again: how many times), "
        f"{a.retries} times at most"
    )
    if result.get("spark"):
        conf = result["spark"][0]["conf"]
        print_cases(
            f"Spark local[{a.cores}] (driver memory {a.driver_memory}, shuffle partitions 4, "
            f"{', '.join(f'{k}={v}' for k, v in conf.items())})",
            result["spark"],
            "jvm",
        )
        print("  ratios (baseline time / ipfib time):")
        print_ratios(result["spark_ratios"])
        for r in result["spark"]:
            if "counters" in r:
                print(f"  {r['case']} counters: {r['counters']}")
    if result.get("dask"):
        print_cases(
            f"Dask LocalCluster({a.cores} worker processes x 1 thread)",
            result["dask"],
            "driver",
        )
        print("  ratios (baseline time / ipfib time):")
        print_ratios(result["dask_ratios"])
        for r in result["dask"]:
            print(
                f"  {r['case']}: {r['rows_seen']:,} rows, {r['columns_seen']} columns, "
                f"{r['partitions']} partitions, column sum {r['column_sum']}"
            )
    file_mib = a.ipfib.stat().st_size / MiB
    if "spark_scaling" in result:
        print_scaling("Spark local[N] scaling", result["spark_scaling"], file_mib)
    if "dask_scaling" in result:
        print_scaling("Dask N workers scaling", result["dask_scaling"], file_mib)
    if "load_cost" in result:
        print("\n== one reader in a fresh process (MiB; after = after lookups)")
        print(
            f"{'reader':<8} {'file':>7} {'open s':>8} {'Pss +open':>9} {'Pss +after':>10} "
            f"{'Rss +after':>10}"
        )
        for r in result["load_cost"]:
            print(
                f"{r['kind']:<8} {r['file_mib']:>7.1f} {r['load_s']:>8.3f} "
                f"{r['pss_load_mib']:>9.1f} {r['pss_used_mib']:>10.1f} {r['rss_used_mib']:>10.1f}"
            )
        p = result["profile"]
        print(
            f"\n== one process, one thread, {p['rows']:,} rows: Parquet read (all columns) "
            f"{fmt_rate(p['parquet_read_1_thread_rows_per_s'])} rows/s; lookup_many src_ip "
            f"whole column {fmt_rate(p['lookup_many_whole_rows_per_s'])} rows/s, in 10k "
            f"batches (masked) {fmt_rate(p['lookup_many_10k_batches_masked_rows_per_s'])} rows/s"
        )
    print(f"\nload average at start {env['loadavg_at_start']}, at end {result['loadavg_at_end']}")
    if a.json:
        Path(a.json).write_text(json.dumps(result, indent=1, default=str) + "\n")
    return 0


def _version(dist: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return "?"


def _java() -> str:
    try:
        got = subprocess.run(["java", "-version"], capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        return "java ?"
    m = re.search(r'version "([^"]+)"', got.stderr)
    return f"java {m.group(1)}" if m else "java ?"


if __name__ == "__main__":
    sys.exit(main(sys.argv))
