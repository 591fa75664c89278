"""The README's commands, run as written: what a newcomer pastes.

Blocks fenced as ```` ```sh runnable ```` or ```` ```python runnable ```` run
here in README order, in one scratch directory laid out like a checkout with
``../shared`` beside it: ``target/release/ipfib`` is the CLI under test and
``B`` names it, as the README's build block sets it (the test does not build
a release binary of its own). Shell blocks run under ``set -euo pipefail``, so
every command must succeed: the README shows an expected failure as
``... || echo "exit $?"``. Python blocks run in a fresh interpreter each.

Every other ``sh`` or ``python`` block must say on its first line why it is
not run (``# Not run by the README test: ...``), so that no block goes
untested without saying so.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from support import DATA, ROOT, cli, data_file

FENCE = re.compile(r"^```(\w+)([^\n]*)\n(.*?)^```\s*$", re.M | re.S)
MARK = "# Not run by the README test"


def blocks() -> list[tuple[int, str, bool, str]]:
    """(line, language, runnable, text) of every sh and python block."""
    text = (ROOT / "README.md").read_text()
    out = []
    for m in FENCE.finditer(text):
        lang, info, body = m.group(1), m.group(2).split(), m.group(3)
        if lang in ("sh", "python"):
            line = text.count("\n", 0, m.start()) + 1
            out.append((line, lang, "runnable" in info, body))
    return out


def test_every_block_is_run_or_says_why_not() -> None:
    found = blocks()
    assert sum(run for _, _, run, _ in found) >= 7, "the README lost its runnable blocks"
    silent = [line for line, _, run, body in found if not run and not body.startswith(MARK)]
    assert not silent, (
        f"README blocks at lines {silent}: mark them runnable or start with '{MARK}: why'"
    )


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    data_file("README.md")  # skips, or fails under CI=true, without ../shared
    base = tmp_path_factory.mktemp("readme")
    (base / "shared").symlink_to(DATA.resolve().parent)
    work = base / "checkout"
    (work / "target" / "release").mkdir(parents=True)
    (work / "target" / "release" / "ipfib").symlink_to(Path(cli()).resolve())
    return work


@pytest.mark.parametrize("index", range(len([b for b in blocks() if b[2]])))
def test_runnable_block(index: int, scratch: Path) -> None:
    line, lang, _, body = [b for b in blocks() if b[2]][index]
    if lang == "sh":
        if "curl " in body and shutil.which("curl") is None:
            pytest.fail(f"README line {line} needs curl, which is not installed")
        # curl as written, but an HTTP error status fails the block too.
        (scratch / ".curlrc").write_text("fail\nsilent\nshow-error\n")
        argv = ["bash", "-c", "set -euo pipefail\n" + body]
        env = dict(os.environ, B="target/release/ipfib", CURL_HOME=str(scratch))
    else:
        argv = [sys.executable, "-c", body]
        env = dict(os.environ)
    # Its own process group, stopped whole afterwards: a block that fails
    # between starting `ipfib collect &` and its `kill` leaves nothing
    # behind. Output goes to files: a leftover background process holding a
    # pipe would keep a reader waiting.
    out, err = scratch / f".block{index}.out", scratch / f".block{index}.err"
    with out.open("w") as o, err.open("w") as e:
        proc = subprocess.Popen(
            argv, cwd=scratch, env=env, stdout=o, stderr=e, text=True, start_new_session=True
        )
        try:
            proc.wait(timeout=900)
        finally:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()
    run = subprocess.CompletedProcess(argv, proc.returncode, out.read_text(), err.read_text())
    assert run.returncode == 0, (
        f"README block at line {line} ({lang}) exited {run.returncode}\n"
        f"--- stdout ---\n{run.stdout[-3000:]}\n--- stderr ---\n{run.stderr[-3000:]}"
    )
