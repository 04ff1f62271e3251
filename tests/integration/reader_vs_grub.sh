#!/bin/sh
# reader_vs_grub.sh - rfsck ls/cat agree with grub-fstest (an independent
# reader) on every undamaged public image (the 7 reference images and the 60
# syzkaller seeds), and leave each image unchanged.
set -eu
: "${RFSCK:?}" "${WORK:?}" "${SHARED:?}" "${TOP:?}"
command -v grub-fstest >/dev/null || { echo "grub-fstest missing (grub-common)"; exit 1; }
ref=$SHARED/corpus-public/reference
[ -d "$ref" ] || { echo "no public corpus at $ref"; exit 77; }
n=0
for src in "$ref"/*.xz "$ref"/*.gz "$ref"/*.bin "$ref"/syzkaller-seeds/*.xz; do
	img=$WORK/$(basename "$src").img
	case $src in
	*.xz) xz -dc "$src" >"$img" ;;
	*.gz) gzip -dc "$src" >"$img" ;;
	*) cp "$src" "$img" ;;
	esac
	before=$(sha256sum "$img" | cut -d' ' -f1)
	python3 "$TOP/tests/lib/compare_grub.py" "$RFSCK" "$img"
	after=$(sha256sum "$img" | cut -d' ' -f1)
	[ "$before" = "$after" ] || { echo "image $img changed"; exit 1; }
	rm -f "$img"
	n=$((n + 1))
done
[ "$n" -ge 67 ] || { echo "expected at least 67 reference images, found $n"; exit 1; }
echo "compared $n reference images with grub-fstest"
