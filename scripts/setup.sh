#!/usr/bin/env bash
# Quick start, step 1: install only what this machine lacks for the main job, build evo, and
# run the main job (`evo run --stage 0`). Without a GPU it still prints the compile and
# resource table, then says timing needs an NVIDIA GPU and exits 2.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake --preset release >/dev/null
cmake --build --preset release --target evo
exec ./build/harness/evo run --stage 0 "$@"
