# features.sh - the main feature recipe (run by busybox sh -eu inside the guest,
# cwd = mount point, $GH = guest helper, all content seeded => deterministic).
# Covers: edge sizes / tails, a >4 MiB file with several indirect items, sparse
# files (holes at start, middle, end), hard links, short/long/dangling symlinks,
# 255-byte names, UTF-8 and raw non-UTF-8 names, empty dirs, a 60-level chain,
# fifo/char/block devices, odd modes and owners, deleted files whose blocks are
# free again (write, sync, delete).
# rfsck-mountopts: rw
mkdir sizes
for s in 0 1 7 8 9 15 16 17 100 1000 2047 2048 2049 3976 3977 4095 4096 4097 \
         8191 8192 8193 12287 12288 12289 16383 16384 16385 65536 65537 100000; do
    $GH gen $s $s text > sizes/sz_$s
done
$GH gen 99 5 rand > sizes/rand_5
$GH gen 98 3976 rand > sizes/rand_3976
$GH gen 97 20000 rand > sizes/rand_20000

mkdir big
# 5 MiB + 123 bytes: 1281 blocks => two indirect items (1012 pointers max each) + tail
$GH gen 1 5243003 text > big/five_mib
$GH gen 2 65536 rand > big/rand_64k

mkdir sparse
$GH writeat sparse/hole_start 1048576 5000 11 text
$GH writeat sparse/hole_middle 0 8192 12 text
$GH writeat sparse/hole_middle 2097152 100 13 text
$GH writeat sparse/hole_end 0 5000 14 text
truncate -s 3145728 sparse/hole_end
truncate -s 1000000 sparse/all_hole
$GH writeat sparse/holes_many 0 10 15 text
i=1
while [ $i -le 8 ]; do $GH writeat sparse/holes_many $((i*300000)) 4097 $((15+i)) text; i=$((i+1)); done

mkdir links links/a links/b
$GH gen 21 5000 text > links/a/orig
ln links/a/orig links/b/hard1
ln links/a/orig links/hard2
$GH gen 22 10 text > links/small_orig
ln links/small_orig links/small_hard
ln -s ../a/orig links/b/sym_rel
ln -s /etc/passwd links/sym_abs_dangling
ln -s a links/sym_dir
ln -s "$(awk 'BEGIN{s="";for(i=0;i<100;i++)s=s "abcdefghi/";print s}')" links/sym_1000
ln -s "$(awk 'BEGIN{s="";for(i=0;i<390;i++)s=s "abcdefghi/";print s "x"}')" links/sym_3901
ln -s "$(awk 'BEGIN{s="";for(i=0;i<3976;i++)s=s "y";print s}')" links/sym_3976 \
    || echo "NOTE: 3976-byte symlink refused"
ln -s "$(awk 'BEGIN{s="";for(i=0;i<3977;i++)s=s "z";print s}')" links/sym_3977 \
    || echo "NOTE: 3977-byte symlink refused (expected: MAX_DIRECT_ITEM_LEN)"

mkdir names
n255=$(awk 'BEGIN{s="";for(i=0;i<255;i++)s=s "n";print s}')
$GH gen 31 31 text > "names/$n255"
mkdir "names/d_$(awk 'BEGIN{s="";for(i=0;i<253;i++)s=s "d";print s}')"
$GH gen 32 32 text > "names/$(printf 'caf\303\251')"
$GH gen 33 33 text > "names/$(printf '\346\227\245\346\234\254\350\252\236')"
$GH gen 34 34 text > "names/$(printf 'emoji_\360\237\230\200')"
$GH gen 35 35 text > "names/$(printf 'raw_\377\376_latin1_\351')"
$GH gen 36 36 text > "names/$(printf 'ctl_\001\002\177')"
$GH gen 37 37 text > "names/with space and 'quote'"
$GH gen 38 38 text > "names/-leading-dash"
$GH gen 39 39 text > "names/back\\slash"
$GH gen 40 40 text > "names/.hidden"
$GH gen 41 41 text > "names/..."
$GH gen 42 42 text > "names/$(printf 'nl\nin_name')"
mkdir "names/$(printf 'dir_\345\244\232')"
$GH gen 43 3000 text > "names/$(printf 'dir_\345\244\232')/$(printf '\300\301\302')"

mkdir empty_dirs empty_dirs/e1 empty_dirs/e2 empty_dirs/e2/e3
mkdir -p empty_dirs/x/y/z

d=deep
i=0
while [ $i -lt 60 ]; do d="$d/l$i"; i=$((i+1)); done
mkdir -p "$d"
$GH gen 51 51 text > "$d/bottom"

mkdir special
mkfifo special/fifo
mknod special/chr c 1 3
mknod special/blk b 7 0
mknod special/chr_big c 250 70000 || echo "NOTE: large minor refused"
$GH gen 61 61 text > special/setuid; chmod 4755 special/setuid
$GH gen 62 62 text > special/owned; chown 1234:5678 special/owned; chmod 0600 special/owned
mkdir special/sticky; chmod 1777 special/sticky
$GH gen 63 63 text > special/nomode; chmod 0 special/nomode
$GH gen 64 64 text > special/big_uid; chown 4000000000:3000000000 special/big_uid \
    || echo "NOTE: 32-bit uid refused"

mkdir deleted
i=0
while [ $i -lt 24 ]; do $GH gen $((100+i)) $((20000 + i*777)) text > deleted/f$i; i=$((i+1)); done
$GH gen 200 2000000 text > deleted/big_gone
sync
i=0
while [ $i -lt 24 ]; do rm deleted/f$i; i=$((i+2)); done
rm deleted/big_gone
rm -r empty_dirs/x/y/z
echo "features done"
