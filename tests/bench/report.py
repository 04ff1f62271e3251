#!/usr/bin/env python3
"""report.py RESULTS.json - markdown tables of bigbench.py's results: the
images, the steps side by side with reiserfsck, the growth from the smallest
to the largest image, and the issue's targets (met / missed, by how much),
evaluated on the largest of them; then the TiB-scale volume (bigbench.py's
scale_only: no `cat`, no salvage) in a section of its own, for memory.""" 
import json
import statistics
import sys

MiB = 1 << 20


def fmt_t(r, all_runs=False):
    if not r:
        return "n/a"
    s = "%.1f s" % r["seconds"] if r["seconds"] >= 10 else "%.2f s" % r["seconds"]
    if all_runs and len(r.get("all", [])) > 1:
        s += " (" + ", ".join("%.1f" % x for x in r["all"]) + ")"
    return s


def rss(r):
    return "%d MiB" % round(r["peak_kib"] / 1024) if r else "n/a"


def ratio(a, b):
    return a / b if b else float("nan")


def runs_note(r):
    return "%d" % r["runs"] + ("" if r.get("cache", "cold") == "cold" else " hot")


def scale_section(p, s, big):
    """The TiB-scale volume: times and peak memory of each step, the memory
    target at this size, and bytes per volume block against the largest
    regular volume."""
    tib = s["bytes"] / (1 << 40)
    lim = 64 + 96 * tib
    p("### Memory at TiB scale (%s)" % s["image"])
    p("")
    p("%s: %.2f TiB, %d blocks, %.1f GiB on disk; `cat` and salvage are not run (they read the "
      "whole image file, holes included).  Limit = 64 MiB + 96 MiB/TiB = %.0f MiB." % (
          s["image"], tib, s["blocks"], s["allocated"] / (1 << 30), lim))
    p("")
    p("| step | runs | time | peak RSS | RSS bytes per volume block | ratio |")
    p("| --- | --- | --- | --- | --- | --- |")
    rd = s["read_data"]["seconds"]
    for key, name, rt in (
            ("read_data", "sequential read of the data extents (readdata.py)", "1.00"),
            ("check", "`rfsck check -q`", "%.2f of reiserfsck" % ratio(s["check"]["seconds"], s["fsck"]["seconds"])),
            ("fsck", "`reiserfsck --check --yes` (copy)", "%.2f x data read" % ratio(s["fsck"]["seconds"], rd)),
            ("dry", "`rfsck rebuild --dry-run --index DB`", "%.2f x data read" % ratio(s["dry"]["seconds"], rd)),
            ("rebuild", "`rfsck rebuild --yes --output NEW` (root zeroed)",
             "%.2f of rebuild-tree" % ratio(s["rebuild"]["seconds"], s["rtree"]["seconds"])),
            ("inplace", "`rfsck rebuild --yes` in place, undo log",
             "%.2f of rebuild-tree" % ratio(s["inplace"]["seconds"], s["rtree"]["seconds"])),
            ("rtree", "`reiserfsck --rebuild-tree` (same damage)", "%.2f x data read" % ratio(s["rtree"]["seconds"], rd))):
        x = s[key]
        p("| %s | %s | %s | %s | %.2f | %s |" % (name, runs_note(x), fmt_t(x, True), rss(x),
                                                 x["peak_kib"] * 1024 / s["blocks"], rt))
    p("")
    m = max(s["rebuild"]["peak_kib"], s["dry"]["peak_kib"], s["inplace"]["peak_kib"]) / 1024
    p("Peak memory of rebuild (max of dry run and both rebuilds): %.0f MiB against %.0f MiB allowed: %s.  "
      "`rfsck check`: %.0f MiB; reiserfsck --check %.0f MiB, --rebuild-tree %.0f MiB." % (
          m, lim, "met" if m <= lim else "**missed** (+%.0f MiB)" % (m - lim),
          s["check"]["peak_kib"] / 1024, s["fsck"]["peak_kib"] / 1024, s["rtree"]["peak_kib"] / 1024))
    if big:
        vb = s["blocks"] / big["blocks"]
        growth = ", ".join("%s x%.2f" % (name, ratio(s[k]["peak_kib"], big[k]["peak_kib"]))
                           for k, name in (("check", "check"), ("dry", "dry run"), ("rebuild", "--output"),
                                           ("inplace", "in place")))
        p("From %s to %s the volume grows x%.0f (blocks); peak memory grows %s." % (
            big["image"], s["image"], vb, growth))
    sc = (s.get("dry_report") or {}).get("scan") or {}
    ss = s.get("dry_scan") or {}
    if ss.get("seconds") and sc.get("blocks_scanned"):
        rate = sc["blocks_scanned"] * s["blocksize"] / ss["seconds"]
        data_rate = s["allocated"] / rd
        p("Scan: %d blocks (%s) in %.1f s, %.0f MiB/s = %.0f%% of the data-extent read (%.0f MiB/s)." % (
            sc["blocks_scanned"], sc.get("mode"), ss["seconds"], rate / MiB, 100 * rate / data_rate,
            data_rate / MiB))
    p("")


