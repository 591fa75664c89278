"""ipfib: fast, exact IP longest-prefix match for IPv4 and IPv6.

>>> import ipfib
>>> t = ipfib.Table.from_prefixes([("10.0.0.0/8", 64500), ("2001:db8::/32", 64501)])
>>> t.lookup("10.1.2.3")
64500
>>> t.lookup_many(["10.1.2.3", "192.0.2.1", "2001:db8::1"]).tolist()
[64500, 0, 64501]

See ``Table`` (documented in ``_ipfib.pyi``) for the whole API.
"""

from __future__ import annotations

from typing import Any

from ._ipfib import DamagedTableWarning, Rib, Table, TableFileError, Vrps

__all__ = ["Table", "Rib", "Vrps", "TableFileError", "DamagedTableWarning", "__version__"]

try:
    from importlib.metadata import PackageNotFoundError, version

    __version__ = version("ipfib")
except PackageNotFoundError:  # imported from a source tree, not installed
    __version__ = "0+unknown"

# How many tables this process rebuilt from a pickle (the Dask test checks
# that a table is shipped once per worker, not once per partition).
unpickled = 0


def _unpickle(state: tuple[Any, ...]) -> Table:
    """Rebuild a pickled ``Table`` from its route list (``Table.__reduce__``)."""
    global unpickled
    unpickled += 1
    return Table._from_state(state)
