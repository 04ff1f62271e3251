#!/usr/bin/env python3
"""rebuild_case.py - shared helper of tests/integration/rebuild_*.sh.

Subcommands (all print to stdout; exit 0 = ok, 1 = assertion failed, 2 = usage):

  damage RECIPE SEED N ORIG OUT RECORD [--manifest M]
        damage.py's apply() (RECIPE "none" = plain copy, record with no blocks)
  analyze ORIG TRUTH RECORD [--damaged D]
        which ground-truth entries lived in the destroyed leaves (JSON)
  read RFSCK IMAGE OUT [--offset N] [--reader fast|cat]
        manifest of IMAGE as rfsck reads it.  "cat" = corpus/tools/read-rfsck's
        method (ls -R --json + one `rfsck cat` per file); "fast" = ls -R --json
        + one `rfsck salvage` whose extracted files are hashed here (objects by
        objectid; the scripts cross-check both readers on one case per image).
  same-manifest A B
        two manifests agree on path, type and content (sha256/target/rdev)
  verify CASE TRUTH RESULT REPORT RECORD ORIG --expect intact|loss [--damaged D]
        the strict rule (see verify()); prints one line, details on failure
  schema REPORT dry-run|rebuild
        the --json report has the contract's fields with the contract's types
  nested-offset ORIG TRUTH NESTED_JSON
        byte offset of the nested image file's first data block in ORIG
  same-plan DRY REAL [MODE_A MODE_B]
        a dry-run report and the real run's report (or two dry runs) describe
        the same rebuild
  diff-blocks A B
        number of BLOCKSIZE blocks that differ between two equal-sized images
  expect-intact CASE TRUTH RESULT
        every truth entry intact, 0 foreign, nothing under /lost+found
  nested-check CASE REPORT RESULT NESTED_JSON TRUTH OFFSET intact|damaged
        report.nested names the volume at OFFSET (superblock block, block size
        and count; holder = the image file when intact); no inner file's
        content or path appears in the rebuilt outer image
  same-fs A B
        byte-identical, or different only in stat data atime/mtime/ctime
        fields (wall-clock stamps of created stat data); says which
  inner-truth NESTED_JSON OUT
        the inner image's ground truth (nested.json inner_manifest) as JSONL

The destroyed-leaf model ("analyze"): damage.py's record names the leaves it
zeroed (blocks_zeroed) or flipped bits in (bits_flipped).  The ORIGINAL image's
leaves are parsed (rcorpus.Fs) to find, for every ground-truth path, where its
stat data item, its directory entry (the name in the parent's directory item)
and its body items (direct / indirect) lived.  A path is
  lost     if its stat data or its name lived in a destroyed leaf, or its
           parent path is lost (a lost directory takes its subtree's paths);
  data_hit if a body item of its object lived in a destroyed leaf;
  flipped  (flip-leaves only) if a flipped bit fell into its stat data, its
           body items, its directory entry, an item head of its object (before
           or after the flip) or the block head of a leaf holding any of these;
  touched  if any of the above.
"""
import hashlib
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile

TOP = os.environ.get("TOP") or os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(TOP, "corpus", "tools"))
import rcorpus  # noqa: E402
import score as scorer  # noqa: E402
import damage as damager  # noqa: E402

DEH_VISIBLE = 1 << 2
TOO_LARGE = 1 << 30  # files above 1 GiB are not hashed (corpus files are far smaller)
LF_HEX = "/lost+found".encode().hex()


def die(msg):
    print(msg)
    sys.exit(1)


# ---------------------------------------------------------------------------
# damage
# ---------------------------------------------------------------------------

def cmd_damage(a):
    recipe, seed, n, orig, out, record = a[:6]
    manifest = a[a.index("--manifest") + 1] if "--manifest" in a else None
    seed = int(seed)
    n = int(n) if n not in ("-", "") else None
    if recipe == "none":
        shutil.copyfile(orig, out)
        rec = {"recipe": "none", "seed": seed, "blocks_zeroed": [], "bits_flipped": [],
               "source_sha256": rcorpus.sha256_file(orig)}
        rec["result_sha256"] = rec["source_sha256"]
    else:
        rec = damager.apply(recipe, orig, out, seed, n, manifest)
    with open(record, "w") as f:
        json.dump(rec, f, indent=1)
    return 0


# ---------------------------------------------------------------------------
# leaf analysis
# ---------------------------------------------------------------------------

