#!/bin/sh
# guest-init.sh - /init of the rfsck corpus guest (busybox-static userland).
# Disks: vda = the ReiserFS image under test, vdb = job tar (recipe.sh,
# job.conf, guesthelper, payload), vdc = output disk (a tar of /out is written
# onto it raw).  job.conf sets MODE (run|dump), MOUNTOPTS.
#   run : mount vda, run recipe.sh (cwd = mount point), write manifest, umount
#   dump: mount vda, write manifest, umount (no recipe; used for ground truth
#         after a power cut and as the "kernel view" reader)
#   bench: mount vda, run recipe.sh, umount; no manifest walk (benchmark
#         volumes: the recipe writes its own sample into /out)
# Crash recipes never come back: they write "RFSCK: CRASHING" and trigger sysrq b.
# Everything ends with poweroff -f; qemu runs with -no-reboot and the host
# enforces a timeout, so nothing can hang.
# set -u but not -e: whatever fails, the script must still write /out and
# power off (every step's exit code is recorded in /out instead).
set -u
/bin/busybox mkdir -p /proc /sys /dev /bin /sbin /usr/bin /usr/sbin /tmp
/bin/busybox --install -s
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev 2>/dev/null || true
echo 1 > /proc/sys/kernel/sysrq
say() { echo "RFSCK: $*" > /dev/console; }
say "init start $(cat /proc/uptime)"
for m in $(cat /modules.order); do
    insmod "/lib/modules/$m" || say "insmod $m FAILED"
done
n=0
while [ ! -b /dev/vdc ] && [ $n -lt 100 ]; do sleep 0.1; n=$((n+1)); done
mkdir -p /job /out /mnt
if ! tar -xf /dev/vdb -C /job; then say "cannot read job disk"; poweroff -f; fi
MODE=run; MOUNTOPTS=rw
. /job/job.conf
export MNT=/mnt JOB=/job GH=/job/guesthelper
chmod +x /job/guesthelper
cat /proc/version > /out/uname.txt
say "mode $MODE mountopts $MOUNTOPTS"
if mount -t reiserfs -o "$MOUNTOPTS" /dev/vda /mnt > /out/mount.log 2>&1; then
    echo 0 > /out/mount.rc
    say "mounted"
    if [ "$MODE" = run ] || [ "$MODE" = bench ]; then
        ( cd /mnt && sh -eu /job/recipe.sh ) > /out/recipe.log 2>&1
        echo $? > /out/recipe.rc
        say "recipe rc $(cat /out/recipe.rc)"
        tail -n 20 /out/recipe.log > /dev/console
    fi
    cat /proc/mounts > /out/mounts.txt
    if [ "$MODE" = bench ]; then
        # benchmark volumes (build-bench-images.py): no full manifest walk;
        # the recipe writes its own sample to /out
        echo 0 > /out/manifest.rc
        : > /out/manifest.tsv
    else
        /job/guesthelper manifest /mnt > /out/manifest.tsv 2> /out/manifest.err
        echo $? > /out/manifest.rc
    fi
    say "manifest rc $(cat /out/manifest.rc) entries $(wc -l < /out/manifest.tsv)"
    sync
    umount /mnt > /out/umount.log 2>&1
    echo $? > /out/umount.rc
    say "umount rc $(cat /out/umount.rc)"
else
    echo 1 > /out/mount.rc
    say "mount FAILED: $(cat /out/mount.log)"
fi
dmesg > /out/dmesg.txt
echo done > /out/status
tar -cf /dev/vdc -C /out . && sync
say "DONE"
poweroff -f
