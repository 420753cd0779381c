#!/bin/bash
# The G1 with SAC (issue 70) on one GPU: benchmarks/learn_g1.py --sets with algo=sac at 4096 envs, MINUTES of training
# (default 6.0, one 10-minute call with the evaluations), FastSAC's G1 regime on top of configs/tuned/g1-velocity_sac.yaml:
# 8 gradient steps of 8,192 a vector step (16 samples per new transition), LayerNorm actor 512-256-128 and critics
# 768-384-192, 2,048 transitions per env in the ring. Its CPU probe (0.64M env steps, never stood) is in
# benchmarks/README.md, "SAC beside PPO"; PPO's GPU figure beside it comes from g1_gpu.sh / g1_full_range_gpu.sh.
#   bash benchmarks/results/gpu/g1_sac_gpu.sh [MINUTES] [SEED] [override ...]
# Writes g1_learning.{json,png}, the appended g1_sac_gpu.jsonl line and the log g1_sac_gpu.txt to $OUT (the device
# machine's return folder) or benchmarks/results.
MIN=${1:-6.0}; SEED=${2:-0}
START=$(date +%s); DEST=${OUT:-benchmarks/results}; mkdir -p "$DEST"
source "$(dirname "$0")/gpu_env.sh" || exit 1
echo "== setup $(( $(date +%s) - START ))s; $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1); $(nproc) cores; $(python -V 2>&1)"
python benchmarks/learn_g1.py --sets --minutes "$MIN" --seed "$SEED" --eval-every 500 --out "$DEST" \
  --append "$DEST/g1_sac_gpu.jsonl" algo=sac device=cuda:0 num_envs=4096 algo.num_updates=8 algo.batch_size=8192 \
  algo.buffer_length=2048 'algo.policy.actor_hidden_dims=[512,256,128]' 'algo.policy.critic_hidden_dims=[768,384,192]' \
  "${@:3}" 2>&1 | grep -v "^Module \|^Warp " | tee "$DEST/g1_sac_gpu.txt"
echo "== learn_g1 rc=${PIPESTATUS[0]} after $(( $(date +%s) - START ))s"
