#!/usr/bin/env bash
# Issue 35's comparison: Loom's search alone (--skip-default) against TVM MetaSchedule, same
# trial budget, one thread, both pinned to the same core, run one after the other.
#
#   bash bench/metaschedule/compare.sh OUTDIR [CPU] [TRIALS] [SEEDS] [WORKLOADS]
#
# OUTDIR gets, per workload and seed: loom-W-S.db/.log (autotune), ms-W-S/ (MetaSchedule's
# work dir), ms-W-S.json/.log, and after each pair both bests re-timed back to back
# (bench_suite --db for Loom, ms_tune.py's time_evaluator pass for MetaSchedule), collected in
# OUTDIR/summary.tsv. Loom's default schedule is timed once per workload (default.csv).
# Needs: a Release build in build/ (bash scripts/build.sh build) and TVM in a venv:
#   python3 -m venv /opt/tvmenv && /opt/tvmenv/bin/pip install -r bench/metaschedule/requirements.txt
# (TVM_PYTHON overrides the interpreter).
set -euo pipefail
out=${1:?usage: compare.sh OUTDIR [CPU] [TRIALS] [SEEDS] [WORKLOADS]}
cpu=${2:-1}
trials=${3:-200}
seeds=${4:-"1 2"}
names=${5:-"mm1024 r50_c3 r50_c4 r50_c3s2 mb_dw56"}
py=${TVM_PYTHON:-/opt/tvmenv/bin/python}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
wl=$here/workloads.tsv
mkdir -p "$out"
pin() { taskset -c "$cpu" "$@"; }

taskset -c "$cpu" "$root/build/bench/bench_suite" --workloads "$wl" --threads 1 \
    --only "$(echo $names | tr ' ' ,)" --csv "$out/default.csv" > "$out/default.txt"
[ -f "$out/summary.tsv" ] || printf 'workload\tseed\tloom_best_ms\tloom_retimed_ms\tloom_wall_s\tms_best_ms\tms_retimed_ms\tms_wall_s\n' > "$out/summary.tsv"
for seed in $seeds; do
    for w in $names; do
        line=$(awk -F'\t' -v w="$w" '$1 == w {print $2 "\t" $3}' "$wl")
        op=${line%%$'\t'*}
        shape=${line#*$'\t'}
        db=$out/loom-$w-$seed.db
        rm -f "$db"
        t0=$(date +%s)
        pin "$root/build/autotune" --op "$op" --shape "$shape" --trials "$trials" --threads 1 \
            --jobs 1 --skip-default --seed "$seed" --retime 0 --db "$db" > "$out/loom-$w-$seed.log" 2>&1
        loom_wall=$(( $(date +%s) - t0 ))
        pin "$root/build/bench/bench_suite" --workloads "$wl" --threads 1 --only "$w" --db "$db" \
            --csv "$out/loom-$w-$seed.csv" > /dev/null
        pin "$py" "$here/ms_tune.py" --workload "$w" --trials "$trials" --seed "$seed" \
            --work-dir "$out/ms-$w-$seed" --trace-out "$out/ms-$w-$seed.trace" \
            > "$out/ms-$w-$seed.json" 2> "$out/ms-$w-$seed.log"
        python3 - "$out" "$w" "$seed" "$loom_wall" <<'PY'
import csv, json, re, sys
out, w, seed, wall = sys.argv[1:]
log = open(f"{out}/loom-{w}-{seed}.log").read()
m = re.findall(r"best: [0-9.]+ GFLOP/s, ([0-9.]+) ms", log)
row = next(csv.DictReader(open(f"{out}/loom-{w}-{seed}.csv")))
ms = json.loads(open(f"{out}/ms-{w}-{seed}.json").read().strip().splitlines()[-1])
with open(f"{out}/summary.tsv", "a") as f:
    f.write("\t".join([w, seed, m[-1] if m else "?", "%.4f" % float(row["loom_ms"]), wall,
                       str(ms["ms_best_ms"]), str(ms["retimed_ms"]), str(ms["wall_s"])]) + "\n")
PY
    done
done
cat "$out/summary.tsv"
