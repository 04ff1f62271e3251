#!/bin/sh
# undo_kill.sh - kills tests/tools/undo_writer (SIGKILL) at many points of a
# run: after k complete writes, between the undo sync and the image write of
# write k (stop hook), with batched writes, and at random times while it
# sleeps between writes.  After each kill, `rfsck undo` on the unfinished
# undo file must give back the original image (sha256) and exit 0.
set -eu
: "${RFSCK:?}" "${TOOLS:?}" "${WORK:?}"
W=$TOOLS/undo_writer
[ -x "$W" ] || { echo "undo_writer not built" >&2; exit 77; }

img=$WORK/img
orig=$WORK/orig
undo=$WORK/undo
fail() { echo "FAIL: $*" >&2; exit 1; }
sha() { sha256sum "$1" | cut -d' ' -f1; }
dd if=/dev/urandom of="$orig" bs=1M count=8 status=none
orig_sha=$(sha "$orig")
points=0

check_restore() { # WHAT
	"$RFSCK" undo -q "$undo" "$img" >"$WORK/out" 2>&1 || { cat "$WORK/out"; fail "$1: undo failed"; }
	[ "$(sha "$img")" = "$orig_sha" ] || fail "$1: image not restored"
	points=$((points + 1))
}

run_killed() { # WHAT WRITER-ARGS...
	what=$1; shift
	cp "$orig" "$img"; rm -f "$undo"
	rc=0; "$W" "$@" "$img" "$undo" >"$WORK/wout" 2>&1 || rc=$?
	[ "$rc" -eq 137 ] || { cat "$WORK/wout"; fail "$what: writer exit $rc, want 137 (SIGKILL)"; }
	check_restore "$what"
}

for k in 1 2 3 4 5 6 7 8 9 10 15 20 30 50; do
	run_killed "kill after $k writes" --seed "$k" --writes 60 --range 40 --kill-after "$k"
done
for k in 1 2 3 4 5 6 7 8 9 10 15 25 40; do
	run_killed "kill between sync and write $k" --seed "$((k + 100))" --writes 60 --range 40 --stop "$k"
done
for k in 1 3 7 20; do
	run_killed "batch 8, kill after $k writes" --seed "$((k + 200))" --writes 200 --batch 8 \
		--range 100 --kill-after "$((k * 8))"
	run_killed "batch 8, stop at write $k" --seed "$((k + 300))" --writes 200 --batch 8 \
		--range 100 --stop "$((k * 3))"
done
# Asynchronous kills at times the writer does not choose.
for t in 0.05 0.1 0.15 0.2 0.3 0.4; do
	cp "$orig" "$img"; rm -f "$undo"
	"$W" --seed 9 --writes 100000 --range 500 --sleep-us 1000 "$img" "$undo" >"$WORK/wout" 2>&1 &
	pid=$!
	sleep "$t"
	kill -9 "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	if [ ! -e "$undo" ]; then
		# killed before it created its undo file (a slow, loaded machine):
		# the undo file comes before any write, so the image is untouched
		[ "$(sha "$img")" = "$orig_sha" ] || fail "kill -9 after ${t}s: image written without an undo file"
		points=$((points + 1))
		continue
	fi
	check_restore "kill -9 after ${t}s ($(tail -n 1 "$WORK/wout"))"
done
# A run that finishes, for contrast.
cp "$orig" "$img"; rm -f "$undo"
"$W" --seed 1 --writes 60 --range 40 "$img" "$undo" >/dev/null
check_restore "clean run"
echo "restored the original image after $points interrupted or finished runs"
[ "$points" -ge 20 ]
