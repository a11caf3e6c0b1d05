#!/usr/bin/env bash
# Figures of a GPU benchmark run, made on any machine with gnuplot (gnuplot-nox) once the files are
# back from the GPU machine:
#   bash bench/gpu/plot_gpu.sh GPU_CSV OUT_DIR [TUNING_DB [TUNEDB_BIN [WORKLOADS_TSV]]]
# GPU_CSV: what bench_gpu.py --out wrote. Writes OUT_DIR/ratio.png (peer ms / Loom ms per workload,
# 1 = as fast as cuBLAS/cuDNN) and, with the tuning database, OUT_DIR/curves.png (best TFLOP/s so
# far against trial, per tuned workload, from `tunedb history` on the GPU's target key).
set -euo pipefail
csv=${1:?GPU_CSV}
out=${2:?OUT_DIR}
db=${3:-}
tunedb=${4:-build/tunedb}
tsv=${5:-bench/workloads.tsv}
command -v gnuplot > /dev/null || { echo "plot_gpu: gnuplot not found (apt-get install gnuplot-nox)" >&2; exit 1; }
mkdir -p "$out"
# ratio.dat: index, workload, ratio (rows with a number only)
python3 - "$csv" > "$out/ratio.dat" <<'PY'
import csv, math, sys
for i, r in enumerate(csv.DictReader(open(sys.argv[1]))):
    try:
        x = float(r["ratio"])
    except ValueError:
        continue
    if math.isfinite(x):
        print(i, '"%s"' % r["workload"], "%.4f" % x)
PY
cat > "$out/ratio.gp" <<'GP'
set terminal pngcairo noenhanced size 1000,500
set output 'ratio.png'
set title 'Loom on the GPU against cuBLAS / cuDNN (peer ms / Loom ms; 1 = as fast)'
set style fill solid 0.6
set boxwidth 0.6
set offsets 0,0,0.2,0
set yrange [0:*]
set xtics rotate by -45
set grid ytics
plot 'ratio.dat' using 1:3:xtic(2) with boxes notitle, 1 with lines lw 2 title 'parity'
GP
(cd "$out" && gnuplot ratio.gp)
echo "plot_gpu: $out/ratio.png"
[ -n "$db" ] || exit 0
# curves.dat: one gnuplot data block per workload tuned on the GPU in the database.
target=$(python3 -c 'import sqlite3, sys
row = sqlite3.connect(sys.argv[1]).execute("select key from targets where key like ? limit 1", ("cuda sm_%",)).fetchone()
print(row[0] if row else "")' "$db")
[ -n "$target" ] || { echo "plot_gpu: no GPU target in $db" >&2; exit 1; }
: > "$out/curves.dat"
plot="" index=0
while IFS=$'\t' read -r name op params; do
    [[ -z $name || $name == \#* || $name == name ]] && continue
    grep -q "^$name," "$csv" || continue
    hist=$("$tunedb" --db "$db" history --op "$op" --shape "$params" --target "$target" --csv 2> /dev/null) || continue
    rows=$(printf '%s\n' "$hist" | awk -F, 'NR > 1 && $5 != "" { print $1, $5 / 1000 }')
    [ -n "$rows" ] || continue
    { echo "# $name"; printf '%s\n\n\n' "$rows"; } >> "$out/curves.dat"
    plot+="${plot:+, }'curves.dat' index $index using 1:2 with lines lw 2 title '$name'"
    index=$((index + 1))
done < "$tsv"
[ $index -gt 0 ] || { echo "plot_gpu: no tuning history for these workloads in $db" >&2; exit 1; }
cat > "$out/curves.gp" <<GP
set terminal pngcairo noenhanced size 1000,600
set output 'curves.png'
set title 'Tuning on $target: best TFLOP/s so far against trial'
set xlabel 'trial'
set ylabel 'TFLOP/s'
set key left top
set grid
plot $plot
GP
(cd "$out" && gnuplot curves.gp)
echo "plot_gpu: $out/curves.png"
