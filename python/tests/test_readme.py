"""The README's commands, run as written: what a newcomer pastes.

Blocks fenced as ```` ```sh runnable ```` or ```` ```python runnable ```` run
here in README order, in one scratch directory laid out like a checkout with
``../shared`` beside it: ``target/release/ipfib`` is the CLI under test and
``B`` names it, as the README's build block sets it (the test does not build
a release binary of its own). Shell blocks run under ``set -euo pipefail``, so
every command must succeed, and curl fails on an HTTP error status. The
README shows an expected failure as ``... || echo "exit $?"``; each is a
damaged input's exit 1, and the test holds every printed status to that.
Python blocks run in a fresh interpreter each. Blocks may use files earlier
ones wrote (``rv2.ipfib``), so they run in README order; a test's id is its
block's README line.

Every other ``sh`` or ``python`` block must say on its first line why it is
not run (``# Not run by the README test: ...``), so that no block goes
untested without saying so; a fence of any other language must be one the
test knows it does not run.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from support import ROOT, cli, data_file

FENCE = re.compile(r"^```(\w*)([^\n]*)\n(.*?)^```\s*$", re.M | re.S)
MARK = "# Not run by the README test"
SHELL = ("sh", "bash", "shell", "console")
# Fences of other languages, read and not run (Rust blocks show APIs the
# crates' doc tests cover).
OTHER = ("rust", "c", "toml", "text", "json", "xml")
EXPECTED_FAILURE = '|| echo "exit $?"'


def blocks() -> list[tuple[int, str, bool, str]]:
    """(line, language, runnable, text) of every fenced block."""
    text = (ROOT / "README.md").read_text()
    out = []
    for m in FENCE.finditer(text):
        lang, info, body = m.group(1), m.group(2).split(), m.group(3)
        line = text.count("\n", 0, m.start()) + 1
        out.append((line, lang, "runnable" in info, body))
    return out


def runnable() -> list[tuple[int, str, bool, str]]:
    return [b for b in blocks() if b[2]]


def test_every_block_is_run_or_says_why_not() -> None:
    found = blocks()
    # Seven blocks run today; fewer means some lost their mark.
    assert len(runnable()) >= 7, "the README lost its runnable blocks"
    known = SHELL + ("python",) + OTHER
    unknown = [(line, lang) for line, lang, _, _ in found if lang not in known]
    assert not unknown, (
        f"README blocks of a language the test does not know (line, language): {unknown}"
    )
    silent = [
        line
        for line, lang, run, body in found
        if lang in SHELL + ("python",) and not run and not body.startswith(MARK)
    ]
    assert not silent, (
        f"README blocks at lines {silent}: mark them runnable or start with '{MARK}: why'"
    )
    odd = [line for line, lang, run, _ in found if run and lang not in ("sh", "python")]
    assert not odd, f"runnable README blocks at lines {odd} must be sh or python"


def port_free(port: int) -> bool:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    data = data_file("README.md")  # skips, or fails under CI=true, without ../shared
    base = tmp_path_factory.mktemp("readme")
    (base / "shared").symlink_to(data.resolve().parent.parent)
    work = base / "checkout"
    (work / "target" / "release").mkdir(parents=True)
    (work / "target" / "release" / "ipfib").symlink_to(Path(cli()).resolve())
    return work


@pytest.mark.parametrize("index", range(len(runnable())), ids=[f"line{b[0]}" for b in runnable()])
def test_runnable_block(index: int, scratch: Path) -> None:
    line, lang, _, body = runnable()[index]
    for port in sorted({int(p) for p in re.findall(r"127\.0\.0\.1:(\d+)", body)}):
        assert port_free(port), (
            f"README line {line} needs 127.0.0.1:{port}, which another process holds"
        )
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
    out, err = scratch / f".block{line}.out", scratch / f".block{line}.err"
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
    stdout, stderr = out.read_text(), err.read_text()
    assert proc.returncode == 0, (
        f"README block at line {line} ({lang}) exited {proc.returncode}\n"
        f"--- stdout ---\n{stdout[-3000:]}\n--- stderr ---\n{stderr[-3000:]}"
    )
    # Every expected failure printed its status, and it was 1.
    got = [int(x) for x in re.findall(r"^exit (\d+)$", stdout, re.M)]
    assert got == [1] * body.count(EXPECTED_FAILURE), (
        f"README block at line {line}: exit statuses {got} where the README shows "
        f"{body.count(EXPECTED_FAILURE)} damaged inputs (exit 1)"
    )
