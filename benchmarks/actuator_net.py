"""Actuator networks: how well one fits a motor PD cannot describe, what it costs per env step, and how closely one
fitted to the PD law reproduces the PD robot.

    python benchmarks/actuator_net.py [--json] [--quick] [--device cpu] [--num-envs 256 1024 4096] [--repeats 5]

1. ``fit``: ``horde actuator-net``'s demo motor (PD kp 25, kd 0.5, clipped at 23.7 N m, 2 physics steps of transport
   delay), a network reading the present and 2 past steps against one reading the present only: held-out torque
   error as a share of the torques' spread.
2. ``cost``: the quadruped with the PD law against the quadruped with that 3 x 32 network (Newton's neural drive,
   Warp-NN, once per physics substep), random actions, alternating timed windows; medians of ``--repeats``.
3. ``agreement``: a network fitted to the quadruped's own PD law (no delay) against PD, same seed and actions for
   50 env steps: the largest joint-angle difference, beside the difference that halving the PD stiffness makes.
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics
import sys
import time
from pathlib import Path

import torch

from perception import window  # one timed window of env steps (alternated between variants)
from scratch import scratch_dir  # removed at exit


def emit(row: dict, as_json: bool, text: str) -> None:
    print(json.dumps(row) if as_json else text, flush=True)


def make_env(net: str | None, n: int, device: str, stiffness: float | None = None):
    from horde.envs import get_task, make

    cfg = copy.deepcopy(get_task("quadruped").config)
    cfg.actuator_net = net
    cfg.stiffness = stiffness
    return make("quadruped", num_envs=n, device=device, seed=0, config=cfg)


def joints(env, steps: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(0)
    out = []
    for _ in range(steps):
        env.step((torch.randn(env.num_envs, 12, generator=g) * 0.3).to(env.device))
        out.append(env.world.joint_q[:, 7:].cpu().clone())
    return torch.stack(out)


def main(argv: list[str] | None = None) -> int:
    from horde.train.actuator_fit import fit_actuator_net, pd_motor_log, write_actuator_net

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--quick", action="store_true", help="small fits, N=32, 2 windows of 5 steps (smoke test)")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--num-envs", nargs="+", type=int, default=[256, 1024, 4096])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--steps", type=int, default=20, help="control steps per window")
    ap.add_argument("--backend", choices=["onnxruntime", "warp"], default="onnxruntime",
                    help="how the CPU evaluates the network (warp: Newton's drive on Warp-NN, as on a GPU)")
    args = ap.parse_args(argv)
    import horde.sim.actuator_net as actuator_net

    actuator_net.AUTO_CPU_BACKEND = args.backend
    torch.set_num_threads(1)
    quick = args.quick
    sizes, repeats, steps = ([32], 2, 5) if quick else (args.num_envs, args.repeats, args.steps)
    epochs = 3 if quick else 60
    tmp = Path(scratch_dir("horde-actuator-net-"))

    # 1. fit
    log = pd_motor_log(stiffness=25.0, damping=0.5, effort_limit=23.7, delay=2, episodes=3 if quick else 8,
                       steps=500 if quick else 2000)
    nets = {}
    for name, history in (("history 0,1,2", (0, 1, 2)), ("present only", (0,))):
        t = time.perf_counter()
        model, meta, rep = fit_actuator_net(log, history=history, epochs=epochs)
        fit_s = time.perf_counter() - t
        nets[name] = write_actuator_net(model, meta, tmp / f"{len(history)}.onnx", report=rep)
        emit({"part": "fit", "history": list(history), "val_rel": rep.val_rel, "val_rmse_nm": rep.val_rmse,
              "samples": rep.samples, "epochs": epochs, "fit_s": fit_s}, args.json,
             f"fit   {name:<14} held-out error {100 * rep.val_rel:5.1f}% of the torque spread "
             f"({rep.val_rmse:.3f} N m, {rep.samples} samples, {epochs} epochs, {fit_s:.0f} s)")

    # 2. cost
    for n in sizes:
        envs = {"pd": make_env(None, n, args.device), "network": make_env(str(nets["history 0,1,2"]), n, args.device)}
        g = torch.Generator().manual_seed(0)
        actions = [(torch.rand(n, 12, generator=g) * 2 - 1).to(envs["pd"].device) for _ in range(8)]
        rates = {k: [] for k in envs}
        for _ in range(repeats):
            for k, env in envs.items():
                rates[k].append(window(env, actions, steps))
        pd, net = statistics.median(rates["pd"]), statistics.median(rates["network"])
        emit({"part": "cost", "num_envs": n, "device": args.device, "solver": type(envs["pd"].world).__name__,
              "pd_env_steps_per_s": pd, "network_env_steps_per_s": net, "ratio": net / pd,
              "cost_us_per_env_step": 1e6 * (1 / net - 1 / pd), "repeats": repeats, "backend": args.backend}, args.json,
             f"cost  N={n:<5} PD {pd:>9,.0f} env-steps/s  network {net:>9,.0f}  x{net / pd:.3f}  "
             f"{1e6 * (1 / net - 1 / pd):+.2f} us/env-step")
        del envs

    # 3. agreement
    pd_log = pd_motor_log(stiffness=25.0, damping=0.5, effort_limit=200.0, delay=0, episodes=3 if quick else 8,
                          steps=500 if quick else 2000)
    model, meta, rep = fit_actuator_net(pd_log, history=(0,), epochs=epochs)
    pd_net = write_actuator_net(model, meta, tmp / "pd.onnx", report=rep)
    ref = joints(make_env(None, 8, args.device), 50)
    net_diff = float((joints(make_env(str(pd_net), 8, args.device), 50) - ref).abs().max())
    soft_diff = float((joints(make_env(None, 8, args.device, stiffness=12.5), 50) - ref).abs().max())
    emit({"part": "agreement", "network_fitted_to_pd_max_joint_diff_rad": net_diff,
          "half_stiffness_max_joint_diff_rad": soft_diff, "fit_val_rel": rep.val_rel, "steps": 50}, args.json,
         f"agree network fitted to PD vs PD: max joint difference {net_diff:.3f} rad over 50 steps "
         f"(PD at half stiffness: {soft_diff:.3f} rad)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
