#!/usr/bin/env bash
# Installs the build into a temporary prefix and builds a small program
# against it twice: with pkg-config and with find_package(loom). The
# program prints the host CPU LLVM detects. Usage: install_check.sh BUILD_DIR
set -euo pipefail
build=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" > /dev/null
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
cmake -S "$tmp/cm" -B "$tmp/cm/b" -DCMAKE_PREFIX_PATH="$tmp/prefix" > /dev/null
cmake --build "$tmp/cm/b" > /dev/null
"$tmp/cm/b/use_cm"
echo "install check: pkg-config and find_package(loom) both build and run"
