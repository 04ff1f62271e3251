#!/bin/sh
# fetch-kernel.sh CACHE_DIR
# Download the newest Debian 12 linux-image-6.1.0-NN-amd64-unsigned package the
# configured apt mirror offers (name discovered with apt-cache, never hard-coded),
# unpack it with dpkg-deb -x into CACHE_DIR/kernel/root and generate modules.dep
# (depmod from kmod if present, otherwise busybox depmod).
# Writes CACHE_DIR/kernel/info.env with KVER, KPKG, KPKG_VERSION, VMLINUZ, MODDIR.
# Idempotent: does nothing if info.env already exists.
set -eu
CACHE=${1:?usage: fetch-kernel.sh CACHE_DIR}
K="$CACHE/kernel"
if [ -f "$K/info.env" ]; then exit 0; fi
mkdir -p "$K"
K=$(cd "$K" && pwd)
PKG=${RFSCK_KERNEL_PKG:-}
if [ -z "$PKG" ]; then
    PKG=$(apt-cache search --names-only '^linux-image-6\.1\.0-[0-9]+-amd64-unsigned$' \
          | awk '{print $1}' | sort -V | tail -n 1)
fi
if [ -z "$PKG" ]; then
    # fall back to the signed flavour
    PKG=$(apt-cache search --names-only '^linux-image-6\.1\.0-[0-9]+-amd64$' \
          | awk '{print $1}' | sort -V | tail -n 1)
fi
if [ -z "$PKG" ]; then
    echo "fetch-kernel: no linux-image-6.1.0-*-amd64 package known to apt (run apt-get update?)" >&2
    exit 1
fi
echo "fetch-kernel: using $PKG" >&2
rm -rf "$K/root" "$K"/*.deb
( cd "$K" && apt-get download "$PKG" ) >&2
DEB=$(ls "$K"/*.deb | head -n 1)
dpkg-deb -x "$DEB" "$K/root"
KVER=$(ls "$K/root/lib/modules" | head -n 1)
VMLINUZ=$(ls "$K/root/boot/vmlinuz-"* | head -n 1)
if command -v depmod >/dev/null 2>&1; then
    depmod -b "$K/root" "$KVER"
else
    busybox depmod -b "$K/root" "$KVER"
fi
VERSION=$(dpkg-deb -f "$DEB" Version)
{
    echo "KPKG=$PKG"
    echo "KPKG_VERSION=$VERSION"
    echo "KVER=$KVER"
    echo "VMLINUZ=$VMLINUZ"
    echo "MODDIR=$K/root/lib/modules/$KVER"
} > "$K/info.env.tmp"
mv "$K/info.env.tmp" "$K/info.env"
cat "$K/info.env" >&2
