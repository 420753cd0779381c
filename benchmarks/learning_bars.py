"""Rerun the learning tests' training over many seeds and print each seed's figure: where the tests' bars come from.

    python benchmarks/learning_bars.py [--tests shac_pendulum shac_swingup shac_reach ppo_pendulum tuned_cartpole gru
                                        overlap_cartpole] [--seeds 0 1 2 3 4 5 6 7 8 9]

A learning test asserts one seed against a bar; another CPU moves a trajectory about as much as another seed does,
so each bar is set below the worst of at least 8 seeds measured here (the figures are in the tests' docstrings).
Each line is JSON: the test, the seed, the figure the test asserts on ("first" and "best" evaluation returns for
SHAC, the final deterministic mean return or episode length for PPO, the iterations to a return of 475 for the
tuned cart-pole) and the seconds it took.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import tempfile
import time
from pathlib import Path

import torch

TESTS_DIR = Path(__file__).resolve().parents[1] / "tests"


def _test_module(name: str):
    sys.path.insert(0, str(TESTS_DIR))  # clihelp
    (path,) = TESTS_DIR.glob(f"*/{name}.py")  # the test's tier: tests/learning, tests/integration, ...
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _shac(task: str, env_steps: int, eval_every: int = 512):
    def run(seed: int, tmp: Path) -> dict:
        returns, _ = _test_module("test_shac")._train_and_track(tmp, task, seed=seed, env_steps=env_steps,
                                                               eval_every=eval_every)
        return {"first": returns[0], "best": max(returns), "curve": [round(r, 1) for r in returns]}
    return run


def _ppo_pendulum(seed: int, tmp: Path) -> dict:
    _, result = _test_module("test_learning")._train_and_evaluate(tmp, ["task=pendulum", f"seed={seed}"])
    return {"mean_return": result["mean_return"]}


def _tuned_cartpole(seed: int, tmp: Path) -> dict:
    returns = _test_module("test_learning")._cartpole_until_475(tmp, seed, max_iterations=40)
    return {"iterations_to_475": len(returns) if returns[-1] >= 475.0 else None, "final": returns[-1]}


def _gru(seed: int, tmp: Path) -> dict:
    from horde.policies import make_inference_policy
    from horde.train.config import compose
    from horde.train.evaluate import evaluate
    from horde.train.ppo import PPOTrainer

    cfg, task, raw = compose([f"run_root={tmp}", "task=cartpole", "num_envs=64", "max_iterations=6",
                              "save_interval=6", "algo.policy.rnn_type=gru", "algo.policy.rnn_hidden_dim=32",
                              f"seed={seed}"])
    trainer = PPOTrainer(cfg, task, raw, quiet=True)
    trainer.learn()
    res = evaluate(make_inference_policy(trainer.alg.get_policy()), task, cfg.task, episodes=32).summary()
    return {"mean_episode_length": res["mean_episode_length"]}


def _overlap_cartpole(seed: int, tmp: Path) -> dict:
    returns = _test_module("test_overlap")._overlapped_cartpole(tmp, seed)
    return {"iterations": len(returns), "final": returns[-1], "curve": returns}


RUNS = {
    "shac_pendulum": _shac("pendulum", 6144),        # tests/learning/test_shac.py::test_shac_swings_up_...
    "shac_swingup": _shac("cartpole-swingup", 16384),
    "shac_reach": _shac("reach", 16384, eval_every=2048),  # tests/learning/test_shac.py::test_shac_reaches_with_the_arm
    "ppo_pendulum": _ppo_pendulum,                   # tests/learning/test_learning.py::test_ppo_swings_up_the_pendulum
    "tuned_cartpole": _tuned_cartpole,               # tests/learning/test_learning.py::test_tuned_cartpole_balances_...
    "overlap_cartpole": _overlap_cartpole,           # tests/integration/test_overlap.py::test_overlapped_ppo_...
    "gru": _gru,                                     # tests/learning/test_policies_recurrent.py::test_gru_...
}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tests", nargs="+", choices=sorted(RUNS), default=sorted(RUNS))
    ap.add_argument("--seeds", nargs="+", type=int, default=list(range(10)))
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    for name in args.tests:
        for seed in args.seeds:
            t0 = time.perf_counter()
            with tempfile.TemporaryDirectory(prefix=f"bars_{name}_") as tmp:  # removed after each seed
                figures = RUNS[name](seed, Path(tmp))
            print(json.dumps({"test": name, "seed": seed, **figures, "seconds": round(time.perf_counter() - t0, 1)}),
                  flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
