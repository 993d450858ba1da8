#!/usr/bin/env python3
"""Single-client lock+unlock latency of the Python client, uncontended, one range.

    python3 bench_latency.py 127.0.0.1:7878 [--n 20000] [--token T] [--tls CA.pem]

Each sample is one ``client.lock(0, 4096)`` (exclusive, wait forever) plus its
``guard.unlock()``: two round trips, each waiting for the server's answer. Prints the
median, p99 and mean in microseconds. Start the server yourself (a release build for
numbers worth comparing: ``cargo build --release -p rangelock-cli``), e.g.
``target/release/rangelock serve --addr 127.0.0.1:7878``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "src"))

import rangelock  # noqa: E402 - from this source tree unless installed


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("address", help="host:port or unix:/path")
    ap.add_argument("--n", type=int, default=20000, help="samples (default 20000)")
    ap.add_argument("--warmup", type=int, default=None, help="unmeasured rounds first (default n/10)")
    ap.add_argument("--token", default=None, help="authentication token")
    ap.add_argument("--tls", default=None, metavar="CA_PEM", help="use TLS, trusting this CA file")
    args = ap.parse_args()
    if args.n < 1:
        ap.error("--n must be at least 1")
    warmup = args.n // 10 if args.warmup is None else args.warmup
    with rangelock.Client(args.address, token=args.token, tls=args.tls) as client:
        for _ in range(warmup):
            client.lock(0, 4096).unlock()
        samples = []
        clock = time.perf_counter_ns
        for _ in range(args.n):
            t0 = clock()
            g = client.lock(0, 4096)
            g.unlock()
            samples.append(clock() - t0)
    samples.sort()
    us = [s / 1000 for s in samples]
    p99 = us[min(len(us) - 1, int(len(us) * 0.99))]
    print(
        f"python client lock+unlock, {args.address}, grant {client.grant_mode}, n={args.n}: "
        f"median {statistics.median(us):.1f} us, p99 {p99:.1f} us, mean {statistics.fmean(us):.1f} us"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
