"""`ipfib collect` as a test fixture: started on free loopback ports,
reached over its HTTP API, stopped by its PID (SIGTERM must end it
cleanly, exit 0)."""

from __future__ import annotations

import json
import re
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from support import cli


class Collector:
    """`ipfib collect` on free loopback ports; stopped by its PID (SIGTERM,
    which must end it cleanly, exit 0)."""

    def __init__(self, *extra: str, bmp: str = "127.0.0.1:0") -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="ipfib-collect-"))
        self.log_path = self.dir / "collect.log"
        self._log = open(self.log_path, "wb")  # noqa: SIM115 (closed in stop)
        argv = [cli(), "collect", "--bmp", bmp, "--http", "127.0.0.1:0", *extra]
        self.proc = subprocess.Popen(argv, stdout=self._log, stderr=subprocess.STDOUT)
        self.bmp_port = 0
        self.http = ""
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and self.proc.poll() is None:
            m = re.search(
                r"BMP on 127\.0\.0\.1:(\d+), HTTP on (http://127\.0\.0\.1:\d+)/",
                self.log_path.read_text(errors="replace"),
            )
            if m:
                self.bmp_port, self.http = int(m.group(1)), m.group(2)
                return
            time.sleep(0.05)
        self.stop()
        raise AssertionError(f"ipfib collect did not start:\n{self.log()}")

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")[-4000:]

    def get(self, path: str, **params: str) -> tuple[int, Any]:
        url = self.http + path + ("?" + urllib.parse.urlencode(params) if params else "")
        try:
            with urllib.request.urlopen(url, timeout=10) as r:
                body = r.read()
                status = r.status
        except urllib.error.HTTPError as e:
            body, status = e.read(), e.code
        text = body.decode()
        return status, (json.loads(text) if text.startswith(("{", "[")) else text)

    def routes(self, prefix: str) -> list[dict[str, Any]]:
        status, body = self.get("/api/v1/routes", prefix=prefix)
        assert status == 200, body
        routes: list[dict[str, Any]] = body["routes"]
        return routes

    def metric(self, name: str) -> float:
        _, text = self.get("/metrics")
        m = re.search(rf"^{re.escape(name)} (\S+)$", text, re.M)
        assert m, f"{name} not in /metrics"
        return float(m.group(1))

    def kill(self) -> None:
        """SIGKILL by PID: no shutdown, no last snapshot."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=10)

    def stop(self) -> int | None:
        """SIGTERM by PID, bounded wait (then SIGKILL); the exit code."""
        code = None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                code = self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)
        else:
            code = self.proc.returncode
        self._log.close()
        return code


def running(*extra: str) -> Iterator[Collector]:
    """A collector for a `with`/fixture body; asserts the clean exit."""
    c = Collector(*extra)
    try:
        yield c
    finally:
        code = c.stop()
        shutil.rmtree(c.dir, ignore_errors=True)
        assert code == 0, f"collect exited {code} on SIGTERM:\n{c.log()}"
