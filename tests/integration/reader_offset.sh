#!/bin/sh
# reader_offset.sh - --offset: a kernel-written image placed 1 MiB + 512 bytes
# into a larger file (like a partition inside a disk image, after junk that
# holds a ReiserFS magic of its own) reads exactly as the image alone; without
# --offset the container is refused with exit 8.
set -eu
: "${RFSCK:?}" "${WORK:?}" "${TOP:?}"
src=$TOP/corpus/images/r36-features-r5.img.xz
xz -dc "$src" >"$WORK/fs.img"
off=1049088
# junk before the filesystem, including a decoy magic where a superblock of a
# filesystem starting at 0 would have it
head -c "$off" /dev/urandom >"$WORK/disk.img"
printf 'ReIsEr2Fs' | dd of="$WORK/disk.img" bs=1 seek=65588 conv=notrunc 2>/dev/null
cat "$WORK/fs.img" >>"$WORK/disk.img"
"$RFSCK" ls -R --json "$WORK/fs.img" >"$WORK/a.json"
"$RFSCK" ls -R --json --offset "$off" "$WORK/disk.img" >"$WORK/b.json"
python3 - "$WORK/a.json" "$WORK/b.json" <<'PY'
import json, sys
a = json.load(open(sys.argv[1]))["entries"]
b = json.load(open(sys.argv[2]))["entries"]
assert len(a) > 100 and a == b, (len(a), len(b))
PY
"$RFSCK" cat "$WORK/fs.img" /big/five_mib | sha256sum >"$WORK/a.sum"
"$RFSCK" cat --offset "$off" "$WORK/disk.img" /big/five_mib | sha256sum >"$WORK/b.sum"
cmp "$WORK/a.sum" "$WORK/b.sum"
"$RFSCK" check -q --offset "$off" "$WORK/disk.img"
# also with a suffix: 2049 sectors of 512 bytes
"$RFSCK" info --offset 2049s "$WORK/disk.img" | grep -q "Block size: *4096"
set +e
"$RFSCK" ls "$WORK/disk.img" >/dev/null 2>"$WORK/err"
rc=$?
set -e
[ "$rc" -eq 8 ] || { echo "container without --offset: exit $rc, 8 expected"; exit 1; }
[ "$(wc -l <"$WORK/err")" -eq 1 ]
echo "--offset reads the embedded filesystem identically"
