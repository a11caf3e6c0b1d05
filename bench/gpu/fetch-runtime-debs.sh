#!/usr/bin/env bash
# On the CPU machine, from the project root: puts in .devdeps/ (git-ignored via .git/info/exclude)
# the Debian runtime libraries a build made here needs on the GPU machine, which lacks them
# (Ubuntu 24.04 with CUDA, no package registry), and the script that unpacks them there:
#   bash bench/gpu/fetch-runtime-debs.sh
#   (device tool) carry [".devdeps", "build-dev"], command:
#   source .devdeps/unpack-runtime-debs.sh && bash bench/gpu/device_check.sh build-dev "$OUT"
# build-dev: a Release build without -march (the GPU machine's CPU differs; the LLVM JIT targets
# whatever CPU it runs on). The libraries: LLVM 19 and its own needs (z3, edit), XGBoost (dmlc),
# cJSON, SQLite, protobuf-c (graph/), OpenBLAS (bench/) and cmocka for the tests.
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
exclude=$(git rev-parse --git-path info/exclude)
grep -qx '/.devdeps/' "$exclude" 2>/dev/null || echo '/.devdeps/' >> "$exclude"
mkdir -p .devdeps
(cd .devdeps && apt-get download -q libllvm19 libz3-4 libedit2 libxgboost0 libdmlc0 libcjson1 \
    libsqlite3-0 libcmocka0 libprotobuf-c1 libopenblas0-pthread libopenblas0 2>&1 | grep -v '^W: Download is performed unsandboxed' || true)
cat > .devdeps/unpack-runtime-debs.sh <<'UNPACK'
# Sourced on the GPU machine from the project root: unpacks the carried .debs under /opt/devdeps
# (the system's own libraries untouched) and puts them and CUDA's libraries on the loader path.
mkdir -p /opt/devdeps
for f in .devdeps/*.deb; do dpkg -x "$f" /opt/devdeps; done
export LD_LIBRARY_PATH=/opt/devdeps/usr/lib/x86_64-linux-gnu:/opt/devdeps/usr/lib/x86_64-linux-gnu/openblas-pthread:/opt/devdeps/usr/lib/llvm-19/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
UNPACK
ls -la .devdeps
