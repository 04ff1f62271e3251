#!/usr/bin/env python3
"""measure.py [--drop] [--pre SHELL] [--stdout F] [--stderr F] [--input S] N CMD...

Runs CMD N times; prints "median_seconds peak_rss_kib exit_status": wall time
from a monotonic clock, peak resident memory of the command as GNU time
reports it (wait4 in a Python parent would report the parent's size inherited
across fork), the exit status of the last run.  Then "cpu=SECONDS" and
"user=SECONDS": the medians of the runs' CPU time (user + system) and of
its user part, as GNU time reports them; they tell work from waiting for
the disk, and rfsck's own work from the kernel's.

  --drop        before each run: sync and `echo 3 > /proc/sys/vm/drop_caches`
                (cold page cache; needs root; if that fails the run is hot
                and "hot" is printed as a 4th field)
  --pre SHELL   shell command run before each run, not timed (e.g. rm -f DB)
  --stdout F    keep the last run's stdout in F (else discarded)
  --stderr F    keep the last run's stderr in F (else discarded)
  --stderr-ts F keep the last run's stderr in F as JSON lines [seconds since
                start, text chunk] (progress lines with their arrival time)
  --input S     feed S to the command's stdin (e.g. "Yes\\n")
  --all         also print every run's time as the last field
"""
import json
import os
import subprocess
import sys
import tempfile
import threading
import time


def drop_caches():
    try:
        os.sync()
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        return True
    except OSError:
        return False


def main():
    args = sys.argv[1:]
    drop, pre, out_f, err_f, inp, show_all, err_ts = False, None, None, None, None, False, False
    while args and args[0].startswith("--"):
        o = args.pop(0)
        if o == "--drop":
            drop = True
        elif o == "--all":
            show_all = True
        elif o == "--pre":
            pre = args.pop(0)
        elif o == "--stdout":
            out_f = args.pop(0)
        elif o == "--stderr":
            err_f = args.pop(0)
        elif o == "--stderr-ts":
            err_f = args.pop(0)
            err_ts = True
        elif o == "--input":
            inp = args.pop(0).encode().decode("unicode_escape").encode()
        else:
            sys.exit("measure.py: unknown option " + o)
    n = int(args[0])
    cmd = args[1:]
    times, cpus, users, peak, rc, hot = [], [], [], 0, 0, False
    with tempfile.NamedTemporaryFile(mode="r") as out:
        for i in range(n):
            if pre:
                subprocess.run(["sh", "-c", pre], check=False)
            if drop and not drop_caches():
                hot = True
            last = i == n - 1
            so = open(out_f, "wb") if (last and out_f) else subprocess.DEVNULL
            se = open(err_f, "wb") if (last and err_f) else subprocess.DEVNULL
            ts = last and err_f and err_ts
            t0 = time.perf_counter()
            p = subprocess.Popen(["/usr/bin/time", "-f", "%M %U %S", "-o", out.name] + cmd,
                                 stdin=subprocess.PIPE if inp is not None else subprocess.DEVNULL,
                                 stdout=so, stderr=subprocess.PIPE if ts else se)
            reader = None
            if ts:
                def pump(fd=p.stderr.fileno(), dst=se, start=t0):
                    while True:
                        b = os.read(fd, 65536)
                        if not b:
                            break
                        dst.write((json.dumps([round(time.perf_counter() - start, 4),
                                               b.decode("utf-8", "replace")]) + "\n").encode())
                reader = threading.Thread(target=pump)
                reader.start()
            if inp is not None:
                p.stdin.write(inp)
                p.stdin.close()
            p.wait()
            times.append(time.perf_counter() - t0)
            if reader:
                reader.join()
                p.stderr.close()
            for x in (so, se):
                if x is not subprocess.DEVNULL:
                    x.close()
            rc = p.returncode
            out.seek(0)
            # the last line is ours; the command's own output went elsewhere,
            # but GNU time puts "Command exited with non-zero status" first
            lines = [ln.split() for ln in out.read().splitlines() if ln.strip()]
            if lines and len(lines[-1]) == 3 and lines[-1][0].isdigit():
                peak = max(peak, int(lines[-1][0]))
                cpus.append(float(lines[-1][1]) + float(lines[-1][2]))
                users.append(float(lines[-1][1]))
    runs = list(times)
    times.sort()
    fields = ["%.4f" % times[len(times) // 2], "%d" % peak, "%d" % rc]
    if drop:
        fields.append("hot" if hot else "cold")
    if cpus:
        cpus.sort()
        users.sort()
        fields.append("cpu=%.2f" % cpus[len(cpus) // 2])
        fields.append("user=%.2f" % users[len(users) // 2])
    if show_all:
        fields.append(",".join("%.2f" % t for t in runs))
    print(" ".join(fields))


if __name__ == "__main__":
    main()
