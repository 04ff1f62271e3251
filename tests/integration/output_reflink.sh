#!/bin/sh
# output_reflink.sh - `--output` makes its copy a reflink where the file
# system has them, and the source stays untouched.  On an XFS of its own
# (loop-mounted file; skipped unless root with mkfs.xfs and a loop device):
#   1. rebuild --yes --output of r36-features-r5 zero-root, source and copy
#      on the XFS: exit 1, the report says output_copy "reflink", the copy
#      shares extents with the source (FIEMAP's shared flag, filefrag -v),
#      the source's sha256 is unchanged, `rfsck check` finds the copy clean
#      (and `reiserfsck --check`, after step 2's comparison: it writes the
#      superblock's mount count);
#   2. the same with the source on another file system ($WORK): the reflink
#      is refused across file systems, the report says "sparse", and the
#      copy is byte-identical to the first one outside stat data times
#      (compared as rebuild_keyorder.sh does: SOURCE_DATE_EPOCH fixed);
#   3. fix --yes --output of a fixable damage (fixable_damage.py
#      leaf-free-space) on the XFS: exit 1, the source unchanged, the copy
#      clean and sharing extents with the source.
set -eu
: "${RFSCK:?}" "${WORK:?}" "${TOP:?}"
skip() { echo "$*" >&2; exit 77; }
[ "$(id -u)" = 0 ] || skip "needs root for a loop mount"
command -v mkfs.xfs >/dev/null || skip "mkfs.xfs (xfsprogs) not installed"
command -v filefrag >/dev/null || skip "filefrag (e2fsprogs) not installed"
W=$WORK
mnt=$W/mnt
mkdir -p "$mnt"
truncate -s 600M "$W/xfs.img"
mkfs.xfs -q -m reflink=1 "$W/xfs.img" || skip "mkfs.xfs failed"
mount -o loop "$W/xfs.img" "$mnt" 2>"$W/mount.err" || skip "cannot loop-mount XFS here: $(cat "$W/mount.err")"
trap 'umount "$mnt" 2>/dev/null || umount -l "$mnt" 2>/dev/null || true' EXIT INT TERM

export SOURCE_DATE_EPOCH=1700000000
xz -dc "$TOP/corpus/images/r36-features-r5.img.xz" > "$W/clean.img"
python3 "$TOP/corpus/tools/damage.py" --seed 1 zero-root "$W/clean.img" "$W/damaged.img" >/dev/null
cp "$W/damaged.img" "$mnt/src.img"
sum0=$(sha256sum < "$mnt/src.img")

# 1. both on the XFS
set +e
"$RFSCK" rebuild --yes --json --output "$mnt/out.img" "$mnt/src.img" > "$W/r1.json"; rc=$?
set -e
[ "$rc" -eq 1 ] || { echo "rebuild on XFS: exit $rc, 1 expected"; cat "$W/r1.json"; exit 1; }
copy=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("output_copy"))' "$W/r1.json")
[ "$copy" = reflink ] || { echo "rebuild on XFS: output_copy $copy, reflink expected"; exit 1; }
filefrag -v "$mnt/out.img" > "$W/frag.txt"
grep -q shared "$W/frag.txt" || { echo "the copy shares no extent with the source"; cat "$W/frag.txt"; exit 1; }
[ "$(sha256sum < "$mnt/src.img")" = "$sum0" ] || { echo "the source changed"; exit 1; }
"$RFSCK" check -q "$mnt/out.img" || { echo "rfsck check of the reflinked copy: exit $?"; exit 1; }
"$RFSCK" rebuild --dry-run -q --json "$mnt/out.img" > /dev/null   # readable as a volume

# 2. source elsewhere: no reflink across file systems
set +e
"$RFSCK" rebuild --yes --json --output "$mnt/out2.img" "$W/damaged.img" > "$W/r2.json"; rc=$?
set -e
[ "$rc" -eq 1 ] || { echo "rebuild across file systems: exit $rc, 1 expected"; exit 1; }
copy=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("output_copy"))' "$W/r2.json")
[ "$copy" = sparse ] || { echo "rebuild across file systems: output_copy $copy, sparse expected"; exit 1; }
cmp "$mnt/out.img" "$mnt/out2.img" || { echo "the reflinked and the copied rebuild differ"; exit 1; }
# reiserfsck --check updates the superblock's check fields: after the cmp
if command -v reiserfsck >/dev/null; then
	reiserfsck --check --yes "$mnt/out.img" > "$W/fsck.log" 2>&1 ||
		{ echo "reiserfsck --check of the reflinked copy: exit $?"; tail -20 "$W/fsck.log"; exit 1; }
fi
# the text report names the copy too
"$RFSCK" rebuild --yes --output "$mnt/out3.img" "$mnt/src.img" > "$W/r3.txt" || [ $? -eq 1 ]
grep -q "^output: a reflink of the source" "$W/r3.txt" || { echo "text report: no reflink line"; cat "$W/r3.txt"; exit 1; }

# 3. fix --output on the XFS: a reflink too, repaired, the source as it was
cp "$W/clean.img" "$mnt/fixable.img"
python3 "$TOP/tests/lib/fixable_damage.py" leaf-free-space "$mnt/fixable.img" >/dev/null
sum1=$(sha256sum < "$mnt/fixable.img")
set +e
"$RFSCK" fix --yes -q --output "$mnt/fixed.img" "$mnt/fixable.img"; rc=$?
set -e
[ "$rc" -eq 1 ] || { echo "fix --output: exit $rc, 1 expected"; exit 1; }
[ "$(sha256sum < "$mnt/fixable.img")" = "$sum1" ] || { echo "fix changed its source"; exit 1; }
"$RFSCK" check -q "$mnt/fixed.img" || { echo "rfsck check of the fixed copy: exit $?"; exit 1; }
filefrag -v "$mnt/fixed.img" | grep -q shared || { echo "fix's copy shares no extent"; exit 1; }
echo "output_reflink: rebuild and fix copies are reflinks on XFS (shared extents, sources unchanged, results clean); across file systems a sparse copy with the same result"
