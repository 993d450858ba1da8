"""Python client of the rangelock server (``rangelock serve``), protocol version 3.

>>> import rangelock
>>> with rangelock.Client("127.0.0.1:7878") as client:          # doctest: +SKIP
...     with client.lock(0, 4096, timeout=1.0) as g:
...         write_storage(data, fencing_token=g.token)

Pure Python, standard library only. See ``clients/python/README.md`` for the API, the
errors, the fencing contract, authentication and TLS, and ``docs/PROTOCOL.md`` for the
wire protocol.
"""

from . import protocol
from .client import DEFAULT_ADDRESS, Client, Guard
from .errors import *  # noqa: F401,F403 - the exception hierarchy is part of the API
from .errors import __all__ as _errors_all
from .protocol import GrantMode, Stats, StatsEntry, Counters, Status

__version__ = "0.1.0"

__all__ = [
    "Client",
    "Guard",
    "DEFAULT_ADDRESS",
    "GrantMode",
    "Stats",
    "StatsEntry",
    "Counters",
    "Status",
    "protocol",
    *_errors_all,
]
