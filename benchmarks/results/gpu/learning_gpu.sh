#!/bin/bash
# The learning scoreboard on one GPU within 10 minutes of device time: benchmarks/learning_suite.py --device cuda:0,
# every task of its GPU list at 4096 envs (g1-velocity 1.25 min, quadruped 1.0, lift 0.5, ant 0.4, reach 0.5,
# pendulum 0.3, cartpole 0.2: 4.15 min of training, the rest is process start, CUDA compilation and evaluations).
# Measured 2026-11-26 (H200, run 5, the earlier budgets): the four robots took 507 s (45-100 s per task beyond
# training), so reach, pendulum and cartpole were cut by the deadline. One command runs 10 minutes at most: run the
# robots in one call and the rest in a second (TASKS, the second argument):
#   bash benchmarks/results/gpu/learning_gpu.sh 540
#   bash benchmarks/results/gpu/learning_gpu.sh 300 "reach pendulum cartpole"
# SAC's scoreboard (issue 70), the GPU recipes of configs/tuned/<task>_sac.yaml (never run on a GPU yet):
#   ALGO=sac bash benchmarks/results/gpu/learning_gpu.sh 540 "quadruped lift ant pendulum"
# A session that is lent a GPU runs g1_gpu.sh (the open G1 floor) first, then this:
#   bash benchmarks/results/gpu/learning_gpu.sh [SECONDS]   (default 540; no task starts with under a minute left)
# Python: as gpu_env.sh beside it sets it up (the one on PATH, or the carried py3.12 stack).
# Writes <date>_learning_suite_cuda0.{json,md,png} and its _frames/ to $OUT (the device machine's return folder) or
# benchmarks/results, and the log to learning_gpu.txt beside them.
SECONDS_MAX=${1:-540}
START=$(date +%s)
DEST=${OUT:-benchmarks/results}
mkdir -p "$DEST"
source "$(dirname "$0")/gpu_env.sh" || exit 1
echo "== setup $(( $(date +%s) - START ))s; $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1); $(nproc) cores; $(python -V 2>&1)"
LEFT=$(( SECONDS_MAX - ($(date +%s) - START) ))
timeout $LEFT python benchmarks/learning_suite.py --algo "${ALGO:-ppo}" --device cuda:0 --deadline-s $(( LEFT - 30 )) --out "$DEST" \
  ${2:+--tasks $2} \
  2>&1 | grep -v "^Module \|^Warp " | tee "$DEST/learning_gpu.txt"
echo "== learning_suite rc=${PIPESTATUS[0]} after $(( $(date +%s) - START ))s"
