import tempfile, time, statistics, torch
from horde.train.config import compose
from horde.train.ppo import PPOTrainer
def run(extra):
    cfg, name, raw = compose(["task=cartpole", "device=cuda:0", "seed=3", "num_envs=4096", "max_iterations=12",
                              "save_interval=1000", f"run_root={tempfile.mkdtemp()}", *extra])
    tr = PPOTrainer(cfg, name, raw, quiet=True)
    ts = []
    tr.learn(on_iteration=lambda t: ts.append(time.perf_counter()) and False)
    d = [b - a for a, b in zip(ts, ts[1:])]
    return tr, statistics.median(d)
base, t_sync = run([])
print(f"OVERLAP sync: median iteration {t_sync*1e3:.1f} ms", flush=True)
for k in (0, 1):
    try:
        tr, t = run(["algo.overlap=true", f"algo.max_staleness={k}"])
        diff = max(float((a - b).abs().max()) for a, b in zip(base.alg.actor.parameters(), tr.alg.actor.parameters()))
        print(f"OVERLAP staleness {k} ({tr.overlap.learner}, CUDA stream): median iteration {t*1e3:.1f} ms "
              f"(sync/overlap {t_sync/t:.2f}x), staleness {tr.overlap.staleness_seen}, max |actor param - sync's| {diff:.3g}", flush=True)
    except Exception as exc:
        print(f"OVERLAP staleness {k}: FAILED {type(exc).__name__}: {str(exc)[:300]}", flush=True)
