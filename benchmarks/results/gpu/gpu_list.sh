#!/bin/bash
# The checks of the GPU list that the G1 runs left out (sessions of 2026-11-27): `pytest -m gpu` whole (no -x), then
# the memory guard's CUDA figures (memory_cuda.py beside this), all under one deadline:
#   bash benchmarks/results/gpu/gpu_list.sh [SECONDS] [memory_cuda task ...]   (default 560)
# Measured 2026-11-27 (H200, run 8): the 21 GPU tests take more than one 10-minute call (the first 16 took 482 s, the
# every-task graph test ~25 s a task): give pytest a call of its own (`gpu_list.sh 590`) and the memory figures the next
# (`python benchmarks/results/gpu/memory_cuda.py`, ~30 s a task), back to back: an idle machine goes back after 30 s
# and a fresh one has no stack (carry the three parts again).
# Logs: pytest_gpu.txt and memory_cuda.txt in $OUT (the device machine's return folder) or benchmarks/results.
END=$(( $(date +%s) + ${1:-560} )); DEST=${OUT:-benchmarks/results}; mkdir -p "$DEST"
left() { echo $(( END - $(date +%s) )); }
step() {  # step NAME MAX_SECONDS CMD...: CMD under min(MAX, time left), its output in $DEST/NAME.txt
  local name=$1 max=$2; shift 2; local t=$(left); [ $t -gt $max ] && t=$max
  if [ $t -lt 30 ]; then echo "SKIP $name (${t}s left)"; return; fi
  local s=$(date +%s); timeout $t "$@" > "$DEST/$name.txt" 2>&1; local rc=$?
  echo "== $name rc=$rc $(( $(date +%s) - s ))s"; grep -vE "^(Module |Warp )" "$DEST/$name.txt" | tail -25
}
s=$(date +%s)
source "$(dirname "$0")/gpu_env.sh" || exit 1
export PYTHONPATH=$PYTHONPATH:$PWD/tests
echo "== setup $(( $(date +%s) - s ))s; $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1); $(nproc) cores; $(python -V 2>&1)"
step pytest_gpu 580 python -m pytest -v -p no:cacheprovider -m gpu --durations=15 tests
step memory_cuda 600 python "$(dirname "$0")/memory_cuda.py" "${@:2}"
