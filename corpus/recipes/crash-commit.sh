# crash-commit.sh - power cut after journal commits.  Base files are written
# and synced; then more work is done WITHOUT sync (creates, appends, renames,
# deletes), the kernel's commit thread gets a few seconds (mount option
# commit=1) to commit transactions to the journal, and the guest is reset with
# sysrq b.  The ground truth comes from a second boot that replays the journal.
# rfsck-mountopts: rw,commit=1
# rfsck-crash: yes
mkdir base
i=0
while [ $i -lt 30 ]; do $GH gen $i $((i*333+1)) text > base/b$i; i=$((i+1)); done
$GH gen 500 300000 text > base/grow
sync
mkdir after
i=0
while [ $i -lt 40 ]; do $GH gen $((1000+i)) $((i*211+5)) text > after/a$i; i=$((i+1)); done
$GH gen 501 200000 text >> base/grow
mv base/b1 after/moved_b1
rm base/b2 base/b3
mkdir after/dir1 after/dir2
ln base/b4 after/link_b4
sleep 4
echo "RFSCK: CRASHING" > /dev/console
echo b > /proc/sysrq-trigger
sleep 10
