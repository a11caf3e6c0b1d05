# Per-model bars: ONNX Runtime and Loom (default schedules; tuned when a
# column has figures) as throughput relative to ORT on the same host.
#   gnuplot -e "in='FILE.csv'; out='FILE.png'" bench/models/plot.gp
# CSV columns: model,threads,ort_ms,loom_default_ms,loom_tuned_ms (tuned may be empty);
# times in ms, or each relative to ORT's (ORT 1.0: a median of per-round ratios).
set datafile separator ","
set key autotitle columnhead
set terminal pngcairo size 900,480
set output out
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set ylabel "throughput relative to ONNX Runtime (ORT ms / ms)"
set yrange [0:*]
set bmargin 4
set grid ytics
set key outside top center horizontal
set title "Whole models, batch 1 (ORT 1.32 = 1.0)"
plot in using (1.0):xtic(sprintf("%s\n%d thread%s", stringcolumn(1), column(2), column(2) > 1 ? "s" : "")) title "ONNX Runtime", \
     '' using ($3/$4) title "Loom default", \
     '' using (valid(5) ? $3/$5 : 0) title "Loom tuned (no bar: not measured)"
