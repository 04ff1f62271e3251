#!/bin/sh
# rebuild_index.sh - the evidence index of `rfsck rebuild --index DB`:
#   - its rows account for the report (candidates, rejections with a reason,
#     pointer claims, the nested filesystem with its libmagic description);
#   - a second run with the same index resumes (no rescan) and decides the same;
#   - a scan killed half way (the committed batches only) resumes where it
#     stopped and decides the same;
#   - an index made for another image is emptied, not reused;
#   - a real rebuild after a dry run reuses the index and gives a clean image.
set -eu
: "${RFSCK:?}" "${WORK:?}" "${TOP:?}"
W=$WORK
command -v sqlite3 >/dev/null || { echo "sqlite3 shell missing"; exit 1; }
xz -dc "$TOP/corpus/images/r36-nested.img.xz" >"$W/c.img"
python3 "$TOP/corpus/tools/damage.py" zero-root "$W/c.img" "$W/d.img" --seed 1 --record "$W/r.json" >/dev/null
# decisions only: the parts of the report that must not depend on resuming
decisions() {
	python3 - "$@" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
r["scan"].pop("resumed", None)
if len(sys.argv) > 2:   # a simulated kill cannot know how many blocks it had read
    r["scan"].pop("blocks_scanned", None)
r.pop("index", None)
r.pop("seconds", None)
print(json.dumps(r, sort_keys=True))
PY
}
"$RFSCK" rebuild --dry-run --json --index "$W/i.db" "$W/d.img" >"$W/a.json"
q() { sqlite3 "$W/i.db" "$1"; }
python3 - "$W/a.json" "$(q "SELECT count(*) FROM leaf WHERE area = 0 AND valid = 1")" \
	"$(q "SELECT count(*) FROM leaf WHERE status = 'rejected' AND (reason IS NULL OR reason = '')")" \
	"$(q "SELECT sum(count) FROM claim")" "$(q "SELECT count(*) FROM nested WHERE libmagic LIKE '%ReiserFS%'")" \
	"$(q "SELECT count(*) FROM leaf WHERE status = 'accepted'")" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
cand, noreason, claims, nested, acc = map(int, sys.argv[2:])
assert r["scan"]["resumed"] is False, r["scan"]
assert cand == r["scan"]["candidates"], (cand, r["scan"])
assert noreason == 0, "rejections without a reason"
assert claims > 1000, claims   # data blocks claimed by indirect pointers
assert nested >= 1, "no nested row described by libmagic"
assert acc == r["leaves"]["accepted"], (acc, r["leaves"])
assert r["leaves"]["rejected_by_reason"].get("nested", 0) + r["leaves"]["rejected_by_reason"].get("file-data", 0) > 0
PY
echo "ok index rows account for the report"
"$RFSCK" rebuild --dry-run --json --index "$W/i.db" "$W/d.img" >"$W/b.json"
python3 -c 'import json,sys; assert json.load(open(sys.argv[1]))["scan"]["resumed"] is True' "$W/b.json"
[ "$(decisions "$W/a.json")" = "$(decisions "$W/b.json")" ] || { echo "resumed run decided differently"; diff "$W/a.json" "$W/b.json" | head; exit 1; }
echo "ok second run resumes and decides the same"
# a scan stopped half way: what a kill leaves (committed batches only)
mid=$(q "SELECT block FROM leaf WHERE area = 0 ORDER BY block LIMIT 1 OFFSET (SELECT count(*) / 2 FROM leaf WHERE area = 0)")
q "DELETE FROM leaf WHERE block >= $mid AND area = 0"
for t in item claim dirent unreadable; do
	q "DELETE FROM $t WHERE block >= $mid"
done
q "DELETE FROM internal_child WHERE parent >= $mid"
q "DELETE FROM internal WHERE block >= $mid AND area = 0"
q "DELETE FROM nested WHERE sb_block >= $mid"
q "UPDATE meta SET value = '$mid' WHERE key = 'scan_next'"
q "DELETE FROM meta WHERE key = 'scan_done'"
"$RFSCK" rebuild --dry-run --json --index "$W/i.db" "$W/d.img" >"$W/c.json"
python3 -c 'import json,sys; assert json.load(open(sys.argv[1]))["scan"]["resumed"] is True' "$W/c.json"
[ "$(decisions "$W/a.json" partial)" = "$(decisions "$W/c.json" partial)" ] || { echo "scan resumed at block $mid decided differently"; diff "$W/a.json" "$W/c.json" | head; exit 1; }
echo "ok scan stopped at block $mid resumes there and decides the same"
# another image: the index is emptied
xz -dc "$TOP/corpus/images/r36-features-r5.img.xz" >"$W/other.img"
"$RFSCK" rebuild --dry-run --json --index "$W/i.db" "$W/other.img" >"$W/o.json"
python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); assert r["scan"]["resumed"] is False and r["nested"] == [], r["scan"]' "$W/o.json"
echo "ok an index of another image is not reused"
# dry run, then the real run on the same index
"$RFSCK" rebuild --dry-run -q --index "$W/i2.db" "$W/d.img" >/dev/null
set +e
"$RFSCK" rebuild --yes --json --no-undo --index "$W/i2.db" "$W/d.img" >"$W/e.json"
rc=$?
set -e
[ "$rc" -eq 1 ] || { echo "real rebuild after dry run: exit $rc"; exit 1; }
python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); assert r["scan"]["resumed"] is True and r["check_after"] == "clean", r' "$W/e.json"
"$RFSCK" check -q "$W/d.img"
echo "ok real rebuild reuses the dry run's index; result clean"
