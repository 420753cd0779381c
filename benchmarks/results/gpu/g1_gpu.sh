#!/bin/bash
# The G1 walking floor (issue 29) on one GPU: benchmarks/learn_g1.py at 4096 envs, MINUTES of training (default 6.5:
# with process start, CUDA module loads, ~7 evaluations of 64 envs x 1000 steps and the full-range figure it ends
# inside one 10-minute call). A session lent a GPU runs this before learning_gpu.sh (the G1 is the open floor):
#   bash benchmarks/results/gpu/g1_gpu.sh [MINUTES] [SEED] [override ...]   (e.g. task.randomization.push_interval=2.0)
# Writes g1_learning.{json,png}, the appended g1_learning_gpu.jsonl line and the log g1_gpu.txt to $OUT (the device
# machine's return folder) or benchmarks/results.
MIN=${1:-6.5}; SEED=${2:-0}
START=$(date +%s); DEST=${OUT:-benchmarks/results}; mkdir -p "$DEST"
source "$(dirname "$0")/gpu_env.sh" || exit 1
echo "== setup $(( $(date +%s) - START ))s; $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1); $(nproc) cores; $(python -V 2>&1)"
python benchmarks/learn_g1.py --minutes "$MIN" --seed "$SEED" --eval-every 150 --out "$DEST" \
  --append "$DEST/g1_learning_gpu.jsonl" device=cuda:0 num_envs=4096 "${@:3}" 2>&1 | grep -v "^Module \|^Warp " | tee "$DEST/g1_gpu.txt"
echo "== learn_g1 rc=${PIPESTATUS[0]} after $(( $(date +%s) - START ))s"