def pairs_note(p, r):
    """The alternating runs of the data-extent read and the dry run's scan
    (bigbench.py): each in the order it ran, and the scan's rate over the read's
    for each pair."""
    order = r.get("scan_read_order") or []
    sc = (r.get("dry_report") or {}).get("scan") or {}
    if not order or not sc.get("blocks_scanned"):
        return
    scan_bytes = sc["blocks_scanned"] * r["blocksize"]
    q = []
    for i in range(0, len(order) - 1, 2):
        d = dict(order[i:i + 2])
        if d.get("scan") and d.get("read_data"):
            q.append((scan_bytes / d["scan"]) / (r["allocated"] / d["read_data"]))
    p("%s, the scan against the data-extent read in the order they ran (page cache dropped before "
      "each): %s.  Scan rate / read rate per pair: %s; median %.0f%%." % (
          r["image"], ", ".join("%s %.1f s" % ("read" if k == "read_data" else "scan", v)
                                for k, v in order if v is not None),
          ", ".join("%.0f%%" % (100 * x) for x in q), 100 * statistics.median(q) if q else float("nan")))
    p("")


def salvage_note(r, key="salvage"):
    """Where salvage wrote and how its last run split (report.json's phases)."""
    ph = r.get(key + "_phases") or {}
    parts = []
    if key == "salvage" and r.get("salvage_target"):
        parts.append("into a %s" % r["salvage_target"])
    if ph:
        parts.append("last run: image digest %.1f s, extraction %.1f s, digest again %.1f s" % (
            ph.get("image_digest_before", 0), ph.get("extract", 0), ph.get("image_digest_after", 0)))
    return " (%s)" % "; ".join(parts) if parts else ""


def salvage_parts(r):
    """The last salvage run of each kind split by phase, as pseudo steps of
    their own (seconds only): the two image digests, whose work follows the
    image file's size (holes are hashed), and the extraction, whose work
    follows the volume's used blocks and files."""
    for key, where in (("salvage", ""), ("salvage_mem", ", tmpfs")):
        ph = r.get(key + "_phases")
        if not ph:
            continue
        r[key + ":digests"] = {"seconds": ph.get("image_digest_before", 0) + ph.get("image_digest_after", 0),
                               "name": "rfsck salvage%s: the two image digests (last run)" % where}
        r[key + ":extract"] = {"seconds": ph.get("extract", 0),
                               "name": "rfsck salvage%s: extraction (last run)" % where}


PARTS = ("salvage:digests", "salvage:extract", "salvage_mem:digests", "salvage_mem:extract")


