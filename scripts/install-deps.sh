#!/usr/bin/env bash
# Install what this machine lacks to build evo, and nothing it already has. Tools are found by
# command and libraries by CMake's find_package (a probe project), never by package name, so a
# host that got cmake from pip or a library from source counts as having it. Only what is
# missing is installed, with apt-get; without apt-get (or without a package network) the
# message names what to install and the exit code is 2.
#
#   scripts/install-deps.sh           the main job: compiler, cmake, ninja, CLI11, nlohmann/json,
#                                     spdlog, fmt, zlib, python3, the CUDA toolkit, nvdisasm
#   scripts/install-deps.sh --tests   also GoogleTest, and Slurm for the cluster test (optional)
#   scripts/install-deps.sh --fuzz    also clang with the libFuzzer runtime (the fuzz smoke)
set -euo pipefail
cd "$(dirname "$0")/.."

tests=0 fuzz=0
for a in "$@"; do
  case "$a" in
    --tests) tests=1 ;;
    --fuzz) fuzz=1 ;;
    *) echo "install-deps: unknown option '$a' (use --tests or --fuzz)" >&2; exit 1 ;;
  esac
done

apt_install() {  # packages...: install with apt-get, or exit 2 naming them
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  if ! command -v apt-get >/dev/null; then
    echo "install-deps: missing $*; install them (no apt-get here)" >&2
    exit 2
  fi
  echo "install-deps: installing $*" >&2
  if ! { $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "$@"; }; then
    echo "install-deps: could not install $* with apt-get; install them and run this again" >&2
    exit 2
  fi
}

# Tools, by command.
missing=()
command -v cmake >/dev/null || missing+=(cmake)
command -v ninja >/dev/null || missing+=(ninja-build)
command -v c++ >/dev/null || command -v g++ >/dev/null || missing+=(g++)
command -v python3 >/dev/null || missing+=(python3)
((${#missing[@]} == 0)) || apt_install "${missing[@]}"

# Libraries, by find_package: a probe project prints the names it cannot find.
probe_missing() {  # find_package names... -> the missing ones, space-separated
  local dir
  dir=$(mktemp -d)
  {
    echo 'cmake_minimum_required(VERSION 3.25)'
    echo 'project(evo_probe LANGUAGES CXX)'
    for p in "$@"; do
      echo "find_package($p QUIET)"
      echo "if(NOT $p""_FOUND)"
      echo "  message(STATUS \"EVO_MISSING $p\")"
      echo 'endif()'
    done
  } >"$dir/CMakeLists.txt"
  cmake -S "$dir" -B "$dir/build" 2>/dev/null | sed -n 's/.*EVO_MISSING //p' | tr '\n' ' '
  rm -rf "$dir"
}
declare -A package_of=([CLI11]=libcli11-dev [nlohmann_json]=nlohmann-json3-dev [spdlog]=libspdlog-dev
                       [fmt]=libfmt-dev [ZLIB]=zlib1g-dev [GTest]=libgtest-dev)
libraries=(CLI11 nlohmann_json spdlog fmt ZLIB)
((tests)) && libraries+=(GTest)
missing=()
for name in $(probe_missing "${libraries[@]}"); do missing+=("${package_of[$name]}"); done
((${#missing[@]} == 0)) || apt_install "${missing[@]}"

# The CUDA toolkit is never installed here: NVRTC and its headers must already be there.
if ! ls "${CUDA_HOME:-/usr/local/cuda}"/include/cuda_fp16.h >/dev/null 2>&1; then
  echo "install-deps: the CUDA toolkit was not found (set CUDA_HOME); evo needs its NVRTC and headers" >&2
  exit 2
fi
# nvdisasm reads the SASS of evo's cubins for the technique gate (HGMMA, UTMALDG, ...); CUDA
# toolkits without it get NVIDIA's wheel, which evo finds through python3.
if ! command -v nvdisasm >/dev/null 2>&1 && ! [ -x "${CUDA_HOME:-/usr/local/cuda}/bin/nvdisasm" ] &&
   [ -z "${EVO_NVDISASM:-}" ] &&
   ! python3 -c "import nvidia, os, sys; sys.exit(0 if any(os.path.exists(p + '/cu13/bin/nvdisasm') for p in nvidia.__path__) else 1)" 2>/dev/null; then
  python3 -m pip install --quiet --disable-pip-version-check nvidia-cuda-nvdisasm==13.2.86 ||
    { echo "install-deps: could not install nvidia-cuda-nvdisasm (pip); set EVO_NVDISASM to an nvdisasm" >&2; exit 2; }
fi

# The cluster test (ctest -L cluster) starts a private Slurm on localhost: Debian's daemons and
# munge. Optional: where they cannot be installed, that test skips with the reason.
if ((tests)); then
  missing=()
  for c in slurmctld slurmd sbatch munged; do command -v "$c" >/dev/null || missing+=("$c"); done
  if ((${#missing[@]})) && command -v apt-get >/dev/null; then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    { $sudo apt-get update -qq &&
      DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends slurmctld slurmd slurm-client munge; } ||
      echo "install-deps: could not install Slurm (missing ${missing[*]}); the cluster test will be skipped" >&2
  fi
fi

# The fuzz smoke needs clang with the libFuzzer runtime: found by linking a fuzz target.
fuzzer_links() {
  command -v clang++ >/dev/null || return 1
  local dir rc
  dir=$(mktemp -d)
  printf '#include <cstddef>\n#include <cstdint>\nextern "C" int LLVMFuzzerTestOneInput(const uint8_t*, size_t) { return 0; }\n' >"$dir/f.cpp"
  clang++ -fsanitize=fuzzer,address "$dir/f.cpp" -o "$dir/f" >/dev/null 2>&1 && rc=0 || rc=1
  rm -rf "$dir"
  return $rc
}
if ((fuzz)) && ! fuzzer_links; then
  if command -v clang++ >/dev/null; then
    major=$(clang++ -dumpversion | cut -d. -f1)
    apt_install "libclang-rt-$major-dev"
  else
    apt_install clang
    fuzzer_links || apt_install "libclang-rt-$(clang++ -dumpversion | cut -d. -f1)-dev"
  fi
  fuzzer_links || { echo "install-deps: clang++ cannot link -fsanitize=fuzzer; install clang's libFuzzer runtime" >&2; exit 2; }
fi
