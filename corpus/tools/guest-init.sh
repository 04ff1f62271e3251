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
#   multi: several images in one boot (kernel view of repaired images,
#         test-kernel.sh --fixed).  Image 0 is vda; image N >= 1 is the extra
#         disk whose serial is "imgN".  Per image, output files are prefixed
#         /out/iN.: phase "ro" = mount ro, manifest, umount; then, if the job
#         has write.sh and cleanup.sh, phase "rw" = mount rw, write.sh,
#         umount; drop caches; mount rw, manifest (everything read back from
#         disk after the kernel allocated new blocks), cleanup.sh, umount.
#         iN.steps lists "STEP RC" per step; iN.ro.dmesg / iN.rw.dmesg hold
#         the kernel log of each phase (dmesg -c), boot.dmesg what came before.
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
# multi_image DEV PREFIX: the per-image phases of MODE=multi (see the header);
# a step that fails skips the rest of its phase, never the next image.
multi_image() {
    dev=$1; p=$2
    step() { echo "$1 $2" >> "$p.steps"; }
    if mount -t reiserfs -o ro "$dev" /mnt > "$p.ro.mount.log" 2>&1; then
        step ro.mount 0
        /job/guesthelper manifest /mnt > "$p.ro.manifest.tsv" 2> "$p.ro.manifest.err"
        step ro.manifest $?
        umount /mnt > "$p.ro.umount.log" 2>&1
        step ro.umount $?
    else
        step ro.mount 1
    fi
    dmesg -c > "$p.ro.dmesg"
    [ -f /job/write.sh ] && [ -f /job/cleanup.sh ] || return 0
    grep -q '^ro.umount 0$' "$p.steps" || return 0
    if mount -t reiserfs -o rw "$dev" /mnt > "$p.rw.mount.log" 2>&1; then
        step write.mount 0
        ( cd /mnt && sh -eu /job/write.sh ) > "$p.write.log" 2>&1
        step write.recipe $?
        sync
        umount /mnt >> "$p.rw.mount.log" 2>&1
        step write.umount $?
    else
        step write.mount 1
    fi
    echo 3 > /proc/sys/vm/drop_caches
    if grep -q '^write.umount 0$' "$p.steps" && \
       mount -t reiserfs -o rw "$dev" /mnt >> "$p.rw.mount.log" 2>&1; then
        step rw.mount 0
        /job/guesthelper manifest /mnt > "$p.rw.manifest.tsv" 2> "$p.rw.manifest.err"
        step rw.manifest $?
        ( cd /mnt && sh -eu /job/cleanup.sh ) >> "$p.write.log" 2>&1
        step cleanup.recipe $?
        sync
        umount /mnt >> "$p.rw.mount.log" 2>&1
        step rw.umount $?
    fi
    dmesg -c > "$p.rw.dmesg"
}
if [ "$MODE" = multi ]; then
    dmesg -c > /out/boot.dmesg
    list="vda:0"
    for s in /sys/block/vd*/serial; do
        [ -r "$s" ] || continue
        d=${s#/sys/block/}; d=${d%/serial}
        case $(cat "$s") in img[0-9]*) list="$list $d:$(cat "$s" | sed 's/^img//')" ;; esac
    done
    echo "$list" > /out/images.txt
    for e in $list; do
        d=${e%%:*}; i=${e#*:}
        say "image $i on $d"
        multi_image "/dev/$d" "/out/i$i"
        say "image $i: $(tr '\n' ' ' < "/out/i$i.steps")"
    done
    echo 0 > /out/mount.rc
    dmesg > /out/dmesg.txt
    echo done > /out/status
    tar -cf /dev/vdc -C /out . && sync
    say "DONE"
    poweroff -f
fi
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
