#!/usr/bin/env bash
# Issue 30 on the H200: FlashAttention-4's Hopper forward (flash-attn-4 4.0.0b36 on the CuTe DSL
# 4.8.1, CUDA 13 libs) as a peer beside SDPA cuDNN and flash: scripts/peers_fa4.py on the sets
# $SETS (default mission,models,regimes) of the tasks $TASKS (default the eight fp16/bf16 tasks).
# The GPU host has no package network and a call carries at most 64 MiB of ignored files, so the
# wheels come in parts over warm calls and wait in /tmp/fa4-wheels (/tmp survives while the
# machine stays warm). lab/device-sessions/fa4-wheels.txt is their manifest: which part each call
# carries, the sha256 of every part and of every whole wheel (the cu13 libs wheel, 92 MB, is split).
#
# On the CPU host first (the parts are built by pip download + split, see the manifest's head):
#   mkdir -p .whl && for c in 1 2 3; do cp -r /work/wheels-fa4/parts3/call$c .whl/fa4-part$c; done
# (three parts of at most 42 MB: each travels beside the working tree under the 64 MiB limit)
# Then these `run` calls in this order, each within the warm window of the one before
# (a cold machine has lost /tmp: start again at call 1):
#   1. run  command="bash lab/device-sessions/fa4.sh stash"  carry=[".whl/fa4-part1"]   (~38 MiB)
#   2. run  command="bash lab/device-sessions/fa4.sh stash"  carry=[".whl/fa4-part2"]   (~40 MiB)
#   2b. run command="bash lab/device-sessions/fa4.sh stash"  carry=[".whl/fa4-part3"]   (~28 MiB)
#      stash copies the carried part into /tmp/fa4-wheels, checks each file's sha256, and says
#      which calls are still missing.
#   3. run  command="TASKS=fp16-d64,fp16-d64-causal,fp16-d128,fp16-d128-causal bash lab/device-sessions/fa4.sh peers"
#   4. run  command="TASKS=bf16-d128,bf16-d128-causal,bf16-d64,bf16-d64-causal bash lab/device-sessions/fa4.sh peers"
#      peers (the first time) joins the split wheel, checks every whole wheel's sha256, installs
#      them all with one `pip install --no-index --no-deps --target /tmp/fa4-site` into an empty
#      folder, then times FA4 (compiled kernels cached in /tmp/fa4-cache, so a repeated call skips
#      the compiles). The peer list accumulates in /tmp/fa4-peers.json over the peers calls; each
#      call's $OUT: nvidia-h200.json (results/peers/nvidia-h200.json with the FA4 records merged:
#      copy it there), fa4.log, import.txt, gpu.txt, and pip.log where the install failed.
#      A call cut short by its limit keeps the tasks it finished: run it again for the rest.
#      PEERS_SDPA=1 also times SDPA cuDNN and flash on the same shapes in the same call.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1
: "${OUT:?set OUT}"
source lab/device-sessions/device_steps.sh
device_env
manifest=$PWD/lab/device-sessions/fa4-wheels.txt
wheels=/tmp/fa4-wheels site_dir=/tmp/fa4-site peers_keep=/tmp/fa4-peers.json
TASKS=${TASKS:-fp16-d64,fp16-d64-causal,fp16-d128,fp16-d128-causal,bf16-d128,bf16-d128-causal,bf16-d64,bf16-d64-causal}
SETS=${SETS:-mission,models,regimes}
PHASE=${1:?stash|install|peers}

# The parts the manifest lists that /tmp/fa4-wheels lacks or holds with another sha256; prints
# "call N: FILE (missing|sha256 differs)" for each, returns 1 when there is any.
missing_parts() {
  local call sum size file bad=0
  while read -r _ call sum size file; do
    if [ ! -f "$wheels/$file" ]; then echo "call $call: $file (missing)"; bad=1
    elif [ "$(stat -c %s "$wheels/$file")" != "$size" ] || [ "$(sha256sum "$wheels/$file" | cut -d' ' -f1)" != "$sum" ]; then
      echo "call $call: $file (sha256 differs)"; bad=1
    fi
  done < <(grep '^part ' "$manifest")
  return $bad
}

