#!/usr/bin/env python3
"""score.py - compare a result manifest with the ground-truth manifest.

usage: score.py TRUTH.manifest.jsonl RESULT.manifest.jsonl [--json] [--details N]
       [--ignore-mtime]

Both files are manifests as written by run-guest / the readers (JSON Lines,
key = path_hex).  The root "/" and everything under /.reiserfs_priv are
ignored.  Categories over ground-truth entries:
  intact     present, same type and same content (sha256 for files,
             target_hex for symlinks, rdev for devices; dirs/fifos/sockets:
             type only).  Metadata differences (size/mode/uid/gid/nlink/mtime)
             among intact entries are counted separately ("meta_differs").
  corrupted  present, but type or content differs
  missing    not present
and over result entries:
  foreign    present, not in the ground truth, outside /lost+found
  lost_found entries under /lost+found (listed separately); of these,
             "lost_found_recovered" have the content of a ground-truth file
             that is otherwise missing or corrupted.
Counts are given for all entries and for regular files only.
Exit 0 always (it is a measurement); 2 on bad input.
"""
import argparse
import json
import os
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rcorpus  # noqa: E402

LF = "/lost+found".encode().hex()
PRIV = "/.reiserfs_priv".encode().hex()


def under(phex, top):
    return phex == top or phex.startswith(top + "2f")


def content_key(e):
    t = e.get("type")
    if t == "file":
        return ("file", e.get("sha256"))
    if t == "symlink":
        return ("symlink", e.get("target_hex"))
    if t in ("chr", "blk"):
        return (t, e.get("rdev"))
    return (t, None)


def score(truth, result, ignore_mtime=False, details=0):
    T = {e["path_hex"]: e for e in truth if e["path_hex"] != "2f" and not under(e["path_hex"], PRIV)}
    Rall = {e["path_hex"]: e for e in result if e["path_hex"] != "2f" and not under(e["path_hex"], PRIV)}
    lf = {k: v for k, v in Rall.items() if under(k, LF) and k != LF and k not in T}
    R = {k: v for k, v in Rall.items() if k not in lf and not (k == LF and k not in T)}
    out = {"truth_entries": len(T), "result_entries": len(Rall)}
    cats = {"intact": [], "corrupted": [], "missing": [], "foreign": []}
    meta = []
    for k, e in T.items():
        r = R.get(k)
        if r is None:
            cats["missing"].append(k)
        elif content_key(r) != content_key(e):
            cats["corrupted"].append(k)
        else:
            cats["intact"].append(k)
            fields = ["size", "mode", "uid", "gid", "nlink"] + ([] if ignore_mtime else ["mtime"])
            if e["type"] == "dir":
                fields = [f for f in fields if f not in ("size", "nlink")]
            diff = [f for f in fields if e.get(f) is not None and r.get(f) is not None and e[f] != r[f]]
            if diff:
                meta.append((k, diff))
    cats["foreign"] = [k for k in R if k not in T]
    lost_sha = {}
    for k, e in T.items():
        if e["type"] == "file" and (k in cats["missing"] or k in cats["corrupted"]):
            lost_sha.setdefault(e["sha256"], []).append(k)
    lf_rec = [k for k, e in lf.items() if e.get("type") == "file" and e.get("sha256") in lost_sha]
    for c, ks in cats.items():
        out[c] = len(ks)
    out["meta_differs"] = len(meta)
    out["lost_found"] = len(lf)
    out["lost_found_recovered"] = len(lf_rec)
    files = {c: sum(1 for k in ks if (T.get(k) or R.get(k) or {}).get("type") == "file")
             for c, ks in cats.items()}
    out["files"] = dict(files, truth=sum(1 for e in T.values() if e["type"] == "file"))
    if details:
        def show(ks):
            return [bytes.fromhex(k).decode("utf-8", "backslashreplace") for k in sorted(ks)[:details]]
        out["details"] = {c: show(ks) for c, ks in cats.items() if c != "intact"}
        out["details"]["meta_differs"] = [(bytes.fromhex(k).decode("utf-8", "backslashreplace"), d)
                                          for k, d in sorted(meta)[:details]]
        out["details"]["lost_found"] = show(lf.keys())
    return out


def main():
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # quiet when piped into head
    ap = argparse.ArgumentParser()
    ap.add_argument("truth")
    ap.add_argument("result")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--details", type=int, default=0)
    ap.add_argument("--ignore-mtime", action="store_true")
    a = ap.parse_args()
    try:
        t = rcorpus.read_manifest(a.truth)
        r = rcorpus.read_manifest(a.result)
    except (OSError, ValueError) as e:
        print("score: %s" % e, file=sys.stderr)
        return 2
    s = score(t, r, a.ignore_mtime, a.details)
    if a.json:
        print(json.dumps(s, indent=1))
    else:
        print("truth %(truth_entries)d  intact %(intact)d  corrupted %(corrupted)d  missing %(missing)d  "
              "foreign %(foreign)d  lost+found %(lost_found)d (recovered %(lost_found_recovered)d)  "
              "meta-differs %(meta_differs)d" % s)
        f = s["files"]
        print("files: truth %(truth)d  intact %(intact)d  corrupted %(corrupted)d  missing %(missing)d  "
              "foreign %(foreign)d" % f)
        if a.details:
            print(json.dumps(s["details"], indent=1, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
