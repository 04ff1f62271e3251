# bigtree.sh - a large volume (320 MiB = 81920 blocks => 3 bitmap blocks at
# 4 KiB) with a tree of height >= 4: 24000 small files (100 per directory,
# 40..600 bytes, all tails) plus a 250 MiB file, so that blocks in all three
# bitmap groups are used.  Build-on-demand only (not shipped).
# rfsck-mountopts: rw
# rfsck-timeout: 2400
mkdir small
$GH mkfiles small 24000 100 4242 40 600
$GH gen 4343 262144000 text > big_250mib
sync
i=0
while [ $i -lt 24000 ]; do rm small/d$(printf %04d $((i/100)))/f$(printf %06d $i); i=$((i+97)); done
echo "bigtree done"
