#!/bin/sh
# selftest.sh - quick, kernel-free self-test of the corpus tools (no qemu):
# damage.py on a shipped image (every recipe, twice with the same seed =>
# identical results), the nested-leaf lookup, score.py on identical and on
# edited manifests, oracle.py check on a shipped image.  Needs xz, python3,
# reiserfsprogs.  Prints 'N passed, N failed'; exit 1 on any failure.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
C=$(dirname "$HERE")
T=$(mktemp -d "${TMPDIR:-/tmp}/rfsck-selftest.XXXXXX")
trap 'rm -rf "$T"' EXIT
pass=0; fail=0
ok()  { pass=$((pass+1)); echo "ok   $1"; }
bad() { fail=$((fail+1)); echo "FAIL $1"; }
xz -dc "$C/images/r36-features-r5.img.xz" > "$T/f.img"
xz -dc "$C/images/r36-nested.img.xz" > "$T/n.img"
for r in zero-root zero-internal zero-bitmaps zero-super zero-leaves flip-leaves truncate zero-journal-header; do
    python3 "$HERE/damage.py" "$r" "$T/f.img" "$T/d1.img" --seed 7 --record "$T/r1.json" > /dev/null
    python3 "$HERE/damage.py" "$r" "$T/f.img" "$T/d2.img" --seed 7 --record "$T/r2.json" > /dev/null
    if cmp -s "$T/d1.img" "$T/d2.img" && ! cmp -s "$T/f.img" "$T/d1.img"; then ok "damage $r deterministic and effective"
    else bad "damage $r"; fi
done
python3 "$HERE/damage.py" zero-nested-leaf "$T/n.img" "$T/dn.img" --manifest "$C/images/r36-nested.manifest.jsonl" \
    --record "$T/rn.json" > /dev/null
if python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); sys.exit(0 if r["blocks_zeroed"] and r["leaves_with_nested_indirect_items"] else 1)' "$T/rn.json"
then ok "damage zero-nested-leaf finds the leaf"; else bad "damage zero-nested-leaf"; fi
M="$C/images/r36-features-r5.manifest.jsonl"
if python3 "$HERE/score.py" --json "$M" "$M" | python3 -c 'import json,sys; s=json.load(sys.stdin); sys.exit(0 if s["intact"]==s["truth_entries"] and s["missing"]==s["foreign"]==s["corrupted"]==0 else 1)'
then ok "score identical manifests"; else bad "score identical manifests"; fi
python3 - "$M" "$T/edit.jsonl" <<'PY'
import json, sys
ents = [json.loads(l) for l in open(sys.argv[1])]
files = [e for e in ents if e["type"] == "file"]
files[0]["sha256"] = "0" * 64                      # corrupted
ents.remove(files[1])                              # missing
ents.append(dict(files[2], path="/x", path_hex="2f78"))             # foreign
ents.append(dict(files[3], path="/lost+found/1_2", path_hex="/lost+found/1_2".encode().hex()))
with open(sys.argv[2], "w") as f:
    for e in ents:
        f.write(json.dumps(e) + "\n")
PY
if python3 "$HERE/score.py" --json "$M" "$T/edit.jsonl" | python3 -c 'import json,sys; s=json.load(sys.stdin); sys.exit(0 if (s["corrupted"],s["missing"],s["foreign"],s["lost_found"])==(1,1,1,1) else 1)'
then ok "score counts corrupted/missing/foreign/lost+found"; else bad "score categories"; fi
if python3 "$HERE/oracle.py" check "$T/f.img" | python3 -c 'import json,sys; sys.exit(0 if json.load(sys.stdin)["exit"]==0 else 1)'
then ok "oracle check on a shipped image: exit 0"; else bad "oracle check"; fi
# the guest watchdog (rcorpus._qemu_watched) on stand-ins for qemu: silent
# after one image starts -> "idle"; announcing steps until it ends -> done;
# never silent but too long -> "timeout"
if (cd "$HERE" && python3 - <<'PY')
import sys, time
import rcorpus
t0 = time.time()
log, st = rcorpus._qemu_watched(["sh", "-c", "echo 'RFSCK: image 0 on vda'; sleep 60"], 120, 2)
assert st == "idle" and "image 0 on vda" in log and time.time() - t0 < 30, (st, log)
log, st = rcorpus._qemu_watched(["sh", "-c", "for i in 1 2 3 4; do echo \"RFSCK: step $i\"; sleep 1; done"], 120, 3)
assert st is None and log.count("RFSCK: step") == 4, (st, log)
t0 = time.time()
log, st = rcorpus._qemu_watched(["sh", "-c", "while :; do echo 'RFSCK: busy'; sleep 0.5; done"], 3, 2)
assert st == "timeout" and time.time() - t0 < 30, (st, log[-200:])
PY
then ok "guest watchdog: idle, done, timeout"; else bad "guest watchdog"; fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
