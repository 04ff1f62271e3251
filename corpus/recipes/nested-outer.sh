# nested-outer.sh - the OUTER volume of the nested-image case: its own files
# plus the inner ReiserFS image (payload inner.img, made by mkreiserfs on the
# host and populated by nested-inner.sh in an earlier boot) copied in as a
# plain regular file.
# rfsck-mountopts: rw
# rfsck-payload: inner.img
mkdir own images
i=0
while [ $i -lt 60 ]; do $GH gen $((8000+i)) $((100 + i*97)) text > own/outer_f$i; i=$((i+1)); done
$GH gen 8999 600000 text > own/outer_big
cp "$JOB/inner.img" images/inner.img
$GH gen 8998 5000 text > images/after_image
sync
echo "nested-outer done"
