#!/usr/bin/env bash
# Quick start, step 1: install what a fresh Debian/Ubuntu machine with the CUDA toolkit lacks,
# build evo, and run the main job (`evo run --stage 0`). Without a GPU it still prints the
# compile and resource table, then says timing needs an NVIDIA GPU and exits 2.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake --preset ci >/dev/null
cmake --build --preset ci
exec ./build/harness/evo run --stage 0 "$@"
