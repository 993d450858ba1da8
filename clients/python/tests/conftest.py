"""Fixtures: the real ``rangelock`` server binary, started per test and stopped after it.

The binary is ``$RANGELOCK_BIN`` if set, else ``<repo>/target/debug/rangelock`` (or
``$CARGO_TARGET_DIR/debug/rangelock``). Nothing is built here: run
``cargo build -p rangelock-cli`` first (``ci/python.sh`` does).
"""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Iterator, List, Optional, TypeVar

import pytest

import rangelock

REPO = Path(__file__).resolve().parents[3]
STARTUP_TIMEOUT = 30.0


def server_binary() -> Path:
    env = os.environ.get("RANGELOCK_BIN")
    if env:
        return Path(env)
    target = os.environ.get("CARGO_TARGET_DIR")
    base = Path(target) if target else REPO / "target"
    if not base.is_absolute():
        base = Path.cwd() / base
    return base / "debug" / "rangelock"


class Server:
    """A running ``rangelock serve`` process."""

    def __init__(self, args: List[str], log_dir: Path, unix: Optional[str] = None, tcp: bool = True):
        binary = server_binary()
        if not binary.exists():
            pytest.fail(
                f"server binary {binary} not found: run `cargo build -p rangelock-cli` "
                "(or set RANGELOCK_BIN)",
                pytrace=False,
            )
        cmd = [str(binary), "serve"]
        if tcp:
            cmd += ["--addr", "127.0.0.1:0"]
        if unix is not None:
            cmd += ["--unix", unix]
        cmd += args
        self.cmd = cmd
        self.stderr_path = log_dir / f"server-{time.monotonic_ns()}.stderr"
        self._stderr = open(self.stderr_path, "wb")
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=self._stderr)
        #: The TCP address (``None`` for a server on a Unix socket only).
        self.tcp: Optional[str] = None
        self.unix: Optional[str] = None
        expected = int(tcp) + int(unix is not None)
        lines = self._read_lines(expected)
        for line in lines:
            rest = line.split("listening on ", 1)[1]
            if rest.startswith("unix:"):
                self.unix = rest
            else:
                self.tcp = rest.split()[0]

    @property
    def address(self) -> str:
        """The TCP address (the test fails on a server without one)."""
        if self.tcp is None:
            pytest.fail("the server listens on no TCP address")
        return self.tcp

    def _read_lines(self, count: int) -> List[str]:
        """Reads ``count`` ``listening on`` lines from the server's stdout."""
        out = self.proc.stdout
        assert out is not None
        lines: List[str] = []
        sel = selectors.DefaultSelector()
        sel.register(out, selectors.EVENT_READ)
        deadline = time.monotonic() + STARTUP_TIMEOUT
        buf = b""
        try:
            while len(lines) < count:
                left = deadline - time.monotonic()
                if left <= 0 or not sel.select(left):
                    self._startup_failed(f"no 'listening on' line within {STARTUP_TIMEOUT} s")
                chunk = os.read(out.fileno(), 4096)
                if not chunk:
                    self._startup_failed("the server exited before listening")
                buf += chunk
                while b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
                    text = line.decode()
                    if text.startswith("listening on "):
                        lines.append(text)
        finally:
            sel.close()
        return lines

    def _startup_failed(self, why: str) -> None:
        self.kill()
        pytest.fail(f"{' '.join(self.cmd)}: {why}\nstderr:\n{self.stderr()}", pytrace=False)

    def stderr(self) -> str:
        self._stderr.flush()
        return self.stderr_path.read_text(errors="replace")[-4000:]

    def stop(self) -> int:
        """SIGTERM, wait; returns the exit code."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._close_files()
        return self.proc.returncode

    def kill(self) -> None:
        """SIGKILL, wait: the server dies without closing anything itself."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self._close_files()

    def _close_files(self) -> None:
        if self.proc.stdout is not None and not self.proc.stdout.closed:
            self.proc.stdout.close()
        if not self._stderr.closed:
            self._stderr.close()


