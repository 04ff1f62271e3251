#!/usr/bin/env python3
"""fix_table.py RFSCK OUT.md [--json OUT.json] [CASE...] - `rfsck fix` and
`reiserfsck --fix-fixable` side by side on the fixable damage cases of
corpus/tools/fixed_kernel.py (default: its 46 cases of `test-kernel.sh
--fixed` plus EXTRA_CASES), judged by the same oracles:

  * rfsck side: `rfsck fix --yes` on the damaged image; then `rfsck check` and
    `reiserfsck --check` (on a copy);
  * reiserfsck side: `reiserfsck --fix-fixable --yes` on another copy of the
    same damaged image; then `reiserfsck --check` and `rfsck check`;
  * both sides, and the damaged image itself (the control: what the kernel
    makes of the damage with no repair): the 6.1 kernel view of
    fixed_kernel.kernel_view (read-only read of every file, scored against the
    expected view; a read-write phase that writes, re-reads and deletes new
    files; the kernel log of both phases), then `rfsck check` and `reiserfsck
    --check` again after the kernel's writes.  Where the kernel cannot mount a
    result, its files are read with rfsck's reader (corpus/tools/read-rfsck)
    instead, marked "(rfsck reader)".

"N" is the expected view's entry count (root excluded).  Intact counts are over
the expected view (fixed_kernel.prepare: the ground truth, less the name a
name recipe destroys); for random flips, entries a flip touched are counted as
they read.  The Markdown table replaces the text between the lines
"<!-- fix_table begin -->" and "<!-- fix_table end -->" of OUT.md when they
are there (the hand-written explanation around it stays), else OUT.md is the
table alone.  --json keeps every measurement; `fix_table.py --render RUN.json
OUT.md` renders the table of such a run again without measuring.
"""
import json
import os
import shutil
import subprocess
import sys

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(TOP, "corpus", "tools"))
import fixed_kernel as fk  # noqa: E402
import oracle  # noqa: E402
import rcorpus  # noqa: E402
import score  # noqa: E402

# beyond the CI list: the standard-journal image (where --fix-fixable rewrites a
# zeroed journal header) and two more hash kinds
EXTRA_CASES = ["r36-stdjournal-r5:zero-journal-header", "r36-stdjournal-r5:zero-bitmaps",
               "r36-stdjournal-r5:free-count", "r36-hash-tea:zero-bitmaps",
               "r36-hash-rupasov:root-nlink"]
BEGIN, END = "<!-- fix_table begin -->", "<!-- fix_table end -->"


def after_checks(rfsck, img):
    rc, codes = fk.rfsck_check(rfsck, img)
    rrc, clean = fk.reiserfsck_check(img)
    return {"rfsck_check": rc, "rfsck_codes": codes, "reiserfsck_check": rrc, "reiserfsck_clean": clean}


