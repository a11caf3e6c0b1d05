#!/usr/bin/env bash
# The symbols libloom.so exports are exactly names the public headers
# declare (include/loom/api.h): no module internal (name__...) or helper
# leaks into programs' namespace, and every public function is there.
# Usage: check_exports.sh LIBLOOM.so INCLUDE_DIR
set -euo pipefail
lib=$1 inc=$2
fail=0
exported=$(nm -D --defined-only "$lib" | awk '$2 ~ /^[TDBRVW]$/ {print $3}' |
           grep -vE '^(_edata|_end|__bss_start|_init|_fini)$' | sort -u)
n=0
for sym in $exported; do
  n=$((n + 1))
  if ! grep -qw -- "$sym" "$inc"/loom/*.h; then
    echo "check_exports: $lib exports '$sym', which no header in $inc/loom declares"
    fail=1
  fi
done
# The other way: a function a public header declares that is not exported
# (a sample that every build has).
for sym in te_ctx_new sch_create cg_build rt_call tdb_open tune_task ops_from_key cm_model_new \
           gr_model_load tir_mutate; do
  if ! grep -qx -- "$sym" <<<"$exported"; then
    echo "check_exports: $lib does not export '$sym'"
    fail=1
  fi
done
[ "$n" -gt 0 ] || { echo "check_exports: no symbols read from $lib"; exit 1; }
[ $fail -eq 0 ] && echo "check_exports: $n symbols, all declared in $inc/loom"
exit $fail
