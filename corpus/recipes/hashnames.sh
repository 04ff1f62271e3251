# hashnames.sh - names for hash-specific images (tea, rupasov, r5): one big
# directory with 600 entries (spans several directory items / leaves), names of
# many lengths incl. UTF-8 and raw bytes, similar names that collide under the
# rupasov hash, a few files with content, a renamed and a deleted batch.
# rfsck-mountopts: rw
mkdir many
i=0
while [ $i -lt 600 ]; do
    : > "many/entry_$i"
    i=$((i+1))
done
i=0
while [ $i -lt 40 ]; do
    $GH gen $i $((i*101)) text > "many/data_$i"
    i=$((i+1))
done
mkdir similar
for n in a b ab ba abc acb bac bca cab cba 1 10 100 01 001 x1 x01 x001; do
    $GH gen 7 17 text > "similar/$n"
done
$GH gen 8 18 text > "similar/$(printf '\303\251t\303\251')"
$GH gen 9 19 text > "similar/$(printf '\377\376\375')"
i=600
while [ $i -lt 650 ]; do : > many/entry_$i; i=$((i+1)); done
sync
i=600
while [ $i -lt 650 ]; do mv many/entry_$i many/renamed_$i; i=$((i+2)); done
i=601
while [ $i -lt 650 ]; do rm many/entry_$i; i=$((i+2)); done
echo "hashnames done"
