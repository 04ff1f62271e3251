#!/bin/sh
# demo.sh RFSCK IMAGE.xz - what `make demo` shows: rfsck reading a ReiserFS
# image written by the Linux kernel (decompressed to a scratch file first).
set -eu
rfsck=$1; src=$2
[ -f "$src" ] || { echo "demo image $src is missing" >&2; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/rfsck-demo.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
img=$tmp/$(basename "$src" .xz)
xz -dc "$src" >"$img"
chmod 0444 "$img"
say() { printf '\n$ %s\n' "$*"; }
say rfsck info "$(basename "$img")"
"$rfsck" info "$img"
say rfsck ls -l -R "$(basename "$img")" "| head -n 25"
"$rfsck" ls -l -R "$img" | head -n 25
say rfsck check "$(basename "$img")"
"$rfsck" check "$img"
# The same volume with its root node zeroed: check must say it needs rebuild.
cp "$img" "$tmp/damaged.img"
chmod 0644 "$tmp/damaged.img"
root=$("$rfsck" info --json "$img" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["root_block"], d["block_size"])')
set -- $root
dd if=/dev/zero of="$tmp/damaged.img" bs="$2" seek="$1" count=1 conv=notrunc 2>/dev/null
say "(root block $1 zeroed) rfsck check damaged.img"
set +e
"$rfsck" check "$tmp/damaged.img"
echo "exit status $?"
