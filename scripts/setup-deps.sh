#!/usr/bin/env bash
# Installs the Debian packages Loom needs to build and test, when missing.
# Usage: bash scripts/setup-deps.sh   (OpenBLAS, oneDNN and gnuplot are for bench/)
# Runs as root (apt-get); does nothing when everything is already installed.
set -euo pipefail
# g++: one C++ file asks LLVM for its CPU names (codegen/llvm/llvm_cpu_names.cpp).
pkgs=(gcc g++ make cmake pkg-config llvm-19-dev libzstd-dev libxgboost-dev libsqlite3-dev
      libdlpack-dev libcjson-dev libcmocka-dev libopenblas-dev libdnnl-dev gnuplot-nox)
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
