#!/usr/bin/env python3
"""measure.py N CMD... - runs CMD N times; prints "median_seconds peak_rss_kib
exit_status": wall time from a monotonic clock, peak resident memory of the
command as GNU time reports it (wait4 in a Python parent would report the
parent's size inherited across fork), the exit status of the last run."""
import os
import subprocess
import sys
import tempfile
import time


def main():
    n = int(sys.argv[1])
    cmd = sys.argv[2:]
    times, peak, rc = [], 0, 0
    with tempfile.NamedTemporaryFile(mode="r") as out:
        for _ in range(n):
            t0 = time.perf_counter()
            p = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", out.name] + cmd,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            times.append(time.perf_counter() - t0)
            rc = p.returncode
            out.seek(0)
            lines = [l for l in out.read().split() if l.isdigit()]
            if lines:
                peak = max(peak, int(lines[-1]))
    times.sort()
    print("%.4f %d %d" % (times[len(times) // 2], peak, rc))


if __name__ == "__main__":
    main()
