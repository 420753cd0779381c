#!/bin/bash
# The G1 over its whole command range (issue 69) on one GPU: benchmarks/learn_g1.py --sets at 4096 envs, MINUTES of
# training (default 6.0: with process start, CUDA module loads and ~5 evaluations of the five command sets, 64 envs
# x 1000 steps each, it ends inside one 10-minute call). The candidate full-range recipe of 2026-12-06 (vx [-1, 1],
# vy [-0.5, 0.5], the vx curriculum from [-0.5, 0.5], yaw tracking at 2.0) on top of the tuned G1 config; its CPU
# hour is in benchmarks/results/g1_full_range_cpu.jsonl. Extra overrides follow the seed:
#   bash benchmarks/results/gpu/g1_full_range_gpu.sh [MINUTES] [SEED] [override ...]
# Writes g1_learning.{json,png}, the appended g1_full_range_gpu.jsonl line and the log g1_full_range_gpu.txt to $OUT
# (the device machine's return folder) or benchmarks/results.
MIN=${1:-6.0}; SEED=${2:-0}
START=$(date +%s); DEST=${OUT:-benchmarks/results}; mkdir -p "$DEST"
source "$(dirname "$0")/gpu_env.sh" || exit 1
echo "== setup $(( $(date +%s) - START ))s; $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1); $(nproc) cores; $(python -V 2>&1)"
python benchmarks/learn_g1.py --sets --minutes "$MIN" --seed "$SEED" --eval-every 150 --out "$DEST" \
  --append "$DEST/g1_full_range_gpu.jsonl" device=cuda:0 num_envs=4096 'task.command_vx=[-1.0,1.0]' \
  'task.command_vy=[-0.5,0.5]' 'task.vx_curriculum_start=[-0.5,0.5]' task.reward_scales.track_ang_vel=2.0 \
  "${@:3}" 2>&1 | grep -v "^Module \|^Warp " | tee "$DEST/g1_full_range_gpu.txt"
echo "== learn_g1 rc=${PIPESTATUS[0]} after $(( $(date +%s) - START ))s"
