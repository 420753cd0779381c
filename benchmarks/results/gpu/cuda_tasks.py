import sys, time, traceback, torch
from horde.envs import make, task_names, get_task
# usage: cuda_tasks.py [task,task,...|all] [throughput_task,...]
TASKS = task_names() if len(sys.argv) < 2 or sys.argv[1] == "all" else sys.argv[1].split(",")
THRU = sys.argv[2].split(",") if len(sys.argv) > 2 else ["cartpole", "ant", "quadruped", "g1-velocity"]
res = {}
for task in TASKS:
    t0 = time.perf_counter()
    try:
        n = 256
        env = make(task, num_envs=n, seed=3, device="cuda:0")
        g = torch.Generator().manual_seed(0)
        acts = [(torch.rand(n, env.num_actions, generator=g) * 2 - 1).to(env.device) for _ in range(100)]
        for a in acts:
            r = env.step(a)
        torch.cuda.synchronize()
        ok = bool(torch.isfinite(r.obs).all() and torch.isfinite(r.reward).all())
        graph = getattr(getattr(env, "_graph", None), "captured", None)
        print(f"TASK {task}: finite={ok} graph_captured={graph} obs_device={r.obs.device} build+100 steps {time.perf_counter()-t0:.1f} s", flush=True)
    except Exception as exc:
        print(f"TASK {task}: FAILED {type(exc).__name__}: {str(exc)[:300]}", flush=True)
        traceback.print_exc(limit=3)
for task in THRU:
    try:
        n = 4096
        env = make(task, num_envs=n, seed=0, device="cuda:0")
        a = torch.zeros(n, env.num_actions, device=env.device)
        for _ in range(20):
            env.step(a)
        torch.cuda.synchronize()
        rates = []
        for _ in range(3):
            t = time.perf_counter()
            for _ in range(100):
                env.step(a)
            torch.cuda.synchronize()
            rates.append(n * 100 / (time.perf_counter() - t))
        rates.sort()
        print(f"THROUGHPUT {task} N=4096: median {rates[1]:,.0f} env-steps/s (3 windows of 100 steps: {[round(x) for x in rates]})", flush=True)
    except Exception as exc:
        print(f"THROUGHPUT {task}: FAILED {type(exc).__name__}: {str(exc)[:300]}", flush=True)
