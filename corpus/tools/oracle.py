#!/usr/bin/env python3
"""oracle.py - run reiserfsck (reiserfsprogs 3.6.27) on a COPY of an image and
parse the result.

usage: oracle.py check|fix-fixable|rebuild-tree IMAGE [--keep OUT_IMAGE] [--timeout S]

Prints one JSON object: exit code, its meaning (RP fsck/fsck.h), the summary
lines, the last log lines, seconds.  The original IMAGE is never written
(reiserfsck --check writes the superblock and may replay the journal, see
format doc 4.1).  --keep stores the resulting copy.  --rebuild-tree gets its
"Yes" on stdin (-y is stripped by reiserfsck for rebuild).  A timeout
(default 600 s) guards against hangs; SIGABRT (134) is reported as such.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rcorpus  # noqa: E402

MEANING = {0: "no corruption", 1: "errors corrected", 2: "reboot needed",
           4: "fatal corruption left (needs --rebuild-tree)",
           6: "fixable corruption left (needs --fix-fixable)", 8: "operational error",
           16: "usage error / declined", 134: "aborted (SIGABRT)", -1: "timeout"}


def run_fsck(image, mode, keep=None, timeout=600):
    tmpdir = tempfile.mkdtemp(prefix="oracle-", dir=rcorpus.cache_dir())
    work = keep or os.path.join(tmpdir, "copy.img")
    shutil.copyfile(image, work)
    logf = os.path.join(tmpdir, "fsck.log")
    if mode == "check":
        cmd, stdin = ["reiserfsck", "--check", "--yes", "-l", logf, work], b""
    elif mode == "fix-fixable":
        cmd, stdin = ["reiserfsck", "--fix-fixable", "--yes", "-l", logf, work], b""
    elif mode == "rebuild-tree":
        cmd, stdin = ["reiserfsck", "--rebuild-tree", "-l", logf, work], b"Yes\n"
    else:
        raise ValueError(mode)
    t0 = time.time()
    try:
        p = subprocess.run(cmd, input=stdin, capture_output=True, timeout=timeout)
        rc = p.returncode if p.returncode >= 0 else 128 - p.returncode
        err = p.stderr.decode("utf-8", "replace") + p.stdout.decode("utf-8", "replace")
    except subprocess.TimeoutExpired:
        rc, err = -1, "timeout"
    secs = time.time() - t0
    text = re.sub(r".\x08", "", err)
    summary = {}
    for key in ("Leaves", "Internal nodes", "Directories", "Other files", "Data block pointers",
                "Safe links"):
        m = re.search(r"\t%s (\d+)" % key, text)
        if m:
            summary[key] = int(m.group(1))
    lines = [ln for ln in text.splitlines() if re.search(r"corruption|No corruptions|Fatal|abort|bread|"
                                                          r"Files found|Directories found|rebuild|transactions replayed", ln)]
    try:
        with open(logf, errors="replace") as f:
            logtail = f.read()[-3000:]
    except OSError:
        logtail = ""
    res = {"mode": mode, "exit": rc, "meaning": MEANING.get(rc, "?"), "summary": summary,
           "key_lines": lines[-12:], "log_tail": logtail, "seconds": round(secs, 1),
           "command": " ".join(cmd[:-1] + ["COPY"]) + (" (stdin: Yes)" if stdin else "")}
    if keep:
        res["result_image"] = keep
    shutil.rmtree(tmpdir, ignore_errors=True)
    return res


def main():
    import argparse
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["check", "fix-fixable", "rebuild-tree"])
    ap.add_argument("image")
    ap.add_argument("--keep")
    ap.add_argument("--timeout", type=int, default=600)
    a = ap.parse_args()
    r = run_fsck(a.image, a.mode, a.keep, a.timeout)
    print(json.dumps(r, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
