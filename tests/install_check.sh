#!/usr/bin/env bash
# Installs the build into a temporary prefix, runs the installed programs
# from there, and builds a small program against it twice: with pkg-config
# and with find_package(loom). The program prints the host CPU LLVM
# detects. Usage: install_check.sh BUILD_DIR
set -euo pipefail
build=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" > /dev/null

# The programs start from a prefix the loader does not search (their
# RUNPATH names the lib directory beside them), with no LD_LIBRARY_PATH,
# and load the installed libloom, not the build tree's.
for tool in autotune tunedb; do
    if [ ! -x "$tmp/prefix/bin/$tool" ]; then
        echo "install check: $tool is not installed in $tmp/prefix/bin" >&2
        exit 1
    fi
    lib=$(env -u LD_LIBRARY_PATH ldd "$tmp/prefix/bin/$tool" | awk '/libloom/ {print $3}')
    case "$lib" in
    "$tmp/prefix/"*) ;;
    *) echo "install check: installed $tool loads libloom from '$lib', not from $tmp/prefix" >&2
       exit 1 ;;
    esac
    env -u LD_LIBRARY_PATH "$tmp/prefix/bin/$tool" --help > "$tmp/help.txt"
    grep -q "usage: $tool" "$tmp/help.txt"
done
# The measurement process, in libexec, loads the installed libloom too.
runner="$tmp/prefix/libexec/loom-runner"
if [ ! -x "$runner" ]; then
    echo "install check: loom-runner is not installed in $tmp/prefix/libexec" >&2
    exit 1
fi
lib=$(env -u LD_LIBRARY_PATH ldd "$runner" | awk '/libloom/ {print $3}')
case "$lib" in
"$tmp/prefix/"*) ;;
*) echo "install check: installed loom-runner loads libloom from '$lib', not from $tmp/prefix" >&2
   exit 1 ;;
esac
# A real run: two trials measured by the runners (the installed
# loom-runner), stored, then read back by the installed tunedb. One
# thread: under ctest -j2 the other core is busy, and a tiny kernel's
# 2-thread calls then wait for a descheduled worker (a first trial once
# passed the 10 s run timeout that way, session 39).
env -u LD_LIBRARY_PATH -u LOOM_TUNEDB "$tmp/prefix/bin/autotune" --op matmul --shape M=8,N=8,K=8 \
    --trials 2 --no-model --threads 1 --db "$tmp/t.db" > "$tmp/run.txt" 2>&1 ||
    { cat "$tmp/run.txt" >&2; exit 1; }
env -u LD_LIBRARY_PATH -u LOOM_TUNEDB "$tmp/prefix/bin/tunedb" --db "$tmp/t.db" stats > "$tmp/stats.txt"
grep -q "records         2 (0 failed)" "$tmp/stats.txt" ||
    { cat "$tmp/run.txt" "$tmp/stats.txt" >&2; exit 1; }
cat > "$tmp/use.c" <<'C'
#include <loom/loom.h>
#include <stdio.h>
#include <stdlib.h>
int main(void) {
    char *cpu = cg_llvm_host_cpu();
    te_ctx *ctx = te_ctx_new();
    te_expr *e = te_add(te_int(ctx, 2), te_int(ctx, 3));
    int64_t v = 0;
    int ok = cpu && te_is_const_int(e, &v) && v == 5;
    printf("%s %s\n", cpu ? cpu : "?", LOOM_VERSION_STRING);
    free(cpu);
    te_ctx_free(ctx);
    return ok ? 0 : 1;
}
C
export PKG_CONFIG_PATH="$tmp/prefix/lib/pkgconfig"
cc -std=c11 "$tmp/use.c" $(pkg-config --cflags --libs loom) -Wl,-rpath,"$tmp/prefix/lib" -o "$tmp/use_pc"
"$tmp/use_pc"
mkdir "$tmp/cm"
cat > "$tmp/cm/CMakeLists.txt" <<CM
cmake_minimum_required(VERSION 3.20)
project(use_loom C)
find_package(loom 0.1 REQUIRED)
add_executable(use_cm "$tmp/use.c")
target_link_libraries(use_cm PRIVATE loom::loom)
CM
# A program that tunes without calling tune_runner_maybe_run (a host
# embedding Loom) measures through the installed loom-runner.
cat > "$tmp/tune.c" <<'C'
#include <loom/loom.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(void) {
    tune_options o;
    memset(&o, 0, sizeof o);
    o.trials = 2;
    o.per_round = 2;
    o.population = 16;
    o.generations = 1;
    o.measure.repeat = 2;
    o.measure.num_threads = 1;
    tune_summary sum;
    char *err = NULL;
    if (tune_task("matmul(M=8,N=8,K=8)", "llvm", &o, &sum, &err)) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    printf("measured %d valid %d\n", sum.measured, sum.valid);
    free(sum.best_steps_json);
    return sum.valid > 0 ? 0 : 1;
}
C
cc -std=c11 "$tmp/tune.c" $(pkg-config --cflags --libs loom) -Wl,-rpath,"$tmp/prefix/lib" -o "$tmp/tune"
env -u LD_LIBRARY_PATH -u LOOM_RUNNER "$tmp/tune" > "$tmp/tune.txt" 2>&1 ||
    { cat "$tmp/tune.txt" >&2; exit 1; }
grep -q "measured 2 valid" "$tmp/tune.txt" || { cat "$tmp/tune.txt" >&2; exit 1; }
cmake -S "$tmp/cm" -B "$tmp/cm/b" -DCMAKE_PREFIX_PATH="$tmp/prefix" > /dev/null
cmake --build "$tmp/cm/b" > /dev/null
"$tmp/cm/b/use_cm"
echo "install check: autotune and tunedb run from the prefix, a program that never calls tune_runner_maybe_run tunes through the installed loom-runner; pkg-config and find_package(loom) both build and run"