#: The ``start_server`` fixture: ``start_server(*flags, unix=None, tcp=True)``.
StartServer = Callable[..., Server]

#: The ``connect`` fixture: ``connect(address, **kwargs)``, a client.
Connect = Callable[..., Any]


@pytest.fixture
def start_server(tmp_path: Path) -> Iterator[StartServer]:
    """``start_server(*flags, unix=None, tcp=True)`` starts a server; every server is
    stopped (SIGTERM) after the test, and must exit cleanly."""
    servers: List[Server] = []

    def start(*args: str, unix: Optional[str] = None, tcp: bool = True) -> Server:
        s = Server(list(args), tmp_path, unix=unix, tcp=tcp)
        servers.append(s)
        return s

    yield start
    unclean = []
    for s in servers:
        killed = s.proc.poll() is not None and s.proc.returncode == -signal.SIGKILL
        code = s.stop()
        if code != 0 and not killed:
            unclean.append(f"{' '.join(s.cmd)} exited {code}\n{s.stderr()}")
    if unclean:
        pytest.fail("server did not stop cleanly:\n" + "\n".join(unclean), pytrace=False)


@pytest.fixture(params=["blocking", "asyncio"])
def connect(request: pytest.FixtureRequest) -> Connect:
    """``connect(address, **kwargs)``: a :class:`rangelock.Client`, or (the ``asyncio``
    run of the test) a :class:`rangelock.aio.AsyncClient` behind the same interface
    (``tests/bridge.py``). Behaviour tests take this fixture to run against both."""
    if request.param == "blocking":
        return rangelock.Client
    from bridge import BridgedClient, stop_all

    request.addfinalizer(stop_all)
    return BridgedClient


@pytest.fixture
def server(start_server: StartServer) -> Server:
    """A default server (push grants, 10 s lease) on 127.0.0.1, a free port."""
    return start_server()


_HELP: Optional[str] = None


def serve_help() -> str:
    global _HELP
    if _HELP is None:
        binary = server_binary()
        if not binary.exists():
            return ""
        _HELP = subprocess.run(
            [str(binary), "serve", "--help"], capture_output=True, text=True, timeout=30
        ).stdout
    return _HELP


def require_flag(flag: str) -> None:
    """Fails the test, loudly, when the server binary has no ``flag`` (a stale binary:
    rebuild it with ``cargo build -p rangelock-cli``)."""
    if flag not in serve_help():
        pytest.fail(
            f"the server binary {server_binary()} has no `serve {flag}` flag: "
            f"it is stale; rebuild it with `cargo build -p rangelock-cli`"
        )


T = TypeVar("T")


def wait_until(predicate: Callable[[], T], timeout: float = 10.0, what: str = "condition") -> T:
    """Polls ``predicate`` until it returns a true value (returned) or ``timeout`` passes
    (the test fails). For conditions only the server can show (a lock queued, a session
    ended), not as a sleep."""
    deadline = time.monotonic() + timeout
    while True:
        v = predicate()
        if v:
            return v
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.005)


class BlockedLock:
    """``client.lock(start, end)`` in a thread of its own, which the test lets block and
    then ends from outside (a close, a server stop); ``result()`` is what it raised."""

    def __init__(self, client: Any, start: int, end: int) -> None:
        import threading

        self._done = threading.Event()
        self._error: Optional[BaseException] = None

        def run() -> None:
            try:
                client.lock(start, end)
            except BaseException as e:  # noqa: BLE001
                self._error = e
            self._done.set()

        self._thread = threading.Thread(target=run)
        self._thread.start()

    def result(self, timeout: float = 10.0) -> Optional[BaseException]:
        """Waits for the call to end (the test fails after ``timeout``); its exception."""
        assert self._done.wait(timeout), "the blocked lock call did not end"
        self._thread.join()
        return self._error