def side_view(rfsck, case, img, kv):
    for phase in ("ro", "rw"):
        rcorpus.write_manifest(img + ".kernel.%s.jsonl" % phase, kv[phase])
    ok, probs, summ = fk.kernel_verdict(kv, case["truth"], touched=case["touched"])
    s = summ["score"]
    view = {"ok": ok, "problems": probs, "mounted": summ["mounted"], "written": summ["written"],
            "failed_steps": [k for k, v in kv["steps"].items() if v != 0],
            "complaints": summ["complaints"], "reader": "kernel", "hung": kv.get("hung"),
            "hung_phase": kv.get("hung_phase")}
    if s is None:
        out = img + ".rfsck-reader.jsonl"
        subprocess.run(["python3", os.path.join(TOP, "corpus", "tools", "read-rfsck"), rfsck, img, out],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        s = score.score(rcorpus.read_manifest(case["truth"]), rcorpus.read_manifest(out), details=5)
        view["reader"] = "rfsck reader"
    view["score"] = {k: s[k] for k in ("truth_entries", "intact", "corrupted", "missing", "foreign",
                                        "meta_differs", "lost_found")}
    view["details"] = s.get("details", {})
    view["after_kernel"] = after_checks(rfsck, img)
    return view


def main():
    args = sys.argv[1:]
    if len(args) < 2:
        print(__doc__.split("\n\n")[0], file=sys.stderr)
        return 16
    if args[0] == "--render":
        # fix_table.py --render RUN.json OUT.md: the table of an earlier run
        rows = json.load(open(args[1]))
        write_table(args[2], rows)
        print(summary(rows))
        return 0
    rfsck, out = os.path.abspath(args[0]), args[1]
    jout = None
    if "--json" in args:
        i = args.index("--json")
        jout = args[i + 1]
        del args[i:i + 2]
    specs = args[2:] or fk.DEFAULT_CASES + EXTRA_CASES
    wd = os.path.join(rcorpus.cache_dir(), "fix-table")
    shutil.rmtree(wd, ignore_errors=True)
    os.makedirs(wd)
    rows, kimgs = [], []
    for spec in specs:
        c = fk.prepare(spec, wd, rfsck)
        d = c["damaged"]
        row = {"case": c["name"], "family": c["family"], "want": c["want"], "N": c["truth_entries"],
               "lost": c["lost"], "touched": len(c["touched"])}
        row["before"] = dict(zip(("rfsck_check", "rfsck_codes"), fk.rfsck_check(rfsck, d)))
        row["before"]["reiserfsck_check"] = fk.reiserfsck_check(d)[0]
        ctl, mine, theirs = d + ".control.img", d + ".rfsck.img", d + ".reiserfsck.img"
        shutil.copyfile(d, ctl)
        shutil.copyfile(d, mine)
        rc, o, e = fk.run([rfsck, "fix", "--yes", "--no-undo", "--json", mine])
        fixed = []
        try:
            fixed = sorted({p["code"] for p in json.loads(o)["problems"] if p.get("fixed")})
        except (ValueError, KeyError):
            pass
        row["rfsck"] = {"exit": rc, "fixed": fixed, "after": after_checks(rfsck, mine)}
        r = oracle.run_fsck(d, "fix-fixable", keep=theirs)
        row["reiserfsck"] = {"exit": r["exit"], "key_lines": r["key_lines"],
                             "after": after_checks(rfsck, theirs)}
        rows.append((c, row, ctl, mine, theirs))
        kimgs += [ctl, mine, theirs]
        print("prepared %s: rfsck fix %d, reiserfsck --fix-fixable %d" % (c["name"], rc, r["exit"]),
              file=sys.stderr)
    kvs = fk.kernel_view(kimgs, write=True, log_dir=wd)
    for i, (c, row, ctl, mine, theirs) in enumerate(rows):
        row["control"] = side_view(rfsck, c, ctl, kvs[3 * i])
        # what the kernel's own read-write mount made of the damage (it
        # replays the journal and finishes safe links): the expected view?
        pre = fk.WRITE_TEST_PREFIX.encode().hex()
        own = [e for e in kvs[3 * i]["rw"] if not e["path_hex"].startswith(pre)]
        row["control"]["kernel_own_completion"] = (
            fk.judge_view(rcorpus.read_manifest(c["truth"]), own, c["touched"], phase="rw")
            if kvs[3 * i]["steps"].get("rw.manifest") == 0 else ["no read-write read"])
        row["rfsck"]["view"] = side_view(rfsck, c, mine, kvs[3 * i + 1])
        row["reiserfsck"]["view"] = side_view(rfsck, c, theirs, kvs[3 * i + 2])
    rows = [r for _, r, _, _, _ in rows]
    if jout:
        with open(jout, "w") as f:
            json.dump(rows, f, indent=1)
    write_table(out, rows)
    print(summary(rows))
    return 0


def write_table(out, rows):
    table = render(rows)
    text = table
    if os.path.exists(out):
        old = open(out).read()
        if BEGIN in old and END in old:
            text = old[:old.index(BEGIN) + len(BEGIN)] + "\n" + table + old[old.index(END):]
    with open(out, "w") as f:
        f.write(text)


def read_cell(v):
    s = v["score"]
    if not v["mounted"]:
        head = "**%s**" % v["hung"] if v.get("hung_phase") == "ro" else "no mount"
        if v["reader"] != "kernel":
            head += "; rfsck reader %d/%d" % (s["intact"], s["truth_entries"])
        return head
    cell = "%d/%d" % (s["intact"], s["truth_entries"])
    extra = ["%d %s" % (s[k], k.replace("_", " ")) for k in ("corrupted", "missing", "foreign",
                                                            "meta_differs", "lost_found") if s[k]]
    extra += [p.split(": ", 1)[1].replace("directory ", "dir ") for p in v["problems"]
              if p.startswith("read-only view: directory ")]
    return cell + (" (" + ", ".join(extra) + ")" if extra else "")


def write_cell(v):
    if v.get("hung_phase") == "rw":
        return "**" + v["hung"] + "**"
    if not v["mounted"]:
        return "-"
    bad = [k for k in v["failed_steps"] if not k.startswith("ro.")]
    w = "ok" if v["written"] else ("**failed**: " + ", ".join(bad) if bad else "not tried")
    if v["complaints"]:
        w += "; log: " + short(v["complaints"])
    return w


def short(complaints):
    """The first kernel complaint, without device names, and how many."""
    import re
    t = re.sub(r"\(device \w+\)", "", complaints[0])
    t = re.sub(r"\s+", " ", t)[:70].replace("|", "/")
    return "`%s`%s" % (t, " (+%d)" % (len(complaints) - 1) if len(complaints) > 1 else "")


def checks_cell(a):
    c = str(a["rfsck_check"])
    if a["rfsck_codes"]:
        c += " " + ",".join(a["rfsck_codes"])
    r = str(a["reiserfsck_check"]) if a["reiserfsck_clean"] or a["reiserfsck_check"] else "0?"
    return "%s / %s" % (c, r)


def render(rows):
    h = ("| case | N | damage: rfsck check / reiserfsck --check | kernel, no repair: read / write, log "
         "| **rfsck fix** | rfsck check / reiserfsck --check after | kernel read | kernel write, log "
         "| after the kernel: rfsck check / reiserfsck --check "
         "| **reiserfsck --fix-fixable** | rfsck check / reiserfsck --check after | kernel read "
         "| kernel write, log | after the kernel: rfsck check / reiserfsck --check |\n")
    h += "|" + " --- |" * 14 + "\n"
    for r in rows:
        b = r["before"]
        dmg = "%d %s / %d" % (b["rfsck_check"], ",".join(b["rfsck_codes"]), b["reiserfsck_check"])
        ctl = r["control"]
        m, t = r["rfsck"], r["reiserfsck"]
        h += "| %s | %d | %s | %s / %s | %d | %s | %s | %s | %s | %d | %s | %s | %s | %s |\n" % (
            r["case"], r["N"], dmg, read_cell(ctl), write_cell(ctl),
            m["exit"], checks_cell(m["after"]), read_cell(m["view"]), write_cell(m["view"]),
            checks_cell(m["view"]["after_kernel"]),
            t["exit"], checks_cell(t["after"]), read_cell(t["view"]), write_cell(t["view"]),
            checks_cell(t["view"]["after_kernel"]))
    return h + "\n" + summary(rows) + "\n"


def counts(side):
    """How many rows of one side pass each oracle."""
    v = side["view"]
    read_ok = v["mounted"] and v["reader"] == "kernel" and not [
        p for p in v["problems"] if p.startswith("read-only")]
    return {"exit 1": side["exit"] == 1,
            "rfsck check 0 after": side["after"]["rfsck_check"] == 0,
            "reiserfsck --check clean after": side["after"]["reiserfsck_clean"],
            "kernel mounts": v["mounted"],
            "kernel read: every expected entry as expected": read_ok,
            "kernel write, re-read, log clean": bool(v["written"]) and not v["complaints"] and not [
                p for p in v["problems"] if not p.startswith("read-only")],
            "both checks clean after the kernel": v["after_kernel"]["rfsck_check"] == 0
            and v["after_kernel"]["reiserfsck_clean"],
            "all of these": v["ok"] and side["exit"] == 1 and side["after"]["rfsck_check"] == 0
            and side["after"]["reiserfsck_clean"] and v["after_kernel"]["rfsck_check"] == 0
            and v["after_kernel"]["reiserfsck_clean"]}


def summary(rows):
    keys = list(counts(rows[0]["rfsck"]))
    out = "| of %d cases | rfsck fix | reiserfsck --fix-fixable |\n| --- | --- | --- |\n" % len(rows)
    for k in keys:
        out += "| %s | %d | %d |\n" % (k, sum(1 for r in rows if counts(r["rfsck"])[k]),
                                       sum(1 for r in rows if counts(r["reiserfsck"])[k]))
    return out


if __name__ == "__main__":
    sys.exit(main())
