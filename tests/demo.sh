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
say rfsck ls -l -R "$(basename "$img")"
"$rfsck" ls -l -R "$img" | head -n 40
echo "(first 40 lines shown)"
