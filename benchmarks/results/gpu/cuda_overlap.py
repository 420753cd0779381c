import sys, tempfile, time, statistics, torch
from horde.train.config import compose
TASK, ITERS = (sys.argv[1], int(sys.argv[2])) if len(sys.argv) > 2 else ("cartpole", 12)
from horde.train.ppo import PPOTrainer
def run(extra):
    cfg, name, raw = compose([f"task={TASK}", "device=cuda:0", "seed=3", "num_envs=4096", f"max_iterations={ITERS}",
                              "save_interval=1000", f"run_root={tempfile.mkdtemp()}", *extra])
    tr = PPOTrainer(cfg, name, raw, quiet=True)
    ts = []
    tr.learn(on_iteration=lambda t: ts.append(time.perf_counter()) and False)
    d = [b - a for a, b in zip(ts, ts[1:])]
    return tr, statistics.median(d)
base, t_sync = run([])
print(f"OVERLAP {TASK} sync: median iteration {t_sync*1e3:.1f} ms", flush=True)
if sys.argv[3:] == ["repeat"]:  # is a synchronous run itself repeatable on this device? (atomics in the contacts)
    again, _ = run([])
    diff = max(float((a - b).detach().abs().max()) for a, b in zip(base.alg.actor.parameters(), again.alg.actor.parameters()))
    print(f"OVERLAP {TASK} sync run twice: max |actor param difference| {diff:.3g}", flush=True)
    sys.exit(0)
for k in (0, 1):
    try:
        tr, t = run(["algo.overlap=true", f"algo.max_staleness={k}"])
        diff = max(float((a - b).detach().abs().max()) for a, b in zip(base.alg.actor.parameters(), tr.alg.actor.parameters()))
        print(f"OVERLAP {TASK} staleness {k} ({tr.overlap.learner}, CUDA stream): median iteration {t*1e3:.1f} ms "
              f"(sync/overlap {t_sync/t:.2f}x), staleness {tr.overlap.staleness_seen}, max |actor param - sync's| {diff:.3g}", flush=True)
    except Exception as exc:
        print(f"OVERLAP {TASK} staleness {k}: FAILED {type(exc).__name__}: {str(exc)[:300]}", flush=True)
