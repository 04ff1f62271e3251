#!/bin/sh
# rebuild_dryrun.sh - `rfsck rebuild --dry-run` predicts the real run exactly,
# the in-place run is undoable, and an interrupted in-place run is safe.
# Damaged images (corpus/tools/damage.py, seeded): r36-features-r5 zero-root,
# zero-leaves N=3 and zero-bitmaps, r36-hash-tea flip-leaves N=3 (seed 2),
# r35-features-r5 zero-internal.  For each:
#   1. --dry-run --json on a read-only (0444) copy, run as uid 65534 when we
#      are root (otherwise as ourselves): exit 0, the image byte-identical, no
#      undo file, a report with mode "dry-run"; under strace (if installed) it
#      never opens the image for writing;
#   2. --dry-run --json on a writable copy: exit 0, byte-identical, no undo
#      file, the same plan as on the read-only copy;
#   3. --yes --json in place (undo log IMAGE.rfsck-undo): exit 1; the report
#      equals the dry run's in scan/hash/leaves/nested/conflicts/objects/
#      partial_files/tree/blocks_written/written_blocks_sha256/
#      repairs_after_build/check_after; no more
#      blocks differ from the damaged image than blocks_written; `rfsck check`
#      exits 0; the rebuilt image scores as rebuild_corpus.sh requires;
#   4. --yes --output NEW on another copy: the source untouched, NEW
#      byte-identical to the in-place result (differences inside the time
#      fields of stat data items only are reported, not failed: created stat
#      data is stamped with the wall clock);
#   5. `rfsck undo IMAGE.rfsck-undo IMAGE` restores the damaged sha256.
# Interruption (r36-features-r5 zero-root, and zero-leaves N=3 seed 1 whose
# rebuild writes new leaves): the in-place rebuild is killed with SIGKILL
# (a) after 0.01 .. 1.5 s (timeout -s KILL; zero-root only: the rebuild
# takes ~0.05 s, so most of these finish first), (b) when strace is
# installed, at the entry of its k-th pwrite64/pwritev/write/fsync/fdatasync
# call (strace -e inject=SYSCALL:signal=KILL:when=k; k = 1..6 and spread over
# the run's calls), (c) through RFSCK_TEST_STOP_AFTER_WRITE=k for
# k = 1..blocks_written+1 if the build wires that hook into rebuild (exit 8;
# the ASan test build does).  After each: `rfsck undo` restores the damaged
# image exactly (or, with no undo file yet, the image is unchanged); and,
# separately, a rerun of `rfsck rebuild --yes` on the interrupted image (new
# undo file) exits 1, `rfsck check` exits 0 and the result scores as the
# uninterrupted rebuild must (zero-root: every entry intact; zero-leaves:
# the rule of rebuild_corpus.sh).
set -eu
: "${RFSCK:?}" "${WORK:?}" "${TOP:?}"
export TOP
W=$WORK
H="$TOP/tests/lib/rebuild_case.py"
set +e
"$RFSCK" rebuild --help >/dev/null 2>"$W/help.err"; hrc=$?
set -e
if [ "$hrc" -ne 0 ]; then
	if grep -q "not implemented" "$W/help.err"; then echo "rfsck rebuild is not implemented yet" >&2; exit 77; fi
	echo "rfsck rebuild --help: exit $hrc"; cat "$W/help.err"; exit 1
fi
trap 'chmod -R u+w "$W" 2>/dev/null; rm -rf "$W"/*.img "$W"/*.img.* "$W/ro" "$W"/*.undo' EXIT
sum() { sha256sum "$1" | cut -d' ' -f1; }
fail() { echo "FAIL $*"; exit 1; }
jget() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))
for k in sys.argv[2].split("."): d=d[k]
print(d)' "$1" "$2"; }
have_strace=0; command -v strace >/dev/null 2>&1 && have_strace=1
# LeakSanitizer cannot run under ptrace: no leak check for traced runs
NOLEAK="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
as_nobody=0
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null 2>&1; then as_nobody=1; fi
n=0