def main():
    res = json.load(open(sys.argv[1]))
    if not res:
        return 0
    res.sort(key=lambda r: r["bytes"])
    everything = res
    scale = [r for r in res if r.get("scale_only")]
    res = [r for r in res if not r.get("scale_only")]
    for r in res:
        salvage_parts(r)
    out = []
    p = out.append
    p("### Images")
    p("")
    p("| image | size | on disk | blocks (4 KiB) | used blocks | leaves | files | dirs | tree height | built in the guest | kernel read-back | reiserfsck --check |")
    p("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in everything:
        m = r["meta"]
        kr = m.get("kernel_readback") or {}
        ck = m.get("reiserfsck_check") or {}
        used = r["dry_report"]["scan"]["blocks_scanned"] if r.get("dry_report", {}).get("scan") else None
        p("| %s | %s | %.1f GiB | %d | %s | %s | %s | %s | %d | %s | %s | %s |" % (
            r["image"], "%d GiB" % (r["bytes"] >> 30) if r["bytes"] >= 1 << 30 else "%d MiB" % (r["bytes"] >> 20), r["allocated"] / (1 << 30), r["blocks"],
            used if used is not None else "?", r.get("leaves"), r.get("files"), r.get("dirs"),
            r["tree_height"], "%.0f s" % m["build_seconds_guest"] if m.get("build_seconds_guest") else "?",
            "%d/%d match" % (kr.get("match", 0), kr.get("sampled", 0)) if kr else "?",
            "exit %s%s" % (ck.get("exit"), ", no corruptions" if ck.get("no_corruptions") else "") if ck else "?"))
    p("")
    p("### Times and peak memory")
    p("")
    p("Wall time: median of the runs (every run in brackets); peak resident memory: GNU time, max over "
      "the runs.  The page cache of this VM is dropped before every run, but the hypervisor below still "
      "caches the virtual disk, so \"cold\" times vary a lot (see the sequential reads).  "
      "Ratio = rfsck / reiserfsck, or / the sequential read.")
    p("")
    p("| image | step | runs | time | peak RSS | ratio |")
    p("| --- | --- | --- | --- | --- | --- |")
    for r in res:
        im = r["image"]
        rd = r["read"]["seconds"]
        rows = [
            ("sequential read (`cat IMAGE`, holes included)", r["read"], "1.00"),
            ("sequential read of the data extents (readdata.py)", r["read_data"], "%.2f x read" % ratio(r["read_data"]["seconds"], rd)),
            ("`rfsck check -q`", r["check"], "%.2f of reiserfsck, %.2f x read" % (
                ratio(r["check"]["seconds"], r["fsck"]["seconds"]), ratio(r["check"]["seconds"], rd))),
            ("`reiserfsck --check --yes` (copy)", r["fsck"], "%.2f x read" % ratio(r["fsck"]["seconds"], rd)),
            ("`rfsck rebuild --dry-run --index DB`", r["dry"], "%.2f x read" % ratio(r["dry"]["seconds"], rd)),
            ("`rfsck rebuild --yes --output NEW` (root zeroed)", r["rebuild"], "%.2f of rebuild-tree, %.2f x read" % (
                ratio(r["rebuild"]["seconds"], r["rtree"]["seconds"]), ratio(r["rebuild"]["seconds"], rd))),
            ("`rfsck rebuild --yes` in place, undo log (same damage, a copy)", r["inplace"], "%.2f of rebuild-tree, %.2f x read" % (
                ratio(r["inplace"]["seconds"], r["rtree"]["seconds"]), ratio(r["inplace"]["seconds"], rd))),
            ("`reiserfsck --rebuild-tree` (same damage)", r["rtree"], "%.2f x read" % ratio(r["rtree"]["seconds"], rd)),
            ("`rfsck salvage -q IMAGE DIR`%s" % salvage_note(r), r["salvage"],
             "%.2f x read" % ratio(r["salvage"]["seconds"], rd)),
        ]
        if r.get("salvage_mem"):
            rows.append(("`rfsck salvage -q IMAGE DIR`, DIR on tmpfs%s" % salvage_note(r, "salvage_mem"),
                         r["salvage_mem"], "%.2f x read" % ratio(r["salvage_mem"]["seconds"], rd)))
        if r.get("check_warm") and r.get("dry_warm"):
            ph = r.get("dry_warm_phases") or {}
            rows += [
                ("`rfsck check -q`, page cache warm", r["check_warm"], "%.2f of reiserfsck (cold)" % ratio(
                    r["check_warm"]["seconds"], r["fsck"]["seconds"])),
                ("`rfsck rebuild --dry-run`, page cache warm (scan %s, decide %s, build %s s)" % (
                    ph.get("scan", "?"), ph.get("decide", "?"), ph.get("build", "?")), r["dry_warm"], ""),
            ]
        for name, x, rt in rows:
            p("| %s | %s | %s | %s | %s | %s |" % (im, name, runs_note(x), fmt_t(x, True), rss(x), rt))
    p("")
    p("Exit codes: " + "; ".join(
        "%s: check %d, reiserfsck --check %d, dry run %d, rebuild %d (result: `rfsck check` exit %s, "
        "check_after %s), in place %d (result: `rfsck check` exit %s, undo log %s MiB), rebuild-tree %d, "
        "salvage %d" % (
            r["image"], r["check"]["exit"], r["fsck"]["exit"], r["dry"]["exit"], r["rebuild"]["exit"],
            (r.get("rebuilt_check") or {}).get("exit"), (r.get("rebuild_report") or {}).get("check_after"),
            r["inplace"]["exit"], (r.get("inplace_check") or {}).get("exit"),
            "%.1f" % (r["inplace_undo_bytes"] / MiB) if r.get("inplace_undo_bytes") is not None else "?",
            r["rtree"]["exit"], r["salvage"]["exit"]) for r in res) + ".")
    p("")
    p("### Scan and index")
    p("")
    p("| image | blocks scanned (mode) | leaf candidates | scan time (dry run) | scan rate | `cat` rate (on-disk bytes / time) | scan / `cat` rate | data-extent read rate | scan / data read rate | index size | index bytes per candidate leaf | rebuild: objects by name / lost+found | rebuild-tree: files / dirs |")
    p("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in res:
        sc = r["dry_report"]["scan"]
        ss = r.get("dry_scan") or {}
        scan_rate = sc["blocks_scanned"] * r["blocksize"] / ss["seconds"] if ss.get("seconds") else None
        read_rate = r["allocated"] / r["read"]["seconds"]
        data_rate = r["allocated"] / r["read_data"]["seconds"]
        r["_scan_rate"], r["_read_rate"], r["_data_rate"] = scan_rate, read_rate, data_rate
        ob = (r.get("rebuild_report") or {}).get("objects") or {}
        rt = r.get("rtree_summary") or {}
        p("| %s | %d (%s) | %d | %s | %s | %.0f MiB/s | %s | %.0f MiB/s | %s | %.1f MiB | %s | %s / %s | %s / %s |" % (
            r["image"], sc["blocks_scanned"], sc["mode"], sc["candidates"],
            "%.1f s" % ss["seconds"] if ss.get("seconds") else "n/a",
            "%.0f MiB/s" % (scan_rate / MiB) if scan_rate else "n/a", read_rate / MiB,
            "%.2f" % (scan_rate / read_rate) if scan_rate else "n/a", data_rate / MiB,
            "%.2f" % (scan_rate / data_rate) if scan_rate else "n/a", r["index_bytes"] / MiB,
            "%.0f" % r["index_bytes_per_candidate"] if r.get("index_bytes_per_candidate") else "n/a",
            ob.get("by_name"), ob.get("lost_found"), rt.get("files"), rt.get("dirs")))
    p("")
    for r in res:
        pairs_note(p, r)
    if len(res) >= 2:
        a, b = res[0], res[-1]
        p("### Growth %s -> %s" % (a["image"], b["image"]))
        p("")
        ub_a = a["dry_report"]["scan"]["blocks_scanned"]
        ub_b = b["dry_report"]["scan"]["blocks_scanned"]
        p("Volume x%.1f (blocks), used blocks x%.2f, leaves x%.2f, files x%.2f.  Per-block figures: "
          "time / volume blocks and time / used blocks; memory / volume blocks." % (
              b["blocks"] / a["blocks"], ub_b / ub_a, ratio(b["leaves"] or 0, a["leaves"] or 0),
              ratio(b["files"] or 0, a["files"] or 0)))
        p("")
        p("| step | time %s | time %s | time growth | CPU user + sys %s -> %s | CPU growth (user) | us per used block (%s -> %s) | peak RSS growth | RSS bytes per volume block (%s -> %s) |" % (
            a["image"], b["image"], a["image"], b["image"], a["image"], b["image"], a["image"], b["image"]))
        p("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
        for key, name in (("read", "sequential read (cat)"), ("read_data", "sequential read (data extents)"),
                          ("check", "rfsck check"), ("fsck", "reiserfsck --check"),
                          ("dry", "rfsck rebuild --dry-run"), ("rebuild", "rfsck rebuild --output"),
                          ("inplace", "rfsck rebuild in place"), ("rtree", "reiserfsck --rebuild-tree"), ("salvage", "rfsck salvage"),
                          ("check_warm", "rfsck check, page cache warm"),
                          ("dry_warm", "rfsck rebuild --dry-run, page cache warm")):
            if key not in a or key not in b:
                continue
            x, y = a[key], b[key]
            cpu = all(k in x and k in y for k in ("cpu", "user"))
            p("| %s | %s | %s | x%.2f | %s | %s | %.1f -> %.1f | x%.2f | %.2f -> %.2f |" % (
                name, fmt_t(x), fmt_t(y), ratio(y["seconds"], x["seconds"]),
                "%.2f + %.2f -> %.2f + %.2f s" % (x["user"], x["cpu"] - x["user"], y["user"],
                                                  y["cpu"] - y["user"]) if cpu else "n/a",
                "x%.2f (x%.2f)" % (ratio(y["cpu"], x["cpu"]), ratio(y["user"], x["user"])) if cpu else "n/a",
                1e6 * x["seconds"] / ub_a, 1e6 * y["seconds"] / ub_b,
                ratio(y["peak_kib"], x["peak_kib"]), x["peak_kib"] * 1024 / a["blocks"],
                y["peak_kib"] * 1024 / b["blocks"]))
        for key in PARTS:
            if key not in a or key not in b:
                continue
            x, y = a[key], b[key]
            p("| %s | %s | %s | x%.2f | n/a | n/a | %.1f -> %.1f | n/a | n/a |" % (
                x["name"], fmt_t(x), fmt_t(y), ratio(y["seconds"], x["seconds"]),
                1e6 * x["seconds"] / ub_a, 1e6 * y["seconds"] / ub_b))
        p("")
    # targets on the largest image
    b = res[-1]
    p("### Targets (on %s, one run of this bench)" % b["image"])
    p("")
    p("| target | measured | met? |")
    p("| --- | --- | --- |")
    if b.get("_scan_rate"):
        for key, how in (("_data_rate", "the sequential read of the data extents"),
                         ("_read_rate", "`cat IMAGE` (holes included)")):
            q = b["_scan_rate"] / b[key]
            p("| rebuild scan throughput >= 80%% of %s | %.0f MiB/s vs %.0f MiB/s = %.0f%% | %s |" % (
                how, b["_scan_rate"] / MiB, b[key] / MiB, 100 * q,
                "yes" if q >= 0.8 else "**no** (%.0f%% short)" % (100 * (0.8 - q))))
    else:
        p("| rebuild scan throughput >= 80% of the sequential read | scan time not measured | ? |")
    q = ratio(b["check"]["seconds"], b["fsck"]["seconds"])
    p("| `rfsck check` <= 1/3 of `reiserfsck --check` | %s vs %s = %.2f | %s |" % (
        fmt_t(b["check"]), fmt_t(b["fsck"]), q, "yes" if q <= 1 / 3 else "**no** (x%.1f of the target)" % (q * 3)))
    for key, how in (("rebuild", "`--output` (copies the image first)"), ("inplace", "in place with undo log")):
        q = ratio(b[key]["seconds"], b["rtree"]["seconds"])
        p("| full `rfsck rebuild` <= 1/3 of `reiserfsck --rebuild-tree`: %s | %s vs %s = %.2f | %s |" % (
            how, fmt_t(b[key]), fmt_t(b["rtree"]), q, "yes" if q <= 1 / 3 else "**no** (x%.1f of the target)" % (q * 3)))
    lim = 64 + 96 * b["bytes"] / (1 << 40)
    m = max(b["rebuild"]["peak_kib"], b["dry"]["peak_kib"], b["inplace"]["peak_kib"]) / 1024
    p("| peak memory of rebuild <= 64 MiB + 96 MiB/TiB (= %.1f MiB here) | %.0f MiB (max of dry run and both rebuilds) | %s |" % (
        lim, m, "yes" if m <= lim else "**no** (+%.0f MiB)" % (m - lim)))
    if len(res) >= 2:
        a = res[0]
        blk = b["blocks"] / a["blocks"]
        used = b["dry_report"]["scan"]["blocks_scanned"] / a["dry_report"]["scan"]["blocks_scanned"]
        for key, name in (("check", "rfsck check"), ("dry", "rfsck rebuild --dry-run"),
                          ("rebuild", "rfsck rebuild --output"), ("inplace", "rfsck rebuild in place"),
                          ("salvage", "rfsck salvage"), ("check_warm", "rfsck check, page cache warm (CPU)"),
                          ("dry_warm", "rfsck rebuild --dry-run, page cache warm (CPU)")):
            if key not in a or key not in b:
                continue
            g = ratio(b[key]["seconds"], a[key]["seconds"])
            cpu = (", CPU x%.2f, user x%.2f" % (ratio(b[key]["cpu"], a[key]["cpu"]),
                                                ratio(b[key]["user"], a[key]["user"]))
                   if all(k in a[key] and k in b[key] for k in ("cpu", "user")) else "")
            p("| %s growth %s -> %s linear or better | time x%.2f for x%.1f blocks (x%.2f used blocks)%s | %s |" % (
                name, a["image"], b["image"], g, blk, used, cpu,
                "yes" if g <= used * 1.15 else "**no** (x%.2f per used block)" % (g / used)))
        # salvage by phase, each against what its work follows
        files = ratio(b["files"] or 0, a["files"] or 0)
        for key in PARTS:
            if key not in a or key not in b:
                continue
            g = ratio(b[key]["seconds"], a[key]["seconds"])
            if key.endswith(":digests"):
                size = ratio(b["bytes"], a["bytes"])
                p("| %s: growth linear in the image file's size (every byte is hashed) | time x%.2f for x%.1f bytes | %s |" % (
                    a[key]["name"], g, size, "yes" if g <= size * 1.15 else "**no** (x%.2f per byte)" % (g / size)))
            else:
                p("| %s: growth linear in used blocks and files | time x%.2f for x%.2f used blocks, x%.2f files | %s |" % (
                    a[key]["name"], g, used, files,
                    "yes" if g <= max(used, files) * 1.15 else "**no** (x%.2f per used block)" % (g / used)))
        for key, name in (("check", "rfsck check"), ("dry", "rfsck rebuild --dry-run"),
                          ("rebuild", "rfsck rebuild --output"), ("inplace", "rfsck rebuild in place")):
            ma = a[key]["peak_kib"] / a["blocks"]
            mb = b[key]["peak_kib"] / b["blocks"]
            p("| %s memory per block flat | %.0f -> %.0f bytes/block (%.0f -> %.0f MiB) | %s |" % (
                name, ma * 1024, mb * 1024, a[key]["peak_kib"] / 1024, b[key]["peak_kib"] / 1024,
                "yes (falls)" if mb <= ma * 1.15 else "**no** (x%.2f)" % (mb / ma)))
    p("")
    for s in scale:
        scale_section(p, s, res[-1] if res else None)
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
