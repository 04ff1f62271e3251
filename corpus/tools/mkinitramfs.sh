#!/bin/sh
# mkinitramfs.sh CACHE_DIR
# Build CACHE_DIR/initramfs.cpio.gz for the corpus guest: busybox-static, the
# modules virtio_pci, virtio_blk and reiserfs plus their dependencies (order
# computed from modules.dep by modorder.py, stored in /modules.order) and
# guest-init.sh as /init.  Needs fetch-kernel.sh to have run.
set -eu
CACHE=${1:?usage: mkinitramfs.sh CACHE_DIR}
HERE=$(cd "$(dirname "$0")" && pwd)
. "$CACHE/kernel/info.env"
BB=$(command -v busybox || true)
for c in /bin/busybox /usr/bin/busybox; do [ -z "$BB" ] && [ -x "$c" ] && BB=$c; done
if [ -z "$BB" ] || ! file -L "$BB" 2>/dev/null | grep -q 'statically linked'; then
    # file(1) may be absent: accept busybox if ldd says not dynamic
    if ! ldd "$BB" 2>&1 | grep -q 'not a dynamic'; then
        echo "mkinitramfs: need busybox-static (apt-get install busybox-static)" >&2
        exit 1
    fi
fi
T="$CACHE/initramfs.tmp.$$"
rm -rf "$T"
mkdir -p "$T/bin" "$T/lib/modules"
cp "$BB" "$T/bin/busybox"
ln -s busybox "$T/bin/sh"
cp "$HERE/guest-init.sh" "$T/init"
chmod 755 "$T/init"
python3 "$HERE/modorder.py" "$MODDIR" virtio_pci virtio_blk reiserfs > "$T/modules.order"
while read -r m; do
    mkdir -p "$T/lib/modules/$(dirname "$m")"
    cp "$MODDIR/$m" "$T/lib/modules/$m"
done < "$T/modules.order"
( cd "$T" && find . | LC_ALL=C sort | cpio -o -H newc --quiet ) | gzip -9 > "$CACHE/initramfs.cpio.gz.tmp.$$"
mv "$CACHE/initramfs.cpio.gz.tmp.$$" "$CACHE/initramfs.cpio.gz"
cp "$T/modules.order" "$CACHE/modules.order"
rm -rf "$T"
echo "mkinitramfs: $CACHE/initramfs.cpio.gz ($(wc -c < "$CACHE/initramfs.cpio.gz") bytes), modules:" >&2
sed 's/^/  /' "$CACHE/modules.order" >&2
