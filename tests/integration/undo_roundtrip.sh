#!/bin/sh
# undo_roundtrip.sh - writes through the undo layer (tests/tools/undo_writer)
# on a mkreiserfs image, then checks `rfsck undo`: the image is restored
# byte for byte (sha256), a second apply is harmless, --dry-run and --json
# behave, the undo file holds no plaintext "ReIsEr", and corrupt undo files or
# the wrong image are refused (exit 8) with the image untouched.
set -eu
: "${RFSCK:?}" "${TOOLS:?}" "${WORK:?}"
W=$TOOLS/undo_writer
[ -x "$W" ] || { echo "undo_writer not built" >&2; exit 77; }
command -v sha256sum >/dev/null || { echo "no sha256sum" >&2; exit 77; }

img=$WORK/img
orig=$WORK/orig
undo=$WORK/undo
fail() { echo "FAIL: $*" >&2; exit 1; }
sha() { sha256sum "$1" | cut -d' ' -f1; }
flip_byte() { # FILE OFFSET: inverts one byte in place
	b=$(od -An -tu1 -j "$2" -N1 "$1" | tr -d ' ')
	printf "$(printf '\\%03o' $((255 - b)))" | dd of="$1" bs=1 seek="$2" conv=notrunc status=none
}
expect_refused() { # WHAT UNDOFILE IMAGE
	before=$(sha "$3")
	rc=0; "$RFSCK" undo "$2" "$3" >"$WORK/out" 2>&1 || rc=$?
	[ "$rc" -eq 8 ] || { cat "$WORK/out"; fail "$1: exit $rc, want 8"; }
	[ "$(sha "$3")" = "$before" ] || fail "$1: image changed"
	echo "ok: refused $1"
}

if command -v mkreiserfs >/dev/null; then
	truncate -s 64M "$orig"
	mkreiserfs -f -q "$orig" >/dev/null 2>&1 || { dd if=/dev/urandom of="$orig" bs=1M count=64 status=none; }
else
	dd if=/dev/urandom of="$orig" bs=1M count=64 status=none
fi
orig_sha=$(sha "$orig")
cp "$orig" "$img"

# 1. Random writes, many repeated (range 300 blocks, 2000 writes), blocks made
#    to look like ReiserFS leaves/superblocks; batches of 16.
"$W" --seed 7 --writes 2000 --first 16 --range 300 --batch 16 --magic "$img" "$undo" >/dev/null
[ "$(sha "$img")" != "$orig_sha" ] || fail "writer changed nothing"
if grep -a -q ReIsEr "$undo"; then fail "undo file carries ReIsEr in plaintext"; fi
echo "ok: no plaintext ReIsEr in $(wc -c <"$undo")-byte undo file"

# 2. --dry-run changes nothing; works on a read-only image.
chmod 0444 "$img"
modified_sha=$(sha "$img")
"$RFSCK" undo --dry-run "$undo" "$img" >"$WORK/out"
[ "$(sha "$img")" = "$modified_sha" ] || fail "--dry-run changed the image"
grep -q "would restore" "$WORK/out" || fail "--dry-run output: $(cat "$WORK/out")"
chmod 0644 "$img"
echo "ok: dry run"

# 3. Corrupt undo files and wrong images are refused, image untouched.
size=$(wc -c <"$undo")
for off in 0 20 33 100 384 450 508 512 540 600 5000 $((size - 30)); do
	cp "$undo" "$WORK/bad"
	flip_byte "$WORK/bad" "$off"
	expect_refused "flipped byte $off" "$WORK/bad" "$img"
done
head -c 200 "$undo" >"$WORK/bad"
expect_refused "truncated header" "$WORK/bad" "$img"
head -c $((size - 10)) "$undo" >"$WORK/bad"
expect_refused "truncated finished file" "$WORK/bad" "$img"
dd if=/dev/urandom of="$WORK/other" bs=1M count=64 status=none
expect_refused "wrong image (same size)" "$undo" "$WORK/other"
truncate -s 32M "$WORK/other"
expect_refused "wrong image (other size)" "$undo" "$WORK/other"

# 4. The real apply restores the original, and prints JSON.
"$RFSCK" undo --json "$undo" "$img" >"$WORK/json"
[ "$(sha "$img")" = "$orig_sha" ] || fail "image not restored"
python3 - "$WORK/json" <<'PY'
import json, sys
o = json.load(open(sys.argv[1]))
assert o["ok"] is True and o["undo_state"] == "finished", o
assert o["blocks_restored"] == o["records"] == len(o["blocks"]) > 0, o
assert o["blocks"] == sorted(o["blocks"]), o
print("ok: json, %d blocks restored" % o["blocks_restored"])
PY

# 5. Applying again is harmless; usage errors exit 16.
"$RFSCK" undo -q "$undo" "$img" >/dev/null
[ "$(sha "$img")" = "$orig_sha" ] || fail "second apply changed the image"
rc=0; "$RFSCK" undo "$undo" >/dev/null 2>&1 || rc=$?
[ "$rc" -eq 16 ] || fail "usage error exit $rc"
rc=0; "$RFSCK" undo --bogus "$undo" "$img" >/dev/null 2>&1 || rc=$?
[ "$rc" -eq 16 ] || fail "unknown option exit $rc"

# 6. An existing undo file is never overwritten.
rc=0; "$W" --writes 1 "$img" "$undo" >/dev/null 2>&1 || rc=$?
[ "$rc" -ne 0 ] || fail "writer overwrote an existing undo file"
[ "$(sha "$img")" = "$orig_sha" ] || fail "refused writer changed the image"
# 7. A mounted image is refused for writing, both through its loop device and
#    as the file behind it (skipped where loop mounts are not possible).
if [ "$(id -u)" -eq 0 ] && command -v mkfs.ext2 >/dev/null && command -v losetup >/dev/null; then
	truncate -s 8M "$WORK/ext.img"
	mkfs.ext2 -q -F "$WORK/ext.img" >/dev/null 2>&1
	mkdir -p "$WORK/mnt"
	if mount -o loop "$WORK/ext.img" "$WORK/mnt" 2>/dev/null; then
		trap 'umount "$WORK/mnt" 2>/dev/null || true' EXIT
		loopdev=$(losetup -j "$WORK/ext.img" | cut -d: -f1 | head -n 1)
		mounted_sha=$(sha "$WORK/ext.img")
		rc=0; "$W" --writes 1 "$WORK/ext.img" "$WORK/u.ext" >"$WORK/out" 2>&1 || rc=$?
		[ "$rc" -eq 1 ] && grep -q "mounted" "$WORK/out" || fail "loop-mounted file not refused"
		rc=0; "$W" --writes 1 "$loopdev" "$WORK/u.dev" >"$WORK/out" 2>&1 || rc=$?
		[ "$rc" -eq 1 ] && grep -q "mounted" "$WORK/out" || fail "mounted $loopdev not refused"
		[ ! -e "$WORK/u.ext" ] && [ ! -e "$WORK/u.dev" ] || fail "undo file created for a mounted image"
		[ "$(sha "$WORK/ext.img")" = "$mounted_sha" ] || fail "mounted image changed"
		umount "$WORK/mnt"
		trap - EXIT
		echo "ok: mounted image refused (file and $loopdev)"
	else
		echo "note: cannot loop-mount here; mounted-image check skipped"
	fi
fi
echo "all undo round-trip checks passed"
