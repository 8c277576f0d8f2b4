#!/bin/bash
# Submits a sharded stage sweep and the merge job that waits for it:
#   EVO_REPO=/shared/evo STAGE=3 examples/slurm/submit.sh [sbatch flags for the array...]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
: "${EVO_REPO:?set EVO_REPO to the evo checkout on the shared filesystem}"
export EVO_REPO STAGE=${STAGE:-3}
export SHARDS_DIR=${SHARDS_DIR:-$EVO_REPO/results/shards/$(date -u +%Y%m%dT%H%M%SZ)}
mkdir -p "$SHARDS_DIR"
array=$(sbatch --parsable "$@" "$here/evo-array.sbatch")
merge=$(sbatch --parsable --dependency=afterok:"${array%%;*}" "$here/evo-merge.sbatch")
echo "array job $array (shards under $SHARDS_DIR), merge job $merge after it"
