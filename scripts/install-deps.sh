#!/usr/bin/env bash
# Debian packages evo builds and tests with (the CUDA toolkit itself must already be there:
# NVRTC and headers under $CUDA_HOME or /usr/local/cuda).
set -euo pipefail
packages=(cmake ninja-build g++ libcli11-dev nlohmann-json3-dev libspdlog-dev libfmt-dev libgtest-dev
          clang libclang-rt-14-dev python3)
missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if ((${#missing[@]})); then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}"
fi
# The cluster test (ctest -L cluster) starts a private Slurm on localhost: Debian's daemons and
# munge, without recommends (no database, no GUI). Skipped where there is no apt-get.
cluster=(slurmctld slurmd slurm-client munge)
missing=()
for p in "${cluster[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if ((${#missing[@]})) && command -v apt-get >/dev/null; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  { $sudo apt-get update -qq &&
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"; } ||
    echo "install-deps: could not install ${missing[*]}; the cluster test will be skipped" >&2
fi
if ! ls "${CUDA_HOME:-/usr/local/cuda}"/include/cuda_fp16.h >/dev/null 2>&1; then
  echo "install-deps: the CUDA toolkit was not found (set CUDA_HOME); evo needs its NVRTC and headers" >&2
  exit 2
fi
# nvdisasm reads the SASS of evo's cubins for the technique gate (HGMMA, UTMALDG, ...); CUDA
# toolkits without it (this CI image) get NVIDIA's wheel, which evo finds through python3.
if ! command -v nvdisasm >/dev/null 2>&1 && ! [ -x "${CUDA_HOME:-/usr/local/cuda}/bin/nvdisasm" ] &&
   ! python3 -c "import nvidia, os, sys; sys.exit(0 if any(os.path.exists(p + '/cu13/bin/nvdisasm') for p in nvidia.__path__) else 1)" 2>/dev/null; then
  python3 -m pip install --quiet --disable-pip-version-check nvidia-cuda-nvdisasm==13.2.86 ||
    { echo "install-deps: could not install nvidia-cuda-nvdisasm (pip); set EVO_NVDISASM to an nvdisasm" >&2; exit 2; }
fi
