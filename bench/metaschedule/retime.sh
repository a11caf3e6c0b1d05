#!/usr/bin/env bash
# Re-times, back to back on one core, what compare.sh left in OUTDIR: for each workload Loom's
# default schedule, then per seed Loom's best record and MetaSchedule's best record, ROUNDS
# times over (alternating), so that programs tuned minutes or hours apart are compared under
# the same host speed. Appends to OUTDIR/retime.tsv: round, workload, seed, what, ms.
#
#   bash bench/metaschedule/retime.sh OUTDIR [CPU] [ROUNDS] [SEEDS] [WORKLOADS]
set -euo pipefail
out=${1:?usage: retime.sh OUTDIR [CPU] [ROUNDS] [SEEDS] [WORKLOADS]}
cpu=${2:-1}
rounds=${3:-3}
seeds=${4:-"1 2"}
names=${5:-"mm1024 r50_c3 r50_c4 r50_c3s2 mb_dw56"}
py=${TVM_PYTHON:-/opt/tvmenv/bin/python}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
wl=$here/workloads.tsv
[ -f "$out/retime.tsv" ] || printf 'round\tworkload\tseed\twhat\tms\n' > "$out/retime.tsv"
loom_ms() { python3 -c 'import csv,sys; print(next(csv.DictReader(open(sys.argv[1])))["loom_ms"])' "$1"; }
for r in $(seq 1 "$rounds"); do
    for w in $names; do
        taskset -c "$cpu" "$root/build/bench/bench_suite" --workloads "$wl" --threads 1 --only "$w" \
            --csv "$out/rt.csv" > /dev/null
        printf '%s\t%s\t-\tloom_default\t%s\n' "$r" "$w" "$(loom_ms "$out/rt.csv")" >> "$out/retime.tsv"
        for seed in $seeds; do
            [ -f "$out/loom-$w-$seed.db" ] || continue
            taskset -c "$cpu" "$root/build/bench/bench_suite" --workloads "$wl" --threads 1 \
                --only "$w" --db "$out/loom-$w-$seed.db" --csv "$out/rt.csv" > /dev/null
            printf '%s\t%s\t%s\tloom_search\t%s\n' "$r" "$w" "$seed" "$(loom_ms "$out/rt.csv")" >> "$out/retime.tsv"
            [ -d "$out/ms-$w-$seed" ] || continue
            taskset -c "$cpu" "$py" "$here/ms_tune.py" --workload "$w" --seed "$seed" --retime-only \
                --work-dir "$out/ms-$w-$seed" 2>/dev/null | tail -1 |
                python3 -c 'import json,sys; print(json.loads(sys.stdin.read())["retimed_ms"])' |
                xargs printf '%s\t%s\t%s\tmetaschedule\t%s\n' "$r" "$w" "$seed" >> "$out/retime.tsv"
        done
    done
done
cat "$out/retime.tsv"
