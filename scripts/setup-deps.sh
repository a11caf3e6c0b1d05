#!/usr/bin/env bash
# Installs the Debian packages Loom needs to build and test, when missing.
# Usage: bash scripts/setup-deps.sh   (OpenBLAS, oneDNN and gnuplot are for bench/;
# libonnx-testdata is ONNX's own test models, for tests/test_graph_load.c)
# Runs as root (apt-get); does nothing when everything is already installed.
set -euo pipefail
# libonnx-dev gives onnx.proto, which protoc-c (protobuf-c-compiler) turns into
# C at build time for graph/ (ONNX model loading), linked with libprotobuf-c.
# Open MPI: `mpirun -np N autotune` (LOOM_WITH_MPI) and its tests.
# g++: one C++ file asks LLVM for its CPU names (codegen/llvm/llvm_cpu_names.cpp).
pkgs=(gcc g++ make cmake pkg-config llvm-19-dev libzstd-dev libxgboost-dev libsqlite3-dev
      libdlpack-dev libcjson-dev libcmocka-dev libopenblas-dev libdnnl-dev gnuplot-nox
      libonnx-dev protobuf-c-compiler libprotobuf-c-dev libonnx-testdata
      libopenmpi-dev openmpi-bin)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup-deps: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
