# Steps every device-call script of the FP8 work shares; sourced, not run. The caller is in the
# repository root with $OUT set (the folder that comes back from the GPU machine).
#   device_env             cache and unbuffered Python for the call
#   install_wheels         the wheels in the carried folder named by $EVO_WHEELS (docs/fp8.md), if set
#   gpu_info               the GPU's name, driver and clocks into $OUT/gpu.txt
#   build_evo [TARGET...]  configure and build (every target when none is named); the log comes
#                          back only when the build fails (a call returns at most 8 files)
#   export_package DIR TASKS  `evo export` of the tasks into DIR (emptied first) and its build with
#                          CMake, the PyTorch op included where python3 imports torch; the log is
#                          $OUT/export.log (its tail is printed on a failure, return 1)
#   search_for_call STAGE DIR  for this call only (restored at exit; backups in DIR): gates.json
#                          deep_gate.enabled as $DEEP_GATE says (on|off; default off) and, with
#                          $SEARCH_JSON ({"<variant stem>": {"PARAM": [extra values]}}), the stage's
#                          stage.json "search" widened by it (docs/evolve.md, "Search space")

device_env() {
  export XDG_CACHE_HOME=${XDG_CACHE_HOME:-/tmp/evo-cache} PYTHONUNBUFFERED=1
}

install_wheels() {
  [ -n "${EVO_WHEELS:-}" ] || return 0
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site "$EVO_WHEELS"/*.whl &&
    export PYTHONPATH=/tmp/site
}

gpu_info() {
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/gpu.txt"
}

build_evo() {
  local targets=() t
  for t in "$@"; do targets+=(--target "$t"); done
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null || return 1
  if ! cmake --build build -j 16 "${targets[@]}" >"$OUT/build.log" 2>&1; then
    grep -E "error" -A3 "$OUT/build.log" | head -30
    return 1
  fi
  rm -f "$OUT/build.log"
}

export_package() {
  rm -rf "$1"
  build/harness/evo export --task "$2" --out "$1" >"$OUT/export.log" 2>&1 || { tail -20 "$OUT/export.log"; return 1; }
  (cmake -S "$1" -B "$1/build" -G Ninja -DCMAKE_BUILD_TYPE=Release &&
    cmake --build "$1/build" -j 16) >>"$OUT/export.log" 2>&1 || { tail -30 "$OUT/export.log"; return 1; }
  grep -E "evo_attn: (building|no PyTorch)" "$OUT/export.log" || true  # a note, not a failure
}

search_for_call() {
  local stage_json
  for stage_json in variants/"$1"-*/stage.json; do break; done
  cp gates/gates.json "$2/gates.json.orig" && cp "$stage_json" "$2/stage.json.orig" || return 1
  # shellcheck disable=SC2064  # the paths are fixed now, on purpose
  trap "cp '$2/gates.json.orig' gates/gates.json; cp '$2/stage.json.orig' '$stage_json'" EXIT
  python3 - "$stage_json" "${SEARCH_JSON:-}" gates/gates.json "${DEEP_GATE:-off}" <<'EOF'
import json, sys
stage, search, gates, deep = sys.argv[1:]
if search:
    j = json.load(open(stage))
    for stem, extra in json.loads(search).items():
        for param, values in extra.items():
            have = j.setdefault("search", {}).setdefault(stem, {}).setdefault(param, [])
            have += [v for v in values if v not in have]
    json.dump(j, open(stage, "w"), indent=2)
g = json.load(open(gates))
g["deep_gate"]["enabled"] = deep == "on"
json.dump(g, open(gates, "w"), indent=2)
EOF
}