# dry_and_real is called as `dry_and_real ... || failed=...`, where set -e
# does not apply: every command in it is checked explicitly.
dry_and_real() {   # BASE RECIPE SEED N EXPECT
	base=$1; recipe=$2; seed=$3; nn=$4; expect=$5
	name="$base/$recipe${nn:+ N=$nn}/s$seed"
	truth=$TOP/corpus/images/$base.manifest.jsonl
	xz -dc "$TOP/corpus/images/$base.img.xz" >"$W/orig.img" || return 1
	python3 "$H" damage "$recipe" "$seed" "${nn:--}" "$W/orig.img" "$W/d.img" "$W/rec.json" ||
		{ echo "FAIL $name: damage.py"; return 1; }
	damaged=$(sum "$W/d.img") || return 1
	# 1. read-only copy (0444 in a 0555 directory), as uid 65534 when root
	rm -rf "$W/ro"; mkdir "$W/ro" && cp "$W/d.img" "$W/ro/d.img" && chmod 444 "$W/ro/d.img" && chmod 555 "$W/ro" || return 1
	run=""
	if [ "$as_nobody" = 1 ]; then chmod 755 "$W"; run="setpriv --reuid=65534 --regid=65534 --clear-groups"; fi
	trace=""
	if [ "$have_strace" = 1 ]; then trace="env ASAN_OPTIONS=$NOLEAK strace -f -qq -e trace=open,openat,openat2,creat -o $W/open.trace"; fi
	$trace $run "$RFSCK" rebuild --dry-run --json "$W/ro/d.img" >"$W/dry-ro.json" 2>"$W/err"; rc=$?
	[ "$rc" -eq 0 ] || { tail -n 20 "$W/err"; echo "FAIL $name: --dry-run on a read-only image${run:+ as uid 65534}: exit $rc, 0 expected"; return 1; }
	[ "$(sum "$W/ro/d.img")" = "$damaged" ] || { echo "FAIL $name: --dry-run changed the read-only image"; return 1; }
	[ "$(ls "$W/ro")" = "d.img" ] || { echo "FAIL $name: --dry-run created files next to the image: $(ls "$W/ro")"; return 1; }
	if [ -n "$trace" ] && grep -F "$W/ro/d.img" "$W/open.trace" | grep -E 'O_(RDWR|WRONLY|CREAT|TRUNC)' >"$W/open.bad"; then
		cat "$W/open.bad"; echo "FAIL $name: --dry-run opened the image for writing"; return 1
	fi
	python3 "$H" schema "$W/dry-ro.json" dry-run >"$W/schema.log" || { cat "$W/schema.log"; echo "FAIL $name: dry-run report"; return 1; }
	chmod 755 "$W/ro"; chmod 644 "$W/ro/d.img"
	# 2. writable copy
	cp "$W/d.img" "$W/x.img" || return 1
	rm -f "$W/x.img.rfsck-undo"
	"$RFSCK" rebuild --dry-run --json "$W/x.img" >"$W/dry.json" 2>"$W/err"; rc=$?
	[ "$rc" -eq 0 ] || { tail -n 20 "$W/err"; echo "FAIL $name: --dry-run: exit $rc, 0 expected"; return 1; }
	[ "$(sum "$W/x.img")" = "$damaged" ] || { echo "FAIL $name: --dry-run changed the image"; return 1; }
	[ ! -e "$W/x.img.rfsck-undo" ] || { echo "FAIL $name: --dry-run made an undo file"; return 1; }
	python3 "$H" same-plan "$W/dry-ro.json" "$W/dry.json" dry-run dry-run >"$W/plan.log" ||
		{ cat "$W/plan.log"; echo "FAIL $name: the two dry runs differ"; return 1; }
	# 3. real run in place, undo log next to the image
	"$RFSCK" rebuild --yes --json "$W/x.img" >"$W/real.json" 2>"$W/err"; rc=$?
	[ "$rc" -eq 1 ] || { tail -n 20 "$W/err"; echo "FAIL $name: rebuild --yes: exit $rc, 1 expected"; return 1; }
	[ -s "$W/x.img.rfsck-undo" ] || { echo "FAIL $name: rebuild --yes wrote no undo file $W/x.img.rfsck-undo"; return 1; }
	python3 "$H" same-plan "$W/dry.json" "$W/real.json" >"$W/plan.log" ||
		{ cat "$W/plan.log"; echo "FAIL $name: the dry run did not predict the real run"; return 1; }
	bw=$(jget "$W/real.json" blocks_written) || return 1
	nd=$(python3 "$H" diff-blocks "$W/d.img" "$W/x.img") || return 1
	[ "$nd" -le "$bw" ] || { echo "FAIL $name: $nd blocks differ from the damaged image, but blocks_written is $bw"; return 1; }
	"$RFSCK" check -q "$W/x.img" >/dev/null 2>&1 || { "$RFSCK" check "$W/x.img" 2>&1 | head -n 30; echo "FAIL $name: check after the in-place rebuild"; return 1; }
	python3 "$H" read "$RFSCK" "$W/x.img" "$W/res.jsonl" || { echo "FAIL $name: cannot read the rebuilt image"; return 1; }
	python3 "$H" verify "$name" "$truth" "$W/res.jsonl" "$W/real.json" "$W/rec.json" "$W/orig.img" \
		--expect "$expect" --damaged "$W/d.img" >"$W/verify.log"; vrc=$?
	rebuilt=$(sum "$W/x.img") || return 1
	cp "$W/x.img" "$W/x-rebuilt.img" || return 1
	# 4. --output gives the same image
	cp "$W/d.img" "$W/y.img" || return 1
	rm -f "$W/out.img"
	"$RFSCK" rebuild --yes -q --output "$W/out.img" "$W/y.img" >/dev/null 2>"$W/err"; rc=$?
	[ "$rc" -eq 1 ] || { tail -n 20 "$W/err"; echo "FAIL $name: rebuild --output: exit $rc"; return 1; }
	[ "$(sum "$W/y.img")" = "$damaged" ] || { echo "FAIL $name: rebuild --output changed its source"; return 1; }
	# equal to the in-place result; stat data the rebuild creates carries the
	# wall clock, so two runs may differ there (reported, not failed)
	if [ "$(sum "$W/out.img")" = "$rebuilt" ]; then same="--output identical"
	else
		python3 "$H" same-fs "$W/x-rebuilt.img" "$W/out.img" >"$W/same.log" ||
			{ cat "$W/same.log"; echo "FAIL $name: the --output image differs from the in-place result"; return 1; }
		same="--output $(cat "$W/same.log")"
	fi
	# 5. undo
	"$RFSCK" undo -q "$W/x.img.rfsck-undo" "$W/x.img" >/dev/null 2>"$W/err" || { cat "$W/err"; echo "FAIL $name: undo failed"; return 1; }
	[ "$(sum "$W/x.img")" = "$damaged" ] || { echo "FAIL $name: undo did not restore the damaged image"; return 1; }
	# the score of the rebuilt image (rebuild_corpus.sh's rule) last, so that a
	# scoring failure does not hide the dry-run / output / undo results
	[ "$vrc" -eq 0 ] || { cat "$W/verify.log"; echo "FAIL $name: dry-run = real run: $bw blocks ($nd changed), check 0, $same, undo restores; but the rebuilt image breaks the rule above"; return 1; }
	echo "ok $name: dry-run (read-only${run:+, uid 65534}) = real run: $bw blocks ($nd changed), check 0, $same, undo restores; $(sed 's/^ok [^:]*: //' "$W/verify.log")"
	n=$((n + 1))
}

