#!/usr/bin/env bash
# On the CPU machine, from the project root: what issue 33's scaling benchmark (bench/mpi/scaling.sh)
# needs on the GPU machine, which has no Open MPI: Debian 12's Open MPI 4.1 runtime .debs in
# .devdeps/mpi/ (git-ignored, as .devdeps), an `autotune` built with LOOM_WITH_MPI and its libloom
# (.devdeps/mpi/bin/, stripped), and .devdeps/mpi/unpack-mpi.sh, which, sourced there from the project
# root, unpacks the .debs under /opt/devmpi and relocates Open MPI there (OPAL_PREFIX). The transports
# that need hardware (UCX, libfabric, PSM) are left to their packages but switched off: one host,
# shared memory (btl self,vader; pml ob1). About 8 MB.
#   bash bench/mpi/fetch-mpi-runtime.sh
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
exclude=$(git rev-parse --git-path info/exclude)
grep -qx '/.devdeps/' "$exclude" 2>/dev/null || echo '/.devdeps/' >> "$exclude"
mkdir -p .devdeps/mpi/bin
(cd .devdeps/mpi && apt-get download -q openmpi-bin libopenmpi3 openmpi-common libpmix2 libhwloc15 \
    libevent-core-2.1-7 libevent-pthreads-2.1-7 libltdl7 libnl-3-200 libnl-route-3-200 libibverbs1 \
    librdmacm1 libucx0 libfabric1 libpsm2-2 libpsm-infinipath1 libxnvctrl0 libgfortran5 2>&1 |
    grep -v '^W: Download is performed unsandboxed' || true)
cmake -B build-mpi -S . -DCMAKE_BUILD_TYPE=Release -DLOOM_WERROR=ON -DLOOM_WITH_MPI=ON -DLOOM_BUILD_BENCH=OFF > /dev/null
cmake --build build-mpi -j2 --target autotune > /dev/null
cp build-mpi/autotune .devdeps/mpi/bin/
cp -a build-mpi/libloom.so* .devdeps/mpi/bin/
strip .devdeps/mpi/bin/autotune .devdeps/mpi/bin/libloom.so.*.*
cat > .devdeps/mpi/unpack-mpi.sh <<'UNPACK'
# Sourced on the GPU machine from the project root (after .devdeps/unpack-runtime-debs.sh).
mkdir -p /opt/devmpi
for f in .devdeps/mpi/*.deb; do dpkg -x "$f" /opt/devmpi; done
export OPAL_PREFIX=/opt/devmpi/usr
export PATH=/opt/devmpi/usr/bin:$PATH
export LD_LIBRARY_PATH=$PWD/.devdeps/mpi/bin:/opt/devmpi/usr/lib/x86_64-linux-gnu:/opt/devmpi/usr/lib/x86_64-linux-gnu/openmpi/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export OMPI_MCA_mtl='^ofi' OMPI_MCA_btl=self,vader OMPI_MCA_pml=ob1
export MPIRUN=/opt/devmpi/usr/bin/orterun AUTOTUNE=$PWD/.devdeps/mpi/bin/autotune
UNPACK
du -sh .devdeps/mpi
