#!/bin/bash
# One GPU run of 2026-11-26 (runs 2 and 3 in README.md here): unpack the py3.12 stack carried in three parts
# (site.part.*, copied to /tmp/w by the calls before), the sm_90 CUBINs that `horde compile-cuda archs=90` built on the
# 2-core CPU machine (.whl/wcache90.tar.xz) and, when carried, Newton's examples folder (ant and humanoid read their
# MJCF from it); then run each check of the plan under one deadline.
# Usage: bash device_session.sh SECONDS run2|run3
END=$(( $(date +%s) + ${1:-440} ))
PLAN=${2:-run3}
left() { echo $(( END - $(date +%s) )); }
step() {  # step NAME MAX_SECONDS CMD...: run CMD under min(MAX, time left), its output in $OUT/NAME.txt
  local name=$1 max=$2; shift 2; local t=$(left); [ $t -gt $max ] && t=$max
  if [ $t -lt 30 ]; then echo "SKIP $name (${t}s left)"; return; fi
  local s=$(date +%s); timeout $t "$@" > $OUT/$name.txt 2>&1; local rc=$?
  echo "== $name rc=$rc $(( $(date +%s) - s ))s"; grep -E "^(TASK|THROUGHPUT|OVERLAP|MUJOCO|finite|mujoco|PASS|FAIL|=+ .*(passed|failed))|passed|failed|Segmentation|Error" $OUT/$name.txt | grep -v convert_to_mjc | tail -40
}
set -o pipefail
s=$(date +%s)
mkdir -p /tmp/site /tmp/wc/1.19.0 /tmp/hp
cat /tmp/w/site.part.* | xz -dc -T0 | tar -x -C /tmp/site || echo "UNPACK site FAILED"
xz -dc .whl/wcache90.tar.xz | tar -x -C /tmp/wc/1.19.0 || echo "UNPACK cache FAILED"
if [ -f .whl/newton_examples.tar.xz ]; then xz -dc .whl/newton_examples.tar.xz | tar -x -C /tmp/site/newton; fi
ln -sfn $PWD /tmp/hp/horde
export PYTHONPATH=/tmp/hp:/tmp/site:$PWD/tests WARP_CACHE_PATH=/tmp/wc PYTHONFAULTHANDLER=1
echo "== unpack $(( $(date +%s) - s ))s; $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader); $(nproc) cores; $(python -V)"
G=benchmarks/results/gpu
step mujoco_c 130 python $G/mujoco_c_check.py &
step export_quadruped 170 python -m pytest -q -p no:cacheprovider -m gpu tests/gpu/test_gpu.py -k "train_and_export and quadruped" &
wait
if [ "$PLAN" = run2 ]; then  # every task, throughput, overlap on the quadruped
  step cuda_tasks 200 python $G/cuda_tasks.py
  step overlap_ant 110 python $G/cuda_overlap.py ant 8
  step overlap_quadruped 110 python $G/cuda_overlap.py quadruped 8
else  # after the mujoco-c fix: the tasks that need Newton's examples, and whether a CUDA run repeats itself
  step cuda_tasks 150 python $G/cuda_tasks.py ant,humanoid ant,humanoid
  step overlap_ant 110 python $G/cuda_overlap.py ant 8
  step overlap_quadruped_repeat 90 python $G/cuda_overlap.py quadruped 8 repeat
fi
ls /tmp/wc/1.19.0 | wc -l