failed=0
dry_and_real r36-features-r5 zero-root 1 "" intact || failed=$((failed + 1))
dry_and_real r36-features-r5 zero-leaves 1 3 loss || failed=$((failed + 1))
dry_and_real r36-features-r5 zero-bitmaps 1 "" intact || failed=$((failed + 1))
dry_and_real r36-hash-tea flip-leaves 2 3 loss || failed=$((failed + 1))
dry_and_real r35-features-r5 zero-internal 1 "" intact || failed=$((failed + 1))

# ---- interruption -----------------------------------------------------------
points=0

after_stop() {   # WHAT RC: k.img was interrupted (or finished) with exit RC
	what="$iname: $1"; krc=$2
	cp "$W/k.img" "$W/k2.img"
	if [ -e "$W/k.img.rfsck-undo" ]; then
		"$RFSCK" undo -q "$W/k.img.rfsck-undo" "$W/k.img" >/dev/null 2>"$W/err" ||
			{ cat "$W/err"; fail "$what (exit $krc): rfsck undo failed"; }
		[ "$(sum "$W/k.img")" = "$damaged" ] || fail "$what (exit $krc): undo did not restore the damaged image"
	else
		[ "$(sum "$W/k.img")" = "$damaged" ] || fail "$what (exit $krc): the image changed but there is no undo file"
	fi
	rm -f "$W/k2.undo"
	set +e
	"$RFSCK" rebuild --yes --json --undo "$W/k2.undo" "$W/k2.img" >"$W/k2.json" 2>"$W/err"; rc=$?
	set -e
	[ "$rc" -eq 1 ] || { tail -n 20 "$W/err"; fail "$what (exit $krc): rerun of rebuild --yes: exit $rc, 1 expected"; }
	"$RFSCK" check -q "$W/k2.img" >/dev/null 2>&1 || { "$RFSCK" check "$W/k2.img" 2>&1 | head -n 30; fail "$what (exit $krc): check after the rerun"; }
	python3 "$H" read "$RFSCK" "$W/k2.img" "$W/k2.jsonl"
	python3 "$H" verify "$what, rerun" "$truth" "$W/k2.jsonl" "$W/k2.json" "$W/rec.json" "$W/orig.img" \
		--expect "$iexpect" --damaged "$W/d.img" >"$W/verify.log" || { cat "$W/verify.log"; fail "$what (exit $krc): rerun result"; }
	points=$((points + 1))
}

