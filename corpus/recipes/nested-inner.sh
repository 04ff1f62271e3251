# nested-inner.sh - contents of the INNER image of the nested-image case:
# 300 small files in 10 directories plus a few larger ones, so that the
# "foreign files" count after a rebuild of the outer volume is meaningful.
# rfsck-mountopts: rw
i=0
while [ $i -lt 300 ]; do
    d=inner_d$((i / 30))
    [ -d $d ] || mkdir $d
    $GH gen $((7000+i)) $((50 + (i*37) % 900)) text > $d/inner_f$i
    i=$((i+1))
done
$GH gen 7999 30000 text > inner_large
ln -s inner_large inner_symlink
echo "nested-inner done"
