#!/usr/bin/env python3
"""CPU and threads of `rangelock serve --engine rangelock` while 600 waits sit queued.

Usage: scripts/idle-waiters-cpu.py [BINARY]   (default target/release/rangelock)

One session holds 0..1000 and queues 600 waits on it; the script samples the server's
threads and its CPU time (/proc/PID/stat) over 3 s. Waiting must cost neither a thread
per request nor periodic wake-ups (issue 15, finding 2)."""
import os
import socket
import struct
import subprocess
import sys
import time

binary = sys.argv[1] if len(sys.argv) > 1 else "target/release/rangelock"
p = subprocess.Popen([binary, "serve", "--addr", "127.0.0.1:0", "--engine", "rangelock"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
addr = p.stdout.readline().decode().strip().split("listening on ")[1]
host, port = addr.rsplit(":", 1)
s = socket.create_connection((host, int(port)))
s.sendall(b"RLCK" + struct.pack("<HH", 2, 0)); s.recv(24)
def lock(i, wait):
    body = struct.pack("<BQQQBBI", 1, i, 0, 1000, 0, wait, 0)
    return struct.pack("<I", len(body)) + body
s.sendall(lock(1, 0))
s.sendall(b"".join(lock(i, 2) for i in range(2, 602)))
time.sleep(1.0)
def cpu():
    f = open(f"/proc/{p.pid}/stat").read().split(")")[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")
threads = len(os.listdir(f"/proc/{p.pid}/task"))
c0 = cpu(); t0 = time.time(); time.sleep(3.0); c1 = cpu(); t1 = time.time()
print(f"{binary}: 600 waits queued: {threads} threads, CPU {100*(c1-c0)/(t1-t0):.1f}% of a core while idle")
p.kill()
