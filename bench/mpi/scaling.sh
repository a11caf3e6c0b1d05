#!/usr/bin/env bash
# Issue 33's scaling benchmark: trials per minute of `autotune` on mm1024 with 1, 2, 4 and 8
# measurement workers under mpirun (rank 0 searches, ranks 1..W measure, one thread each), and a
# single process without mpirun as the baseline, each for SECONDS of wall time and then stopped
# with SIGINT (autotune saves what it measured and exits). Writes OUT/mpi.csv
#   workers,np,seconds,trials,trials_per_min,scaling_vs_1
# and appends each run's closing lines to OUT/mpi.log. Needs `mpirun` (or MPIRUN) on PATH, an
# autotune built with LOOM_WITH_MPI (AUTOTUNE, default build/autotune) and python3 (counts the
# records). On the GPU machine, after `source .devdeps/mpi/unpack-mpi.sh` (bench/README.md):
#   bash bench/mpi/scaling.sh OUT [SECONDS] [WORKERS...]
set -u
out=${1:?output dir}
secs=${2:-25}
shift $(( $# >= 2 ? 2 : $# ))
workers=${*:-1 2 4 8}
at=${AUTOTUNE:-build/autotune}
mpirun=${MPIRUN:-mpirun}
mkdir -p "$out"
shape="M=1024,N=1024,K=1024"
count() { python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute('select count(*) from records').fetchone()[0])" "$1"; }
echo "workers,np,seconds,trials,trials_per_min,scaling_vs_1" > "$out/mpi.csv"
one=""
for w in 0 $workers; do
    db=$(mktemp -u /tmp/scaling-XXXX.db)
    t0=$(date +%s.%N)
    if [ "$w" = 0 ]; then
        echo "== single process, $secs s" >> "$out/mpi.log"
        timeout -s INT -k 20 "$secs" "$at" --op matmul --shape "$shape" --trials 100000 --threads 1 \
            --retime 0 --db "$db" >> "$out/mpi.log.tmp" 2>&1
    else
        echo "== mpirun -np $((w + 1)) ($w workers), $secs s" >> "$out/mpi.log"
        timeout -s INT -k 20 "$secs" "$mpirun" --allow-run-as-root --oversubscribe --bind-to core:overload-allowed \
            -np $((w + 1)) -x LD_LIBRARY_PATH -x OPAL_PREFIX "$at" --op matmul --shape "$shape" \
            --trials 100000 --threads 1 --retime 0 --db "$db" >> "$out/mpi.log.tmp" 2>&1
    fi
    rc=$?
    t=$(awk "BEGIN{print $(date +%s.%N) - $t0}")
    # the progress line is redrawn with \r: keep the closing lines only
    tr '\r' '\n' < "$out/mpi.log.tmp" | grep -v '^\[' | tail -8 >> "$out/mpi.log"
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
