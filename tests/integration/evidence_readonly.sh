#!/bin/sh
# evidence_readonly.sh - the evidence stays untouched: on every corpus image
# (the power-cut images before replay included, and the shipped damaged one),
# made read-only (0444), every mode that must not write - info, ls -R, cat (of
# the first 25 files in key order), check, salvage, fix --dry-run, rebuild
# --dry-run - works (or
# exits with its documented status) and leaves the image byte-identical.
set -eu
: "${RFSCK:?}" "${WORK:?}" "${TOP:?}"
W=$WORK
sum() { sha256sum "$1" | cut -d' ' -f1; }
n=0; runs=0
for src in "$TOP"/corpus/images/*.img.xz; do
	name=$(basename "$src" .img.xz)
	img=$W/$name.img
	xz -dc "$src" >"$img"
	chmod 0444 "$img"
	before=$(sum "$img")
	expect() {   # what ... STATUS...
		what=$1; shift
		set +e
		"$@" >"$W/out" 2>"$W/err"
		rc=$?
		set -e
		runs=$((runs + 1))
		case " $ok " in *" $rc "*) ;; *) echo "$name: $what: exit $rc (allowed: $ok)"; head -5 "$W/err"; exit 1 ;; esac
		[ "$(sum "$img")" = "$before" ] || { echo "$name: $what changed the image"; exit 1; }
	}
	ok="0"; expect info "$RFSCK" info "$img"
	ok="0 8"; expect "ls -R" "$RFSCK" ls -R --json "$img"
	ok="0 4 6"; expect check "$RFSCK" check -q "$img"
	ok="0 4 6"; expect "fix --dry-run" "$RFSCK" fix --dry-run -q "$img"
	ok="0"; expect "rebuild --dry-run" "$RFSCK" rebuild --dry-run -q "$img"
	rm -rf "$W/salv"
	ok="0 4"; expect salvage "$RFSCK" salvage -q "$img" "$W/salv"
	# cat every regular file the listing shows
	"$RFSCK" ls -R --json "$img" 2>/dev/null | python3 -c '
import json, sys
try:
    entries = json.load(sys.stdin).get("entries", [])
except ValueError:      # ls refused a damaged tree (exit 8): nothing to cat
    entries = []
files = [e["path_hex"] for e in entries if e.get("type") == "file"]
print("\n".join(files[:25]))' >"$W/files" || true
	while read -r hexpath; do
		p=$(python3 -c 'import sys; sys.stdout.buffer.write(bytes.fromhex(sys.argv[1]))' "$hexpath")
		ok="0 8"; expect "cat" "$RFSCK" cat "$img" "$p"
	done <"$W/files"
	[ ! -e "$img.rfsck-undo" ] || { echo "$name: an undo file appeared"; exit 1; }
	rm -f "$img"
	n=$((n + 1))
done
echo "$n corpus images, $runs read-only runs: every image byte-identical and read-only throughout"
