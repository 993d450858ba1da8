"""bench_latency.py runs (a handful of samples: a smoke test, not a measurement)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from conftest import Server

SCRIPT = Path(__file__).resolve().parents[1] / "bench_latency.py"


def test_bench_latency_prints_median_p99_mean(server: Server) -> None:
    out = subprocess.run(
        [sys.executable, str(SCRIPT), server.address, "--n", "50"],
        capture_output=True, text=True, timeout=60, check=True,
    ).stdout
    assert re.search(r"n=50: median [\d.]+ us, p99 [\d.]+ us, mean [\d.]+ us$", out.strip()), out


def test_bench_latency_refuses_a_bad_n() -> None:
    r = subprocess.run([sys.executable, str(SCRIPT), "127.0.0.1:1", "--n", "0"], capture_output=True, text=True)
    assert r.returncode == 2 and "--n must be at least 1" in r.stderr
