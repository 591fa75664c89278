"""The Dask example (python/examples/dask_enrich.py) on a Parquet dataset:
results equal direct lookups, and each worker unpickled the table once."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import ipfib
from ipfib.dask import enrich
from support import ROOT, random_routes

dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("dask.distributed")
pd = pytest.importorskip("pandas")
pytest.importorskip("pyarrow")


def run_example(*args: str) -> None:
    """python/examples/dask_enrich.py as a user runs it."""
    script = ROOT / "python" / "examples" / "dask_enrich.py"
    run = subprocess.run(
        [sys.executable, str(script), *args], capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, run.stderr[-3000:]


def test_dask_enriches_parquet(tmp_path: Path) -> None:
    table = ipfib.Table.from_prefixes(random_routes(31, 3000, 1000))
    rng = np.random.default_rng(7)
    n = 40_000
    v4 = [
        f"{a >> 24}.{a >> 16 & 255}.{a >> 8 & 255}.{a & 255}"
        for a in rng.integers(0, 2**32, n // 2).tolist()
    ]
    v6 = [
        f"2{rng.integers(0, 16)}{rng.integers(0, 16)}{rng.integers(0, 16)}::{i:x}"
        for i in range(n // 2)
    ]
    src = v4 + v6
    src[3] = "not-an-address"
    flows = pd.DataFrame({"src": src, "bytes": rng.integers(0, 1500, n)})
    dd.from_pandas(flows, npartitions=8).to_parquet(tmp_path / "in")

    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    )
    with cluster, distributed.Client(cluster) as client:
        before = client.run(lambda: ipfib.unpickled)
        out = enrich(dd.read_parquet(tmp_path / "in"), table, client)
        out.to_parquet(tmp_path / "out")
        after = client.run(lambda: ipfib.unpickled)
    shipped = {w: after[w] - before[w] for w in after}
    assert len(shipped) == 2 and all(v == 1 for v in shipped.values()), shipped

    got = pd.read_parquet(tmp_path / "out").sort_values("bytes", kind="stable")
    result = dd.read_parquet(tmp_path / "out").compute()
    assert len(result) == n
    want = table.lookup_many(result["src"], errors="coerce")
    assert (result["asn"].to_numpy() == want).all()
    assert result.loc[result["src"] == "not-an-address", "asn"].tolist() == [0]
    assert got["asn"].dtype == np.int64
    assert (want != 0).sum() > n // 10, "the test data must match often"


def test_the_example_script(tmp_path: Path) -> None:
    table = tmp_path / "table.txt"
    table.write_text("10.0.0.0/8 64500\n2001:db8::/32 64501\n")
    flows = pd.DataFrame({"src": ["10.1.2.3", "192.0.2.1", "2001:db8::7", "bad"]})
    flows.to_parquet(tmp_path / "in.parquet")
    run_example(str(table), str(tmp_path / "in.parquet"), str(tmp_path / "out"))
    got = dd.read_parquet(tmp_path / "out").compute()
    assert got["asn"].tolist() == [64500, 0, 64501, 0]