fresh() { cp "$W/d.img" "$W/k.img"; rm -f "$W/k.img.rfsck-undo"; }

interrupt() {   # BASE RECIPE SEED N EXPECT TIMED(0|1)
	base=$1; iexpect=$5
	iname="$base/$2${4:+ N=$4}/s$3"
	truth=$TOP/corpus/images/$base.manifest.jsonl
	xz -dc "$TOP/corpus/images/$base.img.xz" >"$W/orig.img"
	python3 "$H" damage "$2" "$3" "${4:--}" "$W/orig.img" "$W/d.img" "$W/rec.json"
	damaged=$(sum "$W/d.img")
	# (a) asynchronous kills
	if [ "$6" = 1 ]; then
		kills=0; finished=0
		for t in 0.01 0.02 0.05 0.1 0.2 0.3 0.5 0.8 1.2 1.5; do
			fresh
			set +e
			timeout -s KILL "$t" "$RFSCK" rebuild --yes -q "$W/k.img" >/dev/null 2>&1; rc=$?
			set -e
			case $rc in 137) kills=$((kills + 1)) ;; 1) finished=$((finished + 1)) ;;
			*) fail "$iname: kill after ${t}s: exit $rc (137 = killed or 1 = finished expected)" ;; esac
			after_stop "kill after ${t}s" "$rc"
		done
		echo "ok $iname: timed SIGKILL at 0.01..1.5 s: $kills killed, $finished finished first; undo restores, rerun completes"
	fi
	# (b) strace: SIGKILL on entry of the k-th call of each write/sync syscall
	if [ "$have_strace" = 1 ]; then
		fresh
		ASAN_OPTIONS=$NOLEAK strace -f -qq -c -U name,calls -o "$W/calls.txt" "$RFSCK" rebuild --yes -q "$W/k.img" >/dev/null 2>&1 || [ $? -eq 1 ]
		sk=0; where=""
		for sc in pwrite64 pwritev pwritev2 write fsync fdatasync sync_file_range; do
			c=$(awk -v s="$sc" '$1 == s { print $2 }' "$W/calls.txt")
			[ -n "$c" ] && [ "$c" -gt 0 ] || continue
			ks=$(python3 -c 'import sys; c=int(sys.argv[1]); print(" ".join(str(k) for k in sorted(set(range(1, min(c, 6) + 1)) | {c//4, c//2, 3*c//4, c-1, c} - {0})))' "$c")
			where="$where $sc($ks of $c)"
			for k in $ks; do
				fresh
				set +e
				ASAN_OPTIONS=$NOLEAK strace -f -qq -o /dev/null -e trace="$sc" -e inject="$sc:signal=KILL:when=$k" \
					"$RFSCK" rebuild --yes -q "$W/k.img" >/dev/null 2>&1; rc=$?
				set -e
				[ "$rc" -eq 137 ] || fail "$iname: SIGKILL at $sc #$k of $c: exit $rc, 137 expected"
				after_stop "SIGKILL at $sc #$k of $c" "$rc"
				sk=$((sk + 1))
			done
		done
		[ "$sk" -gt 0 ] || fail "$iname: strace saw no write or sync call in rebuild --yes ($(tr '\n' ' ' <"$W/calls.txt"))"
		echo "ok $iname: SIGKILL at $sk write/sync calls (strace inject:$where): undo restores, rerun completes"
	fi
	# (c) the test build's stop-after-write hook, if rebuild honours it
	fresh
	set +e
	RFSCK_TEST_STOP_AFTER_WRITE=1 "$RFSCK" rebuild --yes -q "$W/k.img" >/dev/null 2>&1; rc=$?
	set -e
	if [ "$rc" -eq 8 ]; then
		after_stop "stop after write 1" 8
		fresh
		"$RFSCK" rebuild --yes --json --no-undo "$W/k.img" >"$W/probe.json" 2>/dev/null || [ $? -eq 1 ]
		bw=$(jget "$W/probe.json" blocks_written)
		ks=$(python3 -c 'import sys; c=int(sys.argv[1]); print(" ".join(str(k) for k in range(2, c + 2)))' "$bw")
		for k in $ks; do
			fresh
			set +e
			RFSCK_TEST_STOP_AFTER_WRITE=$k "$RFSCK" rebuild --yes -q "$W/k.img" >/dev/null 2>&1; rc=$?
			set -e
			[ "$rc" -eq 8 ] || [ "$rc" -eq 1 ] || fail "$iname: stop after write $k: exit $rc, 8 (or 1 past the end) expected"
			after_stop "stop after write $k of $bw" "$rc"
		done
		echo "ok $iname: RFSCK_TEST_STOP_AFTER_WRITE=1..$((bw + 1)) ($bw blocks): undo restores, rerun completes"
	else
		echo "note: RFSCK_TEST_STOP_AFTER_WRITE=1 gave exit $rc (hook not wired into rebuild in this build): skipped"
		[ "$rc" -eq 1 ] || fail "$iname: RFSCK_TEST_STOP_AFTER_WRITE=1: exit $rc"
		after_stop "hook ignored" "$rc"
	fi
}

interrupt r36-features-r5 zero-root 1 "" intact 1
interrupt r36-features-r5 zero-leaves 1 3 loss 0
[ "$failed" -eq 0 ] || { echo "$failed of $((n + failed)) dry-run/real/undo cases FAILED (details above); interruption: $points runs ok"; exit 1; }
echo "$n dry-run/real/undo cases; $points interrupted or finished runs: undo restores the damaged image, a rerun completes"
