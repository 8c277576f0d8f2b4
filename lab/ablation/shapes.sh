#!/usr/bin/env bash
# Issue 31: does the builtin's model pay on one shape's landscape, where the near-optimal set is a
# needle (2 of 576 configurations within 2 %)? Each SHAPE of DATASET as the objective, measured
# and with PERMS permuted landscapes, builtin against screened (seeds 1001-1040). CPU only.
# Figures and reading: lab/notes/ablation-20261201-shapes.md. Run from the repository root after
# `cmake --preset ci && ninja -C build evo`; about 2 CPU-minutes an ablation on this 2-core machine.
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/ablation-shapes}
DATASET=${DATASET:-results/datasets/nvidia-h200-stage9-fp16-d64-decode12.json}
SHAPES=${SHAPES:-16x28x4x1x4096x64:bshd 16x71x1x1x2048x64:bshd 8x32x8x4x8192x64:bshd}
PERMS=${PERMS:-1 2 3}
mkdir -p "$OUT"
evo=build/harness/evo
ratio() { grep -- '- builtin against screened' | sed 's/.*to 2 % \([0-9.]*\) vs \([0-9.]*\) (\([0-9.]*\)×).*/\1 \2 \3/'; }
: >"$OUT/lines.txt"
for s in $SHAPES; do
  echo "$s permute=0: $($evo ablate "$DATASET" --objective "$s" --strategies builtin screened random | ratio)" >>"$OUT/lines.txt"
  for p in $PERMS; do
    echo "$s permute=$p: $($evo ablate "$DATASET" --objective "$s" --permute "$p" --strategies builtin screened | ratio)" >>"$OUT/lines.txt"
  done
done
cat "$OUT/lines.txt"
