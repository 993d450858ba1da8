"""Byte streams under the client: a plain socket (TCP or Unix), or TLS over TCP.

Both give the client the same three calls, safe for one reading thread and any number of
writing threads at once: ``recv`` (``b""`` at the end of the stream), ``sendall``
(serialised, so frames of different threads never interleave) and ``shutdown`` (wakes a
blocked ``recv``).

TLS runs through :class:`ssl.SSLObject` over two :class:`ssl.MemoryBIO` buffers rather
than :class:`ssl.SSLSocket`: an OpenSSL connection object must not be used by two threads
at once, and the client reads (its reader thread) while other threads write. Here every
use of the TLS object is serialised by one short lock that is never held across a socket
call, so a thread blocked in ``recv`` on the socket does not stop a writer.
"""

from __future__ import annotations

import socket
import ssl
import threading
from typing import Optional, Union

_RECV = 256 * 1024


class _Socket:
    """What both transports do with the socket itself."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self._send_lock = threading.Lock()

    def settimeout(self, t: Optional[float]) -> None:
        self._sock.settimeout(t)

    def shutdown(self) -> None:
        try:
            self._sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def close(self) -> None:
        self._sock.close()


class PlainTransport(_Socket):
    """A connected socket, spoken to in plain text."""

    def recv(self) -> bytes:
        return self._sock.recv(_RECV)

    def sendall(self, data: bytes) -> None:
        with self._send_lock:
            self._sock.sendall(data)


class TlsTransport(_Socket):
    """TLS over a connected TCP socket (see the module docs for why not ``SSLSocket``)."""

    def __init__(
        self, sock: socket.socket, ctx: ssl.SSLContext, server_hostname: Optional[str]
    ) -> None:
        super().__init__(sock)
        self._in = ssl.MemoryBIO()
        self._out = ssl.MemoryBIO()
        self._tls = ctx.wrap_bio(self._in, self._out, server_side=False, server_hostname=server_hostname)
        self._tls_lock = threading.Lock()

    def handshake(self) -> None:
        """Runs the TLS handshake (the socket's timeout applies). Raises ``ssl.SSLError``
        on a failed handshake and ``EOFError`` if the peer closes the connection during it."""
        while True:
            try:
                self._tls.do_handshake()
                break
            except ssl.SSLWantReadError:
                self._flush()
                data = self._sock.recv(_RECV)
                if not data:
                    raise EOFError("the connection closed during the TLS handshake") from None
                self._in.write(data)
        self._flush()

    @property
    def version(self) -> Optional[str]:
        return self._tls.version()

    def _flush(self) -> None:
        """Sends what the TLS object has written. Callers hold no TLS lock; the send lock
        keeps the bytes in the order the TLS object produced them."""
        with self._send_lock:
            with self._tls_lock:
                data = self._out.read()
            if data:
                self._sock.sendall(data)

    def sendall(self, data: bytes) -> None:
        with self._send_lock:
            with self._tls_lock:
                self._tls.write(data)
                out = self._out.read()
            self._sock.sendall(out)

    def recv(self) -> bytes:
        while True:
            with self._tls_lock:
                try:
                    data: Optional[bytes] = self._tls.read(_RECV)
                except ssl.SSLWantReadError:
                    data = None
                except ssl.SSLZeroReturnError:
                    data = b""  # close_notify: a clean end of the stream
                pending = self._out.pending
            if pending:
                self._flush()  # e.g. an answer to a TLS 1.3 key update
            if data is not None:
                return data
            raw = self._sock.recv(_RECV)
            if not raw:
                return b""
            with self._tls_lock:
                self._in.write(raw)


#: Either transport.
Transport = Union[PlainTransport, TlsTransport]
