# crash-safelink.sh - a file held open and unlinked at the power cut: the
# kernel records a "safe link" (unfinished unlink) in the tree; the second
# boot's mount completes the unlink.  Also a truncate in flight on an open file.
# rfsck-mountopts: rw
# rfsck-crash: yes
mkdir keep
i=0
while [ $i -lt 10 ]; do $GH gen $i $((i*1000+1)) text > keep/k$i; i=$((i+1)); done
$GH gen 77 400000 text > victim
$GH gen 78 300000 text > victim_small_tail
sync
exec 3<victim
exec 4<victim_small_tail
rm victim victim_small_tail
sync
echo "RFSCK: CRASHING" > /dev/console
echo b > /proc/sysrq-trigger
sleep 10
