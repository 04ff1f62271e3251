#!/bin/sh
# demo.sh RFSCK DAMAGED.xz HEALTHY.xz - what `make demo` shows.
#
# The main job first: `rfsck rebuild --dry-run` on a shipped, kernel-written
# volume that holds a ReiserFS image as a file (the case reiserfsck's
# --rebuild-tree gets wrong) and whose root node and the leaf with the image
# file's indirect item are destroyed.  The report names what it found, what
# it rejected and why, and where the nested filesystem starts.  Then the real
# rebuild into a new image, a check of it, and the nested filesystem read in
# place with --offset.  Finally the reader on a healthy image.
set -eu
rfsck=$1; damaged_src=$2; healthy_src=$3
for f in "$damaged_src" "$healthy_src"; do
	[ -f "$f" ] || { echo "demo image $f is missing" >&2; exit 1; }
done
tmp=$(mktemp -d "${TMPDIR:-/tmp}/rfsck-demo.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
say() { printf '\n$ %s\n' "$*"; }
cd "$tmp"
xz -dc "$damaged_src" >damaged.img
chmod 0444 damaged.img
before=$(sha256sum damaged.img | cut -d' ' -f1)

say rfsck check damaged.img
set +e
"$rfsck" check damaged.img
echo "exit status $?"
set -e

say rfsck rebuild --dry-run damaged.img
"$rfsck" rebuild --dry-run damaged.img
after=$(sha256sum damaged.img | cut -d' ' -f1)
echo "(image sha256 before $before, after $after: $([ "$before" = "$after" ] && echo unchanged || echo CHANGED))"
[ "$before" = "$after" ]

say rfsck rebuild --yes --output rebuilt.img damaged.img "| tail -n 3"
set +e
"$rfsck" rebuild --yes --output rebuilt.img damaged.img >rebuild.txt
rc=$?
set -e
tail -n 3 rebuild.txt
echo "exit status $rc (1 = rebuilt)"
[ "$rc" -eq 1 ]
say rfsck check rebuilt.img
"$rfsck" check rebuilt.img

off=$("$rfsck" rebuild --dry-run --json damaged.img |
	python3 -c 'import json,sys; print(json.load(sys.stdin)["nested"][0]["offset"])')
say rfsck ls --offset "$off" damaged.img / "(the nested filesystem, read in place)"
"$rfsck" ls --offset "$off" damaged.img / | head -n 12

xz -dc "$healthy_src" >healthy.img
chmod 0444 healthy.img
say rfsck info healthy.img "| head -n 8"
"$rfsck" info healthy.img | head -n 8
say rfsck ls -l -R healthy.img "| head -n 12"
"$rfsck" ls -l -R healthy.img | head -n 12
