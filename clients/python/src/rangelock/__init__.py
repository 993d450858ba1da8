"""Python client of the rangelock server (``rangelock serve``), protocol version 6 (or 5, 4, 3).

>>> import rangelock
>>> with rangelock.Client("127.0.0.1:7878") as client:          # doctest: +SKIP
...     with client.lock(0, 4096, timeout=1.0) as g:
...         write_storage(data, fencing_token=g.token)

``threading.Lock``-style, for one range:

>>> lock = client.range_lock(0, 4096)                           # doctest: +SKIP
>>> if lock.acquire(timeout=1.0):                               # doctest: +SKIP
...     try:
...         write_storage(data, fencing_token=lock.token)
...     finally:
...         lock.release()

The same with asyncio: :class:`rangelock.aio.AsyncClient`. A cluster of nodes (``rangelock
serve --cluster``): :class:`rangelock.ClusterClient` and
:class:`rangelock.aio.AsyncClusterClient`.

Pure Python, standard library only, typed (``py.typed``). See ``clients/python/README.md``
for the API, the errors, the fencing contract, authentication and TLS, and
``docs/PROTOCOL.md`` for the wire protocol.
"""

from typing import Type

from . import protocol
from ._common import DEFAULT_ADDRESS, DEFAULT_PORT
from .client import Client, Guard, Lock
from .cluster import ClusterClient, ClusterGuard, ClusterLock, GuardPiece, LostCause, LostReason
from .errors import *  # noqa: F401,F403 - the exception hierarchy is part of the API
from .errors import RangelockError, deprecated_alias
from .errors import __all__ as _errors_all
from .protocol import Counters, EndReason, GrantMode, Stats, StatsEntry, Status

__version__ = "0.1.0"

__all__ = [
    "Client",
    "Guard",
    "Lock",
    "ClusterClient",
    "ClusterGuard",
    "ClusterLock",
    "GuardPiece",
    "LostCause",
    "LostReason",
    "DEFAULT_ADDRESS",
    "DEFAULT_PORT",
    "EndReason",
    "GrantMode",
    "Stats",
    "StatsEntry",
    "Counters",
    "Status",
    "protocol",
    *_errors_all,
]


def __getattr__(name: str) -> Type[RangelockError]:
    """The deprecated exception names without the ``Error`` suffix (``rangelock.TimedOut``, ...)."""
    return deprecated_alias(name)
