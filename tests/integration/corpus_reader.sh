#!/bin/sh
# corpus_reader.sh - rfsck against the ground truth of the kernel-written corpus
# (corpus/images/*.img.xz with *.manifest.jsonl, made by the Linux 6.1 driver):
#   - ls -R / cat agree with the manifest on every image, and on the
#     pre-replay copies of the power-cut images (journal replayed in memory
#     must give what the kernel showed after mounting);
#   - grub-fstest (no journal replay) agrees on the cleanly unmounted images;
#   - check: clean (exit 0) on every image; exit 6 with JOURNAL_PENDING on the
#     pre-replay copies, which stay byte-identical.
set -eu
: "${RFSCK:?}" "${WORK:?}" "${TOP:?}"
dir=$TOP/corpus/images
n=0
for m in "$dir"/*.manifest.jsonl; do
	name=$(basename "$m" .manifest.jsonl)
	for variant in "" .prereplay; do
		src=$dir/$name$variant.img.xz
		[ -f "$src" ] || continue
		img=$WORK/$name$variant.img
		xz -dc "$src" >"$img"
		chmod 0444 "$img"
		before=$(sha256sum "$img" | cut -d' ' -f1)
		python3 "$TOP/tests/lib/compare_manifest.py" "$RFSCK" "$img" "$m"
		set +e
		"$RFSCK" check --json "$img" >"$WORK/check.json"
		rc=$?
		set -e
		if [ -z "$variant" ]; then
			[ "$rc" -eq 0 ] || { echo "check of $name: exit $rc, 0 expected"; cat "$WORK/check.json"; exit 1; }
			python3 "$TOP/tests/lib/compare_grub.py" "$RFSCK" "$img"
		else
			[ "$rc" -eq 6 ] || { echo "check of $name$variant: exit $rc, 6 expected"; cat "$WORK/check.json"; exit 1; }
			grep -q '"JOURNAL_PENDING"' "$WORK/check.json" || { echo "no JOURNAL_PENDING"; exit 1; }
		fi
		after=$(sha256sum "$img" | cut -d' ' -f1)
		[ "$before" = "$after" ] || { echo "$img changed"; exit 1; }
		rm -f "$img"
		n=$((n + 1))
	done
done
[ "$n" -ge 8 ] || { echo "expected at least 8 corpus images, found $n"; exit 1; }
echo "$n corpus images agree with their kernel-written manifests"
