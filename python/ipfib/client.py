"""A client for ``ipfib collect``'s bulk lookups (``POST /api/v1/lookup``).

>>> from ipfib.client import lookup_many                      # doctest: +SKIP
>>> for answer in lookup_many("http://127.0.0.1:8080", ["192.0.2.1", "2001:db8::1"]):
...     print(answer["ip"], answer.get("origin_asn"), answer.get("error"))

Answers come back in the order asked, one dict per address: the route the
single ``GET /api/v1/lookup`` would answer, or ``{"ip", "error"}`` (``"no
route"``, ``"bad address"``, a bad ``peer``). The addresses are sent as a
JSON array, ``BATCH`` at a time (each request stays well under the
collector's 64 MiB body limit), and the answers are read as they stream in.
Only the standard library is used.
"""

from __future__ import annotations

import json
import urllib.parse
import urllib.request
from collections.abc import Iterable, Iterator
from itertools import islice
from typing import Any

#: Addresses per request: a JSON array of this many IPv6 addresses with
#: per-address options is a few tens of MiB at most.
BATCH = 200_000


def lookup_many(
    url: str,
    addrs: Iterable[str | dict[str, Any]],
    *,
    token: str | None = None,
    instance: str | None = None,
    rib: str | None = None,
    peer: str | int | None = None,
    nexthop: str | None = None,
    timeout: float = 60.0,
    batch: int = BATCH,
) -> Iterator[dict[str, Any]]:
    """Look up ``addrs`` (address strings, or dicts ``{"ip", "peer",
    "nexthop"}`` narrowing one address) against the collector at ``url``
    (``http://HOST:PORT``). ``instance``, ``rib``, ``peer`` and ``nexthop``
    apply to every address, as the GET parameters do; ``token`` is the
    collector's ``--http-token``. Raises ``urllib.error.HTTPError`` on a
    refused request (400, 401, 413, 503) and ``ValueError`` when an answer
    stream ends early."""
    if batch < 1:
        raise ValueError("batch must be at least 1")
    params = {
        k: str(v)
        for k, v in (("instance", instance), ("rib", rib), ("peer", peer), ("nexthop", nexthop))
        if v is not None
    }
    target = url.rstrip("/") + "/api/v1/lookup"
    if params:
        target += "?" + urllib.parse.urlencode(params)
    headers = {"Content-Type": "application/json"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    it = iter(addrs)
    while True:
        chunk = list(islice(it, batch))
        if not chunk:
            return
        body = json.dumps(chunk).encode()
        req = urllib.request.Request(target, data=body, headers=headers, method="POST")
        got = 0
        with urllib.request.urlopen(req, timeout=timeout) as r:
            for line in r:
                if line.strip():
                    got += 1
                    yield json.loads(line)
        if got != len(chunk):
            raise ValueError(f"{len(chunk)} addresses sent, {got} answers received")