# Joins the split wheels, checks every whole wheel, installs them all in one pip call.
install_fa4() {
  [ -f "$site_dir/.fa4-installed" ] && cmp -s "$site_dir/.fa4-installed" "$manifest" && return 0
  missing_parts || { echo "fa4.sh: parts missing: run stash with the calls named above"; return 1; }
  local join=/tmp/fa4-join w
  rm -rf "$join" "$site_dir" && mkdir -p "$join" "$site_dir"
  while read -r _ w; do
    if [ -f "$wheels/$w" ]; then cp "$wheels/$w" "$join/"
    else cat "$wheels/$w".part-* > "$join/$w"; fi  # the glob sorts: part-00, part-01, ...
  done < <(grep -E '^[0-9a-f]{64}  ' "$manifest")
  (cd "$join" && grep -E '^[0-9a-f]{64}  ' "$manifest" | sha256sum -c --strict --quiet) ||
    { echo "fa4.sh: a joined wheel does not match its sha256: stash its parts again"; return 1; }
  if ! python3 -m pip install --no-index --no-deps --no-cache-dir --target "$site_dir" "$join"/*.whl >"$OUT/pip.log" 2>&1; then
    tail -5 "$OUT/pip.log"; return 1
  fi
  rm -f "$OUT/pip.log"
  cp "$manifest" "$site_dir/.fa4-installed"
  echo "installed $(find "$join" -name '*.whl' | wc -l) wheels into $site_dir at ${SECONDS}s"
}

case "$PHASE" in
  stash)
    mkdir -p "$wheels"
    carried=0
    for d in .whl/fa4-part*/; do
      [ -d "$d" ] || continue
      carried=1
      cmp -s "$d/MANIFEST.txt" "$manifest" ||
        { echo "fa4.sh: $d/MANIFEST.txt is not $manifest: carry the parts this commit's manifest lists"; exit 1; }
      find "$d" -maxdepth 1 -type f -name '*.whl*' -exec cp {} "$wheels/" \;
      echo "stashed $d: $(find "$d" -maxdepth 1 -name '*.whl*' | wc -l) files"
    done
    [ "$carried" = 1 ] || { echo "fa4.sh: no .whl/fa4-part*/ came with this call: pass carry=[\".whl/fa4-partN\"]"; exit 1; }
    if missing_parts; then echo "every part is in $wheels: next, fa4.sh peers"; else echo "(still to carry)"; fi
    df -h /tmp | tail -1 ;;
  install)  # for another script of the same call (ncu_op.sh FA4=1): the wheels into $site_dir
    install_fa4 || exit 1
    echo "FlashAttention-4 in $site_dir" ;;
  peers)
    gpu_info
    install_fa4 || exit 1
    # Compiled FA4 kernels (and tvm-ffi's DLPack addon, should this torch need one built) stay in
    # /tmp for the next peers call of the warm machine.
    export FLASH_ATTENTION_CUTE_DSL_CACHE_ENABLED=1 FLASH_ATTENTION_CUTE_DSL_CACHE_DIR=/tmp/fa4-cache \
      TVM_FFI_CACHE_DIR=/tmp/fa4-cache/tvm-ffi
    # numpy is not carried (the CuTe DSL imports it only for numpy inputs): say whether it is there.
    python3 -c "import site; site.addsitedir('$site_dir'); import torch, cutlass, flash_attn.cute
from importlib.metadata import version as v
print('torch', torch.__version__, 'cuda', torch.version.cuda, 'flash-attn-4', v('flash-attn-4'),
      'cutlass-dsl', v('nvidia-cutlass-dsl'), 'cuda-bindings', v('cuda-bindings'))
import importlib.util; print('numpy', 'present' if importlib.util.find_spec('numpy') else 'absent')" \
      >"$OUT/import.txt" 2>&1
    tail -3 "$OUT/import.txt"
    # The peer list of the earlier peers calls of this warm machine, so the last call holds all.
    [ -f "$peers_keep" ] && cp "$peers_keep" results/peers/nvidia-h200.json
    left=$((560 - SECONDS)); [ "$left" -lt 60 ] && left=60
    if [ "${PEERS_SDPA:-0}" = 1 ]; then left=$((left / 2)); fi
    timeout "$left" python3 scripts/peers_fa4.py --site "$site_dir" --tasks "$TASKS" --sets "$SETS" >"$OUT/fa4.log" 2>&1
    rc=$?
    echo "peers_fa4 exit $rc at ${SECONDS}s"; tail -3 "$OUT/fa4.log"
    if [ "${PEERS_SDPA:-0}" = 1 ]; then
      left=$((560 - SECONDS)); [ "$left" -lt 30 ] && left=30
      timeout "$left" python3 scripts/peers_sdpa.py --tasks "$TASKS" --sets "$SETS" --backends cudnn,flash \
        >"$OUT/sdpa.log" 2>&1
      echo "peers_sdpa exit $? at ${SECONDS}s"; tail -2 "$OUT/sdpa.log"
    fi
    cp results/peers/nvidia-h200.json "$peers_keep"
    cp results/peers/nvidia-h200.json "$OUT/nvidia-h200.json"
    echo "FA4 records in the peer list: $(grep -c '"peer/flash-attn-4"' "$OUT/nvidia-h200.json")"
    exit "$rc" ;;
  *) echo "fa4.sh: unknown phase '$PHASE': use stash, install or peers"; exit 1 ;;
esac