def dir_entries(body, count):
    """(deh_index, deh_offset, dirid, objectid, state, name, name_lo, name_hi)"""
    out = []
    end = len(body)
    for j in range(count):
        o = 16 * j
        if o + 16 > len(body):
            break
        doff, ddir, doid, loc, state = struct.unpack_from("<IIIHH", body, o)
        if loc > end or loc < 16 * count:
            end = loc
            continue
        name = body[loc:end].rstrip(b"\0")
        out.append((j, doff, ddir, doid, state, name, loc, end))
        end = loc
    return out


def leaf_index(fs, leaves, blocks_override=None):
    """Per leaf: items with their bodies.  blocks_override: {block: bytes}."""
    idx = {}
    for b in leaves:
        blk = (blocks_override or {}).get(b) or fs.read_block(b)
        level = struct.unpack_from("<H", blk, 0)[0] if len(blk) >= 2 else 0
        items = []
        if level == 1:
            for i, it in enumerate(fs.leaf_items(blk)):
                it = dict(it, index=i)
                it["body"] = blk[it["loc"]:it["loc"] + it["len"]] if it["loc"] + it["len"] <= len(blk) else b""
                items.append(it)
        idx[b] = items
    return idx


def analyze(orig, truth, rec, damaged=None):
    fs = rcorpus.Fs(orig)
    bs = fs.blocksize
    leaves, _internals = damager.tree_nodes(fs)
    zeroed = set(rec.get("blocks_zeroed") or [])
    flips = rec.get("bits_flipped") or []
    flipped_leaves = {f["block"] for f in flips}
    destroyed = (zeroed | flipped_leaves) & set(leaves)
    other_zeroed = sorted(zeroed - set(leaves))  # root, internal nodes, bitmaps: no items
    idx = leaf_index(fs, leaves)

    sd_at, body_at, name_at = {}, {}, {}
    for b, items in idx.items():
        for it in items:
            if it["type"] == "sd":
                sd_at.setdefault(it["oid"], set()).add(b)
            elif it["type"] in ("direct", "indirect"):
                body_at.setdefault(it["oid"], set()).add(b)
            elif it["type"] == "dir":
                for (_j, _doff, _ddir, doid, state, name, _lo, _hi) in dir_entries(it["body"], it["count"]):
                    if state & DEH_VISIBLE and name not in (b".", b".."):
                        name_at.setdefault((it["oid"], name, doid), set()).add(b)

    # flip-leaves: what each flipped byte hit
    flip_oids = set()          # objects whose SD / body / item head got a flipped bit
    flip_names = set()         # (parent_oid, name, child_oid) whose dir entry got a flipped bit
    flip_whole_leaf = set()    # leaves with a flipped block-head byte
    dmg_blocks = {}
    if flips and damaged:
        dfs = rcorpus.Fs(damaged)
        dmg_blocks = {b: dfs.read_block(b) for b in flipped_leaves}
    for f in flips:
        b, byte = f["block"], f["byte"]
        if b not in idx:
            continue
        items = idx[b]
        if byte < 24:
            flip_whole_leaf.add(b)
            continue
        nr = len(items)
        if byte < 24 + 24 * nr:
            it = items[(byte - 24) // 24]
            flip_oids.add(it["oid"])
            if b in dmg_blocks:  # the item head as it reads after the flip: its new owner
                o = 24 + 24 * it["index"]
                _dirid, new_oid = struct.unpack_from("<II", dmg_blocks[b], o)
                flip_oids.add(new_oid)
            continue
        for it in items:
            if it["loc"] <= byte < it["loc"] + it["len"]:
                if it["type"] == "dir":
                    rel = byte - it["loc"]
                    ents = dir_entries(it["body"], it["count"])
                    # a flipped entry head j moves name j and the end of name j+1
                    heads = {e[0] for e in ents if 16 * e[0] <= rel < 16 * e[0] + 16}
                    hit = [e for e in ents if e[0] in heads or e[0] - 1 in heads or e[6] <= rel < e[7]]
                    for e in hit:
                        flip_names.add((it["oid"], e[5], e[3]))
                    if not hit:  # entry heads we could not parse: the whole item
                        for e in ents:
                            flip_names.add((it["oid"], e[5], e[3]))
                else:
                    flip_oids.add(it["oid"])
                break
    for b in flip_whole_leaf:
        for it in idx[b]:
            flip_oids.add(it["oid"])
            if it["type"] == "dir":
                for e in dir_entries(it["body"], it["count"]):
                    flip_names.add((it["oid"], e[5], e[3]))

    T = {e["path_hex"]: e for e in truth}
    res = {}
    problems = []
    for ph in sorted(T, key=lambda h: bytes.fromhex(h)):
        e = T[ph]
        raw = bytes.fromhex(ph)
        if raw == b"/":
            continue
        ino = e["ino"]
        parent_raw, name = raw.rsplit(b"/", 1)
        parent_hex = (parent_raw or b"/").hex()
        pe = T.get(parent_hex)
        if pe is None:
            problems.append("no parent in manifest for %r" % raw)
            continue
        where_name = name_at.get((pe["ino"], name, ino))
        if not where_name:
            problems.append("name %r of %r not found in any leaf of the original image" % (name, raw))
            where_name = set()
        where_sd = sd_at.get(ino, set())
        if not where_sd:
            problems.append("stat data of %r (oid %d) not found in any leaf" % (raw, ino))
        sd_lost = bool(where_sd & destroyed)
        name_lost = bool(where_name & destroyed)
        parent = res.get(parent_hex)
        parent_lost = bool(parent and parent["lost"])
        data_hit = bool(body_at.get(ino, set()) & destroyed)
        flipped = (ino in flip_oids) or ((pe["ino"], name, ino) in flip_names)
        r = {"path": e["path"], "ino": ino, "type": e["type"], "sd_lost": sd_lost, "name_lost": name_lost,
             "parent_lost": parent_lost, "data_hit": data_hit, "flipped": flipped,
             "leaves": sorted(where_sd | where_name | body_at.get(ino, set()))}
        r["lost"] = sd_lost or name_lost or parent_lost
        r["touched"] = r["lost"] or data_hit or flipped
        res[ph] = r
    return {"destroyed_leaves": sorted(destroyed), "flipped_leaves": sorted(flipped_leaves),
            "zeroed_non_leaves": other_zeroed, "tree_leaves": len(leaves), "blocksize": bs,
            "entries": res, "problems": problems}


def cmd_analyze(a):
    orig, truth, record = a[:3]
    damaged = a[a.index("--damaged") + 1] if "--damaged" in a else None
    with open(record) as f:
        rec = json.load(f)
    an = analyze(orig, rcorpus.read_manifest(truth), rec, damaged)
    summary = {"destroyed_leaves": an["destroyed_leaves"], "problems": an["problems"]}
    for k in ("lost", "sd_lost", "name_lost", "data_hit", "flipped", "touched"):
        summary[k] = sorted(r["path"] for r in an["entries"].values() if r[k])
    print(json.dumps(summary, indent=1, ensure_ascii=False))
    return 1 if an["problems"] else 0


# ---------------------------------------------------------------------------
# readers
# ---------------------------------------------------------------------------

def rfsck_ls(rfsck, image, offset=None):
    cmd = [rfsck, "ls", "-R", "--json"] + (["--offset", str(offset)] if offset is not None else []) + [image]
    p = subprocess.run(cmd, capture_output=True, timeout=600)
    if p.returncode != 0:
        raise SystemExit("rfsck ls -R --json failed (exit %d): %s" %
                         (p.returncode, p.stderr.decode("utf-8", "replace")[-800:]))
    return json.loads(p.stdout.decode("utf-8"))["entries"]


def to_manifest_entry(e):
    ph = e["path_hex"].lower()
    if not ph.startswith("2f"):
        ph = "2f" + ph
    m = {"path": rcorpus.path_text(bytes.fromhex(ph)), "path_hex": ph, "type": e.get("type"),
         "size": e.get("size"), "mode": e.get("mode"), "uid": e.get("uid"), "gid": e.get("gid"),
         "mtime": e.get("mtime"), "nlink": e.get("nlink"), "ino": e.get("objectid"), "dirid": e.get("dirid")}
    if m["type"] == "symlink":
        m["target_hex"] = e.get("target_hex")
    if m["type"] in ("chr", "blk") and "rdev" in e:
        m["rdev"] = e["rdev"]
    return m


def read_image(rfsck, image, out, offset=None, reader="fast"):
    ents = rfsck_ls(rfsck, image, offset)
    man = [to_manifest_entry(e) for e in ents]
    off = ["--offset", str(offset)] if offset is not None else []
    if reader == "cat":
        for m in man:
            if m["type"] == "file" and (m.get("size") or 0) > TOO_LARGE:
                m["sha256"] = "SKIPPED_TOO_LARGE"
            elif m["type"] == "file":
                p = subprocess.run([rfsck, "cat"] + off + [image, bytes.fromhex(m["path_hex"])],
                                   capture_output=True, timeout=600)
                m["sha256"] = hashlib.sha256(p.stdout).hexdigest() if p.returncode == 0 else "ERROR"
    else:
        d = tempfile.mkdtemp(prefix="rbread-", dir=os.path.dirname(os.path.abspath(out)))
        try:
            sv = os.path.join(d, "s")
            p = subprocess.run([rfsck, "salvage", "-q"] + off + [image, sv], capture_output=True, timeout=600)
            by_oid = {}
            if os.path.exists(os.path.join(sv, "manifest.jsonl")):
                with open(os.path.join(sv, "manifest.jsonl")) as f:
                    for line in f:
                        s = json.loads(line)
                        if s.get("type") != "file" or not s.get("extracted_as"):
                            continue
                        if (s.get("size") or 0) > TOO_LARGE:  # as the guest helper: never hash > 1 GiB
                            by_oid[s["key"][1]] = "SKIPPED_TOO_LARGE"
                            continue
                        if s.get("status") not in ("complete",):
                            by_oid[s["key"][1]] = "ERROR:" + str(s.get("status"))
                            continue
                        rel = bytes.fromhex(s["extracted_as_hex"]) if s.get("extracted_as_hex") \
                            else os.fsencode(s["extracted_as"])
                        fp = os.path.join(sv.encode(), rel)
                        h = hashlib.sha256()
                        with open(fp, "rb") as g:
                            for chunk in iter(lambda: g.read(1 << 20), b""):
                                h.update(chunk)
                        by_oid[s["key"][1]] = h.hexdigest()
            elif p.returncode != 0:
                print("read: salvage failed (exit %d): %s" % (p.returncode, p.stderr.decode("utf-8", "replace")[-500:]),
                      file=sys.stderr)
            for m in man:
                if m["type"] == "file":
                    m["sha256"] = by_oid.get(m["ino"], "ERROR")
        finally:
            shutil.rmtree(d, ignore_errors=True)
    rcorpus.write_manifest(out, man)
    return man


def cmd_read(a):
    rfsck, image, out = a[:3]
    offset = a[a.index("--offset") + 1] if "--offset" in a else None
    reader = a[a.index("--reader") + 1] if "--reader" in a else os.environ.get("REBUILD_READER", "fast")
    read_image(rfsck, image, out, offset, reader)
    return 0


def cmd_same_manifest(a):
    A = {e["path_hex"]: scorer.content_key(e) + (e.get("type"),) for e in rcorpus.read_manifest(a[0])}
    B = {e["path_hex"]: scorer.content_key(e) + (e.get("type"),) for e in rcorpus.read_manifest(a[1])}
    diff = sorted(k for k in set(A) | set(B) if A.get(k) != B.get(k))
    if diff:
        for k in diff[:10]:
            print("  %s: %s vs %s" % (bytes.fromhex(k).decode("utf-8", "backslashreplace"), A.get(k), B.get(k)))
        die("the two readers disagree on %d entries" % len(diff))
    print("readers agree on %d entries" % len(A))
    return 0


# ---------------------------------------------------------------------------
# report schema
# ---------------------------------------------------------------------------

def check_schema(rep, mode):
    bad = []

    def need(obj, key, types, where):
        if not isinstance(obj, dict) or key not in obj:
            bad.append("%s.%s missing" % (where, key))
            return None
        v = obj[key]
        if not isinstance(v, types) or (isinstance(v, bool) and bool not in (types if isinstance(types, tuple) else (types,))):
            bad.append("%s.%s has type %s" % (where, key, type(v).__name__))
            return None
        return v

    if need(rep, "mode", str, "") not in (mode,):
        bad.append("mode %r, %r expected" % (rep.get("mode"), mode))
    sc = need(rep, "scan", dict, "")
    if sc is not None:
        if need(sc, "mode", str, "scan") not in ("used", "all"):
            bad.append("scan.mode %r" % sc.get("mode"))
        need(sc, "reason", str, "scan")
        for k in ("blocks_scanned", "candidates", "journal_copies", "internal_nodes"):
            need(sc, k, int, "scan")
    h = need(rep, "hash", dict, "")
    if h is not None:
        if need(h, "name", str, "hash") not in ("r5", "tea", "rupasov"):
            bad.append("hash.name %r" % h.get("name"))
        if need(h, "source", str, "hash") not in ("superblock", "majority", "option"):
            bad.append("hash.source %r" % h.get("source"))
    lv = need(rep, "leaves", dict, "")
    if lv is not None:
        need(lv, "accepted", int, "leaves")
        need(lv, "rejected", int, "leaves")
        rb = need(lv, "rejected_by_reason", dict, "leaves")
        if rb is not None:
            if not all(isinstance(v, int) for v in rb.values()):
                bad.append("leaves.rejected_by_reason values must be int")
            elif isinstance(lv.get("rejected"), int) and sum(rb.values()) != lv["rejected"]:
                bad.append("leaves.rejected %d != sum(rejected_by_reason) %d" % (lv["rejected"], sum(rb.values())))
    ne = need(rep, "nested", list, "")
    for i, n in enumerate(ne or []):
        for k in ("superblock_block", "offset", "block_size", "block_count", "leaves_excluded"):
            need(n, k, int, "nested[%d]" % i)
        need(n, "libmagic", str, "nested[%d]" % i)
        if not isinstance(n, dict) or "holder" not in n:
            bad.append("nested[%d].holder missing" % i)
        elif n["holder"] is not None:
            need(n["holder"], "dir_id", int, "nested[%d].holder" % i)
            need(n["holder"], "objectid", int, "nested[%d].holder" % i)
            if "path" not in n["holder"] or not (n["holder"]["path"] is None or isinstance(n["holder"]["path"], str)):
                bad.append("nested[%d].holder.path must be str or null" % i)
    need(rep, "conflicts", int, "")
    ob = need(rep, "objects", dict, "")
    if ob is not None:
        for k in ("by_name", "lost_found", "partial", "entries_removed"):
            need(ob, k, int, "objects")
    pf = need(rep, "partial_files", list, "")
    for i, p in enumerate(pf or []):
        if not isinstance(p, dict):
            bad.append("partial_files[%d] not an object" % i)
            continue
        if "path" not in p or not (p["path"] is None or isinstance(p["path"], str)):
            bad.append("partial_files[%d].path must be str or null" % i)
        need(p, "dir_id", int, "partial_files[%d]" % i)
        need(p, "objectid", int, "partial_files[%d]" % i)
        ms = need(p, "missing", list, "partial_files[%d]" % i)
        if ms is not None:
            for r in ms:  # may be empty: partial for another reason (e.g. created stat data)
                if not (isinstance(r, list) and len(r) == 2 and all(isinstance(x, int) for x in r) and r[0] < r[1]):
                    bad.append("partial_files[%d].missing has a bad range %r" % (i, r))
    if ob is not None and pf is not None and isinstance(ob.get("partial"), int) and ob["partial"] != len(pf):
        bad.append("objects.partial %d != len(partial_files) %d" % (ob["partial"], len(pf)))
    tr = need(rep, "tree", dict, "")
    if tr is not None:
        for k in ("leaves", "kept_in_place", "new_leaves", "internal_nodes", "height", "root"):
            need(tr, k, int, "tree")
        if all(isinstance(tr.get(k), int) for k in ("leaves", "kept_in_place", "new_leaves")) and \
                tr["kept_in_place"] + tr["new_leaves"] != tr["leaves"]:
            bad.append("tree: kept_in_place %d + new_leaves %d != leaves %d" %
                       (tr["kept_in_place"], tr["new_leaves"], tr["leaves"]))
    need(rep, "blocks_written", int, "")
    ws = need(rep, "written_blocks_sha256", str, "")
    if ws is not None and not re.fullmatch(r"[0-9a-f]{64}", ws):
        bad.append("written_blocks_sha256 %r is not a sha256" % ws)
    return bad


def load_report(path):
    with open(path) as f:
        text = f.read()
    try:
        return json.loads(text)
    except ValueError as e:
        die("the --json output is not exactly one JSON object (%s): %r" % (e, text[:300]))


def cmd_schema(a):
    rep = load_report(a[0])
    bad = check_schema(rep, a[1])
    if bad:
        die("report does not follow the contract: " + "; ".join(bad))
    return 0


# ---------------------------------------------------------------------------
# verify
# ---------------------------------------------------------------------------

def verify(case, truth_p, result_p, report_p, record_p, orig, expect, damaged=None):
    truth = rcorpus.read_manifest(truth_p)
    result = rcorpus.read_manifest(result_p)
    rep = load_report(report_p)
    with open(record_p) as f:
        rec = json.load(f)
    s = scorer.score(truth, result, details=20)
    line = ("truth %(truth_entries)d intact %(intact)d corrupted %(corrupted)d missing %(missing)d "
            "foreign %(foreign)d lost+found %(lost_found)d meta %(meta_differs)d" % s)
    bad = ["report: " + b for b in check_schema(rep, "rebuild")]
    if s["foreign"] != 0:
        bad.append("foreign entries (outside /lost+found, not in the ground truth): %d" % s["foreign"])
    R = {e["path_hex"]: e for e in result}
    T = {e["path_hex"]: e for e in truth}
    partial = rep.get("partial_files") or []
    partial_oids = {p.get("objectid") for p in partial if isinstance(p, dict)}
    partial_paths = {p.get("path") for p in partial if isinstance(p, dict) and p.get("path") is not None}
    # every partial file named by a path must be in the result as a file
    rpaths = {e["path"] for e in result}
    for p in partial:
        if isinstance(p, dict) and p.get("path") is not None and p["path"] not in rpaths:
            bad.append("partial_files names %r, which the rebuilt image does not have" % p["path"])
    # lost+found: top-level names are DIRID_OBJECTID; as many as objects.lost_found
    lf_top = [e for e in result if e["path_hex"].startswith(LF_HEX + "2f")
              and b"/" not in bytes.fromhex(e["path_hex"])[len("/lost+found/"):]]
    for e in lf_top:
        if not re.fullmatch(r"/lost\+found/\d+_\d+", e["path"]):
            bad.append("lost+found entry %r is not named DIRID_OBJECTID" % e["path"])
    nlf = (rep.get("objects") or {}).get("lost_found")
    if isinstance(nlf, int) and nlf != len(lf_top):
        bad.append("report objects.lost_found %d, /lost+found holds %d entries" % (nlf, len(lf_top)))
    if expect == "intact":
        if s["intact"] != s["truth_entries"]:
            bad.append("not every ground-truth entry is intact: %d of %d" % (s["intact"], s["truth_entries"]))
        if s["lost_found"] != 0:
            bad.append("%d entries under /lost+found (expected none)" % s["lost_found"])
        if s["meta_differs"] != 0:
            bad.append("%d intact entries with different metadata" % s["meta_differs"])
        if partial:
            bad.append("%d partial files reported (expected none)" % len(partial))
        an = None
    else:
        an = analyze(orig, truth, rec, damaged)
        if an["problems"]:
            bad.append("leaf analysis of the original image: " + "; ".join(an["problems"][:5]))
        per = an["entries"]
        viol = []
        for ph, t in T.items():
            if ph == "2f" or scorer.under(ph, scorer.PRIV):
                continue
            a = per.get(ph)
            if a is None:
                continue
            r = R.get(ph)
            if r is not None and not a["touched"] and scorer.content_key(r) == scorer.content_key(t):
                # an untouched object keeps its stat data (nlink may change with lost other names)
                fields = ["mode", "uid", "gid", "mtime"] + ([] if t["type"] == "dir" else ["size"])
                diff = [f for f in fields if t.get(f) is not None and r.get(f) is not None and t[f] != r[f]]
                if diff:
                    viol.append("intact but untouched %s has different %s: %s" % (
                        t["path"], ",".join(diff), ", ".join("%s %r -> %r" % (f, t[f], r[f]) for f in diff)))
                continue
            if r is None:
                state = "missing"
            elif scorer.content_key(r) != scorer.content_key(t):
                state = "corrupted"
            else:
                continue
            listed = t["ino"] in partial_oids or t["path"] in partial_paths
            why = ",".join(k for k in ("sd_lost", "name_lost", "parent_lost", "data_hit", "flipped") if a[k]) or "untouched"
            if not a["touched"]:
                viol.append("%s %s: untouched by the damage (leaves %s), must be intact%s" %
                            (state, t["path"], a["leaves"], " (listed partial)" if listed else ""))
            elif listed:
                continue
            elif state == "missing" and a["lost"]:
                continue
            elif state == "corrupted" and a["flipped"]:
                continue  # a flipped bit inside its items: undetectable by design
            else:
                viol.append("%s %s [%s, leaves %s]: not listed in partial_files" % (state, t["path"], why, a["leaves"]))
        if viol:
            bad.append("%d ground-truth entries break the rule:\n    " % len(viol) + "\n    ".join(viol[:25]))
        nlost = sum(1 for v in per.values() if v["lost"])
        ntouch = sum(1 for v in per.values() if v["touched"])
        line += " | destroyed leaves %s: %d paths may be lost, %d touched; partial %d" % (
            an["destroyed_leaves"], nlost, ntouch, len(partial))
    return line, bad, s


def cmd_verify(a):
    case, truth_p, result_p, report_p, record_p, orig = a[:6]
    expect = a[a.index("--expect") + 1]
    damaged = a[a.index("--damaged") + 1] if "--damaged" in a else None
    line, bad, s = verify(case, truth_p, result_p, report_p, record_p, orig, expect, damaged)
    if bad:
        print("FAIL %s: %s" % (case, line))
        for b in bad:
            print("  - " + b)
        print("  score.py --details:")
        print("    " + json.dumps(s.get("details"), ensure_ascii=False)[:3000])
        return 1
    print("ok %s: %s" % (case, line))
    return 0


# ---------------------------------------------------------------------------
# nested / dry-run helpers
# ---------------------------------------------------------------------------

def nested_offset(orig, truth_p, nested_p):
    with open(nested_p) as f:
        side = json.load(f)
    ino = [e for e in rcorpus.read_manifest(truth_p) if e["path"] == side["nested_path"]][0]["ino"]
    fs = rcorpus.Fs(orig)
    leaves, _ = damager.tree_nodes(fs)
    best = None
    for b in leaves:
        blk = fs.read_block(b)
        for it in fs.leaf_items(blk):
            if it["oid"] == ino and it["type"] == "indirect" and (best is None or it["offset"] < best[0]):
                body = blk[it["loc"]:it["loc"] + it["len"]]
                best = (it["offset"], struct.unpack_from("<I", body, 0)[0])
    if best is None or best[0] != 1 or best[1] == 0:
        raise SystemExit("nested file %s: no first data block (%r)" % (side["nested_path"], best))
    return best[1] * fs.blocksize


def cmd_nested_offset(a):
    print(nested_offset(*a[:3]))
    return 0


def cmd_expect_intact(a):
    """CASE TRUTH RESULT: every truth entry intact, nothing foreign, no lost+found."""
    case, truth_p, result_p = a[:3]
    s = scorer.score(rcorpus.read_manifest(truth_p), rcorpus.read_manifest(result_p), details=20)
    line = ("truth %(truth_entries)d intact %(intact)d corrupted %(corrupted)d missing %(missing)d "
            "foreign %(foreign)d lost+found %(lost_found)d" % s)
    if s["intact"] != s["truth_entries"] or s["foreign"] or s["lost_found"]:
        print("FAIL %s: %s" % (case, line))
        print("  score.py --details: " + json.dumps(s["details"], ensure_ascii=False)[:3000])
        return 1
    print("ok %s: %s" % (case, line))
    return 0


def cmd_nested_check(a):
    """CASE REPORT RESULT NESTED_JSON TRUTH OFFSET KIND (intact|damaged):
    the report names the nested volume at OFFSET; no inner content leaked into
    the rebuilt outer image; KIND intact: the holder is the image file and the
    image file is byte-identical."""
    case, report_p, result_p, side_p, truth_p, offset, kind = a[:7]
    offset = int(offset)
    rep = load_report(report_p)
    with open(side_p) as f:
        side = json.load(f)
    truth = rcorpus.read_manifest(truth_p)
    result = rcorpus.read_manifest(result_p)
    ino = [e for e in truth if e["path"] == side["nested_path"]][0]["ino"]
    bad = []
    nested = rep.get("nested") or []
    hits = [n for n in nested if isinstance(n, dict) and n.get("offset") == offset]
    if not hits:
        bad.append("report.nested has no volume at offset %d: %s" % (offset, json.dumps(nested)[:600]))
    else:
        n = hits[0]
        bs = n.get("block_size")
        if bs != 4096:
            bad.append("nested block_size %r, 4096 expected" % bs)
        elif n.get("superblock_block") != (offset + 65536) // bs:
            bad.append("nested superblock_block %r, %d expected" % (n.get("superblock_block"), (offset + 65536) // bs))
        if n.get("block_count") != side["nested_size"] // 4096:
            bad.append("nested block_count %r, %d expected" % (n.get("block_count"), side["nested_size"] // 4096))
        h = n.get("holder")
        if kind == "intact":
            if not h or h.get("objectid") != ino:
                bad.append("nested holder %r, objectid %d (%s) expected" % (h, ino, side["nested_path"]))
            elif h.get("path") is not None and h["path"] != side["nested_path"]:
                bad.append("nested holder path %r, %r expected" % (h["path"], side["nested_path"]))
        elif h is not None and h.get("objectid") != ino:
            bad.append("nested holder %r is not the image file (objectid %d)" % (h, ino))
    if kind == "intact":
        img = [e for e in result if e["path_hex"] == side["nested_path_hex"]]
        if not img or img[0].get("sha256") != side["nested_sha256"]:
            bad.append("%s in the rebuilt image: %s, sha256 %s expected" %
                       (side["nested_path"], img[0].get("sha256") if img else "absent", side["nested_sha256"]))
    outer_sha = {e.get("sha256") for e in truth if e["type"] == "file"}
    inner_sha = {e["sha256"] for e in side["inner_manifest"] if e["type"] == "file"} - outer_sha
    inner_paths = {e["path_hex"] for e in side["inner_manifest"]
                   if e["path_hex"] != "2f" and not scorer.under(e["path_hex"], scorer.PRIV)}
    inner_paths -= {e["path_hex"] for e in truth}
    leaked = [e["path"] for e in result if e.get("sha256") in inner_sha or e["path_hex"] in inner_paths]
    if leaked:
        bad.append("%d entries of the rebuilt outer image carry inner files (content or path): %s" %
                   (len(leaked), leaked[:10]))
    if bad:
        print("FAIL %s (nested):\n  - %s" % (case, "\n  - ".join(bad)))
        return 1
    print("nested volume at offset %d reported%s; no inner file in the outer tree" %
          (offset, ", holder %s" % side["nested_path"] if kind == "intact" else ""))
    return 0


def cmd_inner_truth(a):
    """NESTED_JSON OUT: the inner image's manifest as a JSON Lines file."""
    with open(a[0]) as f:
        rcorpus.write_manifest(a[1], json.load(f)["inner_manifest"])
    return 0


PLAN_KEYS = ("scan", "hash", "leaves", "nested", "conflicts", "objects", "partial_files", "tree",
             "blocks_written", "written_blocks_sha256", "repairs_after_build", "check_after")


def cmd_same_plan(a):
    d, r = load_report(a[0]), load_report(a[1])
    ma, mb = (a[2], a[3]) if len(a) >= 4 else ("dry-run", "rebuild")
    bad = ["first report: " + b for b in check_schema(d, ma)]
    bad += ["second report: " + b for b in check_schema(r, mb)]
    for k in PLAN_KEYS:
        if d.get(k) != r.get(k):
            bad.append("%s differs: dry-run %s / real %s" % (k, json.dumps(d.get(k))[:400], json.dumps(r.get(k))[:400]))
    if bad:
        die("the reports differ (%s vs %s):\n  - " % (ma, mb) + "\n  - ".join(bad))
    print("same plan: %d blocks, %s" % (d["blocks_written"], d["written_blocks_sha256"][:16]))
    return 0


def cmd_diff_blocks(a):
    bs = rcorpus.Fs(a[0]).blocksize
    n = 0
    with open(a[0], "rb") as f, open(a[1], "rb") as g:
        while True:
            x, y = f.read(bs), g.read(bs)
            if not x and not y:
                break
            if x != y:
                n += 1
    print(n)
    return 0


def cmd_same_fs(a):
    """A B: the two images are byte-identical, or differ only inside the
    atime/mtime/ctime fields of stat data items (stat data the rebuild created
    and stamped with the wall clock).  Prints what differs; exit 1 otherwise."""
    fa, fb = rcorpus.Fs(a[0]), rcorpus.Fs(a[1])
    bs = fa.blocksize
    if os.path.getsize(a[0]) != os.path.getsize(a[1]):
        die("sizes differ: %d vs %d" % (os.path.getsize(a[0]), os.path.getsize(a[1])))
    nblocks = os.path.getsize(a[0]) // bs
    other, times = [], []
    with open(a[0], "rb") as f, open(a[1], "rb") as g:
        for b in range(nblocks):
            x, y = f.read(bs), g.read(bs)
            if x == y:
                continue
            diff = [i for i in range(bs) if x[i] != y[i]]
            ok = False
            if struct.unpack_from("<H", x, 0)[0] == 1 and x[:24 + 24 * struct.unpack_from("<H", x, 2)[0]] == \
                    y[:24 + 24 * struct.unpack_from("<H", y, 2)[0]]:
                allowed = set()
                for it in fa.leaf_items(x):
                    if it["type"] == "sd" and it["len"] == 44:   # v2: atime 24, mtime 28, ctime 32
                        allowed |= set(range(it["loc"] + 24, it["loc"] + 36))
                    elif it["type"] == "sd" and it["len"] == 32:  # v1: atime 16, mtime 20, ctime 24
                        allowed |= set(range(it["loc"] + 16, it["loc"] + 28))
                ok = all(i in allowed for i in diff)
            (times if ok else other).append(b)
    if other:
        die("the images differ in %d blocks outside stat data times: %s" % (len(other), other[:20]))
    if times:
        print("identical except stat data times in %d leaves %s (wall-clock stamps: not reproducible)" %
              (len(times), times[:10]))
    else:
        print("byte-identical")
    return 0


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    cmds = {"damage": cmd_damage, "analyze": cmd_analyze, "read": cmd_read, "same-manifest": cmd_same_manifest,
            "verify": cmd_verify, "schema": cmd_schema, "nested-offset": cmd_nested_offset,
            "same-plan": cmd_same_plan, "diff-blocks": cmd_diff_blocks, "expect-intact": cmd_expect_intact,
            "nested-check": cmd_nested_check, "inner-truth": cmd_inner_truth, "same-fs": cmd_same_fs}
    c = cmds.get(sys.argv[1])
    if c is None:
        print(__doc__)
        return 2
    return c(sys.argv[2:])


if __name__ == "__main__":
    sys.exit(main())
