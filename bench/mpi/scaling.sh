#!/usr/bin/env bash
# Issue 33's scaling benchmark: trials per minute of `autotune` on mm1024 (or SCALING_ARGS) with 1,
# 2, 4 and 8 measurement workers under mpirun (rank 0 searches, ranks 1..W measure, one thread
# each), and a single process without mpirun as the baseline, each for SECONDS of wall time and
# then stopped with SIGINT (autotune saves what it measured and exits). Writes OUT/mpi.csv
#   workers,np,seconds,trials,trials_per_min,scaling_vs_1
# and appends each run's closing lines to OUT/mpi.log. Each worker is bound to a core of its own;
# where the host has cores to spare, rank 0 runs on all of them (a rankfile; RANK0_SPARE=0: bound
# to one core like the workers). Needs `mpirun` (or MPIRUN) on PATH, an autotune built with
# LOOM_WITH_MPI (AUTOTUNE, default build/autotune) and python3 (counts the records). On the GPU
# machine, after `source .devdeps/mpi/unpack-mpi.sh` (bench/README.md):
#   [SCALING_ARGS="--suite r50.tsv"] bash bench/mpi/scaling.sh OUT [SECONDS] [WORKERS...]
set -u
out=${1:?output dir}
secs=${2:-25}
shift $(( $# >= 2 ? 2 : $# ))
workers=${*:-1 2 4 8}
at=${AUTOTUNE:-build/autotune}
mpirun=${MPIRUN:-mpirun}
mkdir -p "$out"
# SCALING_ARGS: the workload (default mm1024), e.g. "--suite r50.tsv"
wl=${SCALING_ARGS:-"--op matmul --shape M=1024,N=1024,K=1024"}
ncores=$(nproc)
count() { python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('select count(*) from records').fetchone()[0])" "$1"; }
echo "workers,np,seconds,trials,trials_per_min,scaling_vs_1" > "$out/mpi.csv"
one=""
for w in 0 $workers; do
    db=$(mktemp -u /tmp/scaling-XXXX.db)
    t0=$(date +%s.%N)
    if [ "$w" = 0 ]; then
        echo "== single process, $secs s" >> "$out/mpi.log"
        timeout -s INT -k 20 "$secs" "$at" $wl --trials 100000 --threads 1 \
            --retime 0 --db "$db" >> "$out/mpi.log.tmp" 2>&1
    else
        # Each worker on a core of its own; rank 0 on the cores left over
        # (its search runs on the thread pool: bound to one core it proposed
        # a convolution candidate in 0.17 s, against 0.014 s on 16 cores),
        # or, with no core left, bound to a core like the workers.
        bind=(--bind-to core:overload-allowed)
        if [ "${RANK0_SPARE:-1}" != 0 ] && [ "$ncores" -gt $((w + 1)) ]; then
            rf="$out/rankfile.$w"
            echo "rank 0=$(hostname) slot=$w-$((ncores - 1))" > "$rf"
            for ((r = 1; r <= w; r++)); do echo "rank $r=$(hostname) slot=$((r - 1))" >> "$rf"; done
            bind=(--rankfile "$rf")
        fi
        echo "== mpirun -np $((w + 1)) ($w workers), $secs s, ${bind[*]}" >> "$out/mpi.log"
        timeout -s INT -k 20 "$secs" "$mpirun" --allow-run-as-root --oversubscribe "${bind[@]}" \
            -np $((w + 1)) -x LD_LIBRARY_PATH -x OPAL_PREFIX "$at" $wl \
            --trials 100000 --threads 1 --retime 0 --db "$db" >> "$out/mpi.log.tmp" 2>&1
    fi
    rc=$?
    t=$(awk "BEGIN{print $(date +%s.%N) - $t0}")
    # the progress line is redrawn with \r: keep the closing lines only
    tr '\r' '\n' < "$out/mpi.log.tmp" | grep -v '^\[' | tail -40 >> "$out/mpi.log"
    rm -f "$out/mpi.log.tmp"
    n=$(count "$db" 2>/dev/null || echo 0)
    echo "exit $rc, $n records in $t s" >> "$out/mpi.log"
    rate=$(awk "BEGIN{printf \"%.1f\", $n / $t * 60}")
    [ "$w" = 1 ] && one=$rate
    sc=$( [ -n "$one" ] && awk "BEGIN{printf \"%.2f\", $rate / ($one * $w)}" || echo "")
    echo "$w,$((w + 1)),$t,$n,$rate,$sc" >> "$out/mpi.csv"
    rm -f "$db" "$db-wal" "$db-shm"
done
cat "$out/mpi.csv"
