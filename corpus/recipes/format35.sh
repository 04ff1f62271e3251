# format35.sh - workload for the 3.5-format image (v1 stat data, 3.5 keys,
# unpadded names).  Linux 6.1 rejects (is_leaf, "item entry count seems
# wrong") any leaf holding a 3.5 directory item with item_len < 24 * entries,
# i.e. average stored name length < 8 bytes; a fresh mkdir makes exactly such
# an item (".", "..": 35 bytes) and the fs goes read-only.  So: no
# sub-directories, every name >= 8 bytes, all in the root (whose item
# fix35root.py padded to 48 bytes).  Covers edge sizes, a file with two
# indirect items, a sparse file, hard and symbolic links, non-ASCII and a
# 255-byte name, a device node, a fifo, deleted files.
# rfsck-mountopts: rw
for s in 0 1 7 8 9 4095 4096 4097 3976 16383 65537; do $GH gen $s $s text > size_____$s; done
$GH gen 1 4300000 text > big_two_indirect
$GH writeat sparse_hole_start 1048576 5000 11 text
$GH gen 21 5000 text > original_file
ln original_file hardlink_to_original
ln -s original_file symlink_short
ln -s "$(awk 'BEGIN{s="";for(i=0;i<300;i++)s=s "abcdefghi/";print s}')" symlink_3000_bytes
$GH gen 32 32 text > "$(printf 'utf8_caf\303\251_name')"
$GH gen 35 35 text > "$(printf 'rawbytes_\377\376')"
$GH gen 36 36 text > "$(awk 'BEGIN{s="";for(i=0;i<255;i++)s=s "n";print s}')"
mknod char_dev_1_3 c 1 3
mkfifo fifo_node_
i=0; while [ $i -lt 6 ]; do $GH gen $i 30000 text > deleted_later_$i; i=$((i+1)); done
sync; rm deleted_later_1 deleted_later_3 deleted_later_5
echo "format35 done"
