"""The quadruped on solver=mujoco-c (MuJoCo's C engine, mujoco.batch) on the CPU of the GPU machine, with 1 and
with all cores: the session of 2026-11-26 02:10 crashed (SIGSEGV) in the first Warp CPU kernel that writes the
batch's state, on 16 cores. Each case runs in its own process so one crash does not hide the other."""
import copy, os, subprocess, sys
if len(sys.argv) == 1:
    for threads in (1, 0):
        p = subprocess.run([sys.executable, "-X", "faulthandler", __file__, str(threads)], capture_output=True, text=True, timeout=150)
        print(f"MUJOCO-C threads={threads or os.cpu_count()}: rc {p.returncode}\n{p.stdout}{p.stderr[-1500:]}", flush=True)
    sys.exit(0)
import mujoco, numpy, torch
from horde.envs import get_task, make
cfg = copy.deepcopy(get_task("quadruped").config)
cfg.sim.cpu_threads = int(sys.argv[1])
print("mujoco", mujoco.__version__, "numpy", numpy.__version__, "solver", cfg.sim.solver if hasattr(cfg.sim, "solver") else "?", flush=True)
env = make("quadruped", num_envs=256, seed=3, device="cpu", config=cfg)
g = torch.Generator().manual_seed(0)
for _ in range(100):
    r = env.step(torch.rand(256, env.num_actions, generator=g) * 2 - 1)
print("finite", bool(torch.isfinite(r.obs).all()), "batch nthread", getattr(getattr(env.world.backend, "batch", None), "nthread", "?"), flush=True)
