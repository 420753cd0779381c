"""Shared loop of the learning benchmarks (learn_reach.py, learn_ant.py, learn_quadruped.py, ...).

One run of the configured learner (``algo=``: PPO by default, SAC, ...) through horde's trainer; every
``eval_every`` iterations the trainer's ``on_iteration`` hook evaluates the deterministic policy (PPO's action mean,
SAC's tanh of it; the normalizer frozen) on fresh envs with other seeds than training.
The clock counts training only: evaluation time is excluded. Training stops at ``max_iterations`` or when the
budget of training minutes is spent. Each script states its :class:`Target` and, with ``baseline=True``, the same
evaluation of the zero action (the trivial policy) after training; ``learning_suite.py`` collects them.
"""

from __future__ import annotations

import json
import operator
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from horde.policies import InferencePolicy, clips_actions
from horde.train.config import ALGORITHMS, algorithm_name, compose
from horde.train.ppo import PPOTrainer

Evaluate = Callable[[InferencePolicy, object, int], dict]
"""``evaluate(policy, task_cfg, seed) -> figures``."""

BASELINE_SEED = 10_000
"""Evaluation seed of the zero-action baseline: the envs of the evaluation at iteration 0."""
KEEP_ROOT: str | None = None
"""Keep every run of :func:`train_with_evals` under this folder (``benchmarks/pretrained.py ship`` sets it)."""

_OPS = {">=": operator.ge, ">": operator.gt, "<=": operator.le, "<": operator.lt}


@dataclass(frozen=True, kw_only=True)
class Target:
    """A learning target: the evaluation figure ``key`` compared with ``threshold`` by ``op``."""

    key: str
    """Key of the figure in the evaluation's dict (a point of the curve)."""
    threshold: float
    """The value to reach, in the figure's units."""
    op: str
    """Direction: ``>=``, ``>``, ``<=`` or ``<`` (``figure op threshold`` means met)."""
    measure: str
    """What the figure is, with its unit, in words."""

    def met(self, value: float | None) -> bool:
        """True when ``value`` meets the target (None never does)."""
        return value is not None and bool(_OPS[self.op](value, self.threshold))

    def as_dict(self) -> dict:
        return asdict(self)


class ZeroPolicy(torch.nn.Module):
    """The trivial policy: ``obs [B, obs_dim] -> zeros [B, num_actions]`` (zero torque; for PD-driven robots the
    default pose held, i.e. standing still or the arm at rest)."""

    def __init__(self, num_actions: int) -> None:
        super().__init__()
        self.num_actions = int(num_actions)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return torch.zeros(obs.shape[0], self.num_actions, device=obs.device)


_CAPTURED: list[dict] | None = None


@contextmanager
def capture_runs() -> Iterator[list[dict]]:
    """Collect every :func:`train_with_evals` result made inside (with ``"task"``, the trained policy and the curve):
    ``learning_suite.py`` calls a learn script's ``main`` and renders and tabulates its run from here."""
    global _CAPTURED
    outer, _CAPTURED = _CAPTURED, []
    try:
        yield _CAPTURED
    finally:
        _CAPTURED = outer


def _deterministic(trainer, cfg) -> InferencePolicy:
    """The trainer's deterministic policy as play and export build it (no clip where the task squashes with tanh):
    PPO's action mean, SAC's tanh(mean)."""
    return InferencePolicy(trainer.policy(), clip=clips_actions(cfg.task))


def time_split(summary: dict, train_s: float) -> dict[str, float]:
    """The trainer's time split as shares of the training clock ``train_s`` [s] (evaluations excluded): ``sim``,
    ``inference`` and ``learn`` (the learner's update) from the run loop's phase totals (its ``time_share`` of its
    own wall time, ``train_seconds``, which counts the evaluations), ``other`` the rest (checkpoints, logging)."""
    seconds = {k: summary["time_share"][k] * summary["train_seconds"] for k in ("sim", "inference", "learn")}
    total = max(train_s, sum(seconds.values()), 1e-9)
    out = {k: round(v / total, 4) for k, v in seconds.items()}
    out["other"] = round(max(1.0 - sum(out.values()), 0.0), 4)
    return out


def train_with_evals(overrides: list[str], evaluate: Evaluate, *, eval_every: int, minutes: float,
                     describe: Callable[[dict], str], on_start: Callable[[PPOTrainer], None] | None = None,
                     baseline: bool = False, run_root: str | None = None) -> dict:
    """Train with periodic evaluations (the learner ``algo=`` names, PPO by default); returns ``{"cfg",
    "iterations", "train_s", "curve", "policy", "time_split"}`` (:func:`time_split`), and with
    ``baseline`` the zero action's figures under ``evaluate`` on the first evaluation's envs (``"baseline"``,
    measured after training, outside the clock, so the run is the same with or without it). ``on_start`` sees the
    trainer before its first iteration (to read its envs during evaluations). ``run_root``: keep the run (its
    checkpoints, config and TensorBoard log) under this folder instead of a temporary one."""
    torch.set_num_threads(1)
    curve: list[dict] = []
    clock = {"train_s": 0.0, "since": 0.0}
    with tempfile.TemporaryDirectory() as tmp:
        cfg, task, raw = compose([f"run_root={run_root or KEEP_ROOT or tmp}", *overrides])
        trainer = ALGORITHMS[algorithm_name(cfg)].learner_class()(cfg, task, raw, quiet=True)
        if on_start is not None:
            on_start(trainer)

        def record(tr: PPOTrainer) -> None:
            ev = evaluate(_deterministic(tr, cfg), cfg.task, 10_000 + tr.iteration)
            point = {"iteration": tr.iteration, "wall_s": round(clock["train_s"], 2),
                     "env_steps": tr.iteration * cfg.algo.num_steps_per_env * cfg.num_envs, **ev}
            curve.append(point)
            print(f"it {tr.iteration:5d}  train {clock['train_s'] / 60:5.1f} min  {describe(point)}",
                  file=sys.stderr, flush=True)

        def on_iteration(tr: PPOTrainer) -> bool:
            clock["train_s"] += time.perf_counter() - clock["since"]
            last = tr.iteration >= cfg.max_iterations
            over = clock["train_s"] > 60.0 * minutes
            if tr.iteration % eval_every == 0 or last or over:
                record(tr)
            clock["since"] = time.perf_counter()
            return over

        clock["since"] = time.perf_counter()
        summary = trainer.learn(on_iteration=on_iteration)
        if not curve or curve[-1]["iteration"] != trainer.iteration:
            # stopped early by SIGTERM or SIGUSR1 (the run loop stops before ``on_iteration``; its checkpoint
            # saving counts as training time here): the figures are those of the policy it stopped with
            clock["train_s"] += time.perf_counter() - clock["since"]
            record(trainer)
    result = {"cfg": cfg, "iterations": trainer.iteration, "train_s": round(clock["train_s"], 1), "curve": curve,
              "policy": _deterministic(trainer, cfg), "time_split": time_split(summary, clock["train_s"])}
    if baseline:
        result["baseline"] = evaluate(ZeroPolicy(trainer.core.num_actions), cfg.task, BASELINE_SEED)
    if _CAPTURED is not None:
        _CAPTURED.append({"task": task, **result})
    return result


def reached(curve: list[dict], target: Target) -> dict | None:
    """The first point of ``curve`` that meets ``target``, or None."""
    return next((c for c in curve if target.met(c.get(target.key))), None)


def plot_curve(curve: list[dict], path: Path, *, key: str, ylabel: str, title: str, scale: float = 1.0,
               target: float | None = None, extra: tuple[str, str] | None = None, log: bool = False) -> None:
    """``key`` (x ``scale``) against training minutes, with an optional target line and a second series."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.6), dpi=120)
    minutes = [c["wall_s"] / 60 for c in curve]
    ax.plot(minutes, [scale * c[key] for c in curve], "o-", label=key.replace("_", " "))
    if extra is not None:
        ax.plot(minutes, [scale * c[extra[0]] for c in curve], "s--", alpha=0.6, label=extra[1])
    if target is not None:
        ax.axhline(target, color="gray", lw=0.8, ls=":", label=f"target {target:g}")
    if log:
        ax.set_yscale("log")
    ax.set_xlabel("training wall time [min]")
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=9)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)


def plot_seeds(results_file: Path, path: Path, *, key: str, target: float, ylabel: str, title: str,
               baseline_label: str) -> None:
    """Every run of ``results_file`` (a learn script's ``--append`` JSON lines): ``key`` against training minutes,
    one line per seed, with the target and the zero-action baseline (``baseline_zero_action``) as lines."""
    runs = [json.loads(line) for line in results_file.read_text().splitlines() if line.strip()]
    labelled = [(f"seed {r['seed']} ({r['num_envs']} envs, {r['env_steps'] / 1e6:.1f}M steps)", r) for r in runs]
    compare_runs(labelled, path, keys=[key], ylabels={key: ylabel}, ylim=(-0.03, 1.03),
                 hlines={key: [(target, f"target {target:g}"),
                               (runs[0]["baseline_zero_action"][key], baseline_label)]},
                 title=title.format(device=runs[0]["device"]))


def append_result(path: str | None, result: dict) -> None:
    """``--append FILE``: ``result`` (its curve included, its ``png`` path left out) as one JSON line of ``path``, so
    seeds and recipes run over several sessions land in one results file; nothing when ``path`` is None. The line
    names the CPU model and core count (``cpu``, ``cpu_count``): wall-clock figures compare only on one machine."""
    if path:
        from run_all import cpu_model

        machine = {"cpu": cpu_model(), "cpu_count": os.cpu_count()}
        with open(path, "a") as f:
            f.write(json.dumps({**machine, **portable({k: v for k, v in result.items() if k != "png"})}) + "\n")


REPO = Path(__file__).resolve().parents[1]


def portable(value):
    """``value`` with every absolute path made relative to the repository, or None where it lies outside it (a
    temporary frame or run folder, never committed): a results file names no folder of the machine that wrote it."""
    if isinstance(value, dict):
        return {k: portable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [portable(v) for v in value]
    if isinstance(value, str) and value.startswith("/") and "/" in value[1:] and "\n" not in value:
        path = Path(value)
        return str(path.relative_to(REPO)) if path.is_relative_to(REPO) else None
    return value


def write_result(result: dict, out: Path, name: str, *, quick: bool) -> None:
    """``<out>/<name>_learning.json`` (not in quick mode)."""
    if not quick:
        out.mkdir(parents=True, exist_ok=True)
        (out / f"{name}_learning.json").write_text(json.dumps(result, indent=2))


def compare_runs(runs: list[tuple[str, dict]], path: Path, *, keys: list[str],
                 hlines: dict[str, list[tuple[float, str]]] | None = None, title: str = "",
                 ylabels: dict[str, str] | None = None, ylim: tuple[float, float] | None = None,
                 x: str = "minutes") -> None:
    """One panel per ``keys`` entry, one line per ``(label, run)`` (a learn script's ``--append`` line: its curve
    against training minutes, or with ``x="env_steps"`` against env steps, where runs of other machines compare),
    with horizontal reference lines per key (``hlines``: targets, trivial baselines); ``ylabels`` per key (default:
    the key), ``ylim`` for every panel."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    styles = _recipe_styles([run for _, run in runs])
    fig, axes = plt.subplots(1, len(keys), figsize=(5.2 * len(keys), 3.8), dpi=120, squeeze=False)
    for ax, key in zip(axes[0], keys):
        for (label, run), style in zip(runs, styles):
            points = [c for c in run["curve"] if c.get(key) is not None]
            xs = [c["env_steps"] / 1e6 if x == "env_steps" else c["wall_s"] / 60 for c in points]
            ax.plot(xs, [c[key] for c in points], ms=3, label=label, **style)
        for value, text in (hlines or {}).get(key, []):
            ax.axhline(value, color="gray", lw=0.9, ls=":")
            ax.annotate(text, (0.01, value), xycoords=("axes fraction", "data"), fontsize=7, color="dimgray",
                        va="bottom")
        ax.set_xlabel("env steps [M]" if x == "env_steps" else "training wall time [min]")
        ax.set_ylabel((ylabels or {}).get(key, key.replace("_", " ")))
        if ylim is not None:
            ax.set_ylim(*ylim)
        ax.grid(alpha=0.3)
    # many runs or long labels: the legend below the panels, where it hides no curve
    below = len(runs) > 4 or max(len(label) for label, _ in runs) > 60
    if title:
        fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    if below:
        axes[0][0].legend(fontsize=6, loc="upper left", bbox_to_anchor=(0.0, -0.16))
    else:
        axes[0][0].legend(fontsize=7)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, bbox_inches="tight" if below else None)
    plt.close(fig)


MARKERS = ("o", "s", "^", "v", "D", "x", "P", "*")


def _recipe(run: dict) -> list[str]:
    """A run's recipe overrides: its command's overrides other than the task, the seed and the env count (which the
    label and the style name apart)."""
    return [o for o in run.get("overrides", []) if o.split("=")[0] not in ("task", "seed", "num_envs")]


def _recipe_styles(runs: list[dict]) -> list[dict]:
    """A line style per run: one colour per recipe (its task, env count, device, CPU model and overrides, the seed
    aside; lines written before the CPU was recorded count as one machine) and a marker per run within it, so that
    the seeds of one recipe read as one family beside another recipe's."""
    import matplotlib.pyplot as plt

    keys = [(r.get("task"), r.get("num_envs"), r.get("device"), r.get("cpu"), tuple(_recipe(r))) for r in runs]
    if len(set(keys)) == len(keys):  # every run its own recipe: the usual colour cycle
        return [{"marker": "o"} for _ in runs]
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    order = list(dict.fromkeys(keys))
    seen: dict[tuple, int] = {}
    styles = []
    for k in keys:
        n = seen[k] = seen.get(k, -1) + 1
        styles.append({"color": colours[order.index(k) % len(colours)], "marker": MARKERS[n % len(MARKERS)],
                       "lw": 1.1, "alpha": 0.85})
    return styles


def permutation_p(a: list[float], b: list[float]) -> float:
    """Two-sided permutation test on the difference of the means: the share of the splits of the pooled values
    into groups of ``len(a)`` and ``len(b)`` whose means differ at least as much as ``a``'s and ``b``'s. Exact (every
    split) up to a million splits (10 seeds against 10: 184,756); beyond, 200,000 random splits (seeded)."""
    import itertools
    import math
    import random

    pooled, total = a + b, sum(a) + sum(b)
    observed = abs(sum(a) / len(a) - sum(b) / len(b))
    if math.comb(len(pooled), len(a)) <= 1_000_000:
        splits = itertools.combinations(range(len(pooled)), len(a))
    else:
        rng = random.Random(0)
        splits = (rng.sample(range(len(pooled)), len(a)) for _ in range(200_000))
    hits = count = 0
    for idx in splits:
        s = sum(pooled[i] for i in idx)
        count += 1
        hits += abs(s / len(a) - (total - s) / len(b)) >= observed - 1e-12
    return hits / count


def seed_figures(run: dict, *, after_s: float, keys: list[str]) -> dict:
    """One run's figures for a comparison over seeds: minutes to its target (the run's length when not reached),
    and each of ``keys`` averaged over the evaluations from ``after_s`` seconds of training on."""
    late = [c for c in run["curve"] if c["wall_s"] >= after_s] or run["curve"][-1:]
    t = run.get("target_reached_at_s")
    out = {"reached": t is not None, "minutes_to_target": (t if t is not None else run["train_s"]) / 60,
           "iterations": run["iterations"]}
    out.update({k: sum(c[k] for c in late) / len(late) for k in keys})
    return out


def compare_seeds(reference: list[dict], probe: list[dict], *, after_s: float, keys: list[str]) -> dict:
    """Medians, means and the permutation test's p of each figure, the reference's seeds against the probe's."""
    import statistics

    ref = [seed_figures(r, after_s=after_s, keys=keys) for r in reference]
    new = [seed_figures(r, after_s=after_s, keys=keys) for r in probe]
    rows = {}
    for k in ("minutes_to_target", *keys, "iterations"):
        a, b = [f[k] for f in ref], [f[k] for f in new]
        rows[k] = {"reference_median": statistics.median(a), "reference_mean": statistics.mean(a),
                   "probe_median": statistics.median(b), "probe_mean": statistics.mean(b), "p": permutation_p(a, b)}
    return {"reference_seeds": [r.get("seed") for r in reference], "probe_seeds": [r.get("seed") for r in probe],
            "reached": [sum(f["reached"] for f in ref), sum(f["reached"] for f in new)], "figures": rows}


def _result_lines(name: str) -> list[str]:
    """The runs of a results file, one JSON line each; a missing file stops in one line."""
    if not Path(name).is_file():
        raise SystemExit(f"{name}: no such results file (a learn script's --append FILE)")
    return [ln for ln in Path(name).read_text().splitlines() if ln.strip()]


def _all_runs(name: str) -> list[dict]:
    return [json.loads(ln) for ln in _result_lines(name)]


def _load_run(spec: str) -> tuple[str, dict]:
    """``FILE`` (its last line) or ``FILE@N`` (line N, from 1) of a results file; the label names the run."""
    name, _, line = spec.partition("@")
    lines = _result_lines(name)
    if line and not line.isdigit():
        raise SystemExit(f"{spec}: expected FILE or FILE@N with N a line number from 1")
    index = int(line) - 1 if line else len(lines) - 1
    if not 0 <= index < len(lines):
        raise SystemExit(f"{name} has {len(lines)} run(s); asked for line {index + 1}")
    run = json.loads(lines[index])
    recipe = "".join(f", {o.removeprefix('algo.')}" for o in _recipe(run))
    label = (f"{Path(name).stem}@{index + 1}: {run.get('num_envs', '?')} envs, seed {run.get('seed', '?')}, "
             f"{run.get('env_steps', 0) / 1e6:.1f}M steps{recipe}")
    return label, run


def main(argv: list[str] | None = None) -> int:
    """``python benchmarks/learning.py compare OUT.png FILE[@N] ... --keys K ... [--hline K=VALUE:TEXT ...]``:
    the curves of runs from learn scripts' ``--append`` files side by side (recipes, env counts, seeds).
    ``python benchmarks/learning.py seeds --reference FILE ... --probe FILE ... --keys K ... [--after-min 4]``: two
    recipes over their seeds (every run of the files), with an exact permutation test per figure."""
    import argparse

    ap = argparse.ArgumentParser(prog="learning.py", description=main.__doc__)
    sub = ap.add_subparsers(dest="command", required=True)
    cmp = sub.add_parser("compare", help="plot runs of --append results files side by side")
    cmp.add_argument("out", type=Path, help="the PNG to write")
    cmp.add_argument("runs", nargs="+", help="FILE (its last run) or FILE@N (its N-th line, from 1)")
    cmp.add_argument("--keys", nargs="+", required=True, help="curve figures, one panel each")
    cmp.add_argument("--hline", action="append", default=[], metavar="KEY=VALUE:TEXT",
                     help="a reference line on KEY's panel (a target, a trivial baseline)")
    cmp.add_argument("--title", default="")
    cmp.add_argument("--x", choices=("minutes", "env_steps"), default="minutes",
                     help="the x axis: training minutes (one machine's runs) or env steps (any machine's)")
    sds = sub.add_parser("seeds", help="two recipes over their seeds: medians, means, permutation p")
    sds.add_argument("--reference", nargs="+", required=True, help="results files of the reference recipe")
    sds.add_argument("--probe", nargs="+", required=True, help="results files of the recipe probed")
    sds.add_argument("--keys", nargs="+", required=True, help="curve figures averaged after --after-min")
    sds.add_argument("--after-min", type=float, default=4.0)
    args = ap.parse_args(argv)
    if args.command == "seeds":
        groups = [[r for f in files for r in _all_runs(f)] for files in (args.reference, args.probe)]
        known = {k for g in groups for r in g for c in r["curve"] for k in c}
        missing = [k for k in args.keys if k not in known]
        if missing:
            raise SystemExit(f"no run's curve has {', '.join(missing)}; its figures: {', '.join(sorted(known))}")
        result = compare_seeds(*groups, after_s=60 * args.after_min, keys=args.keys)
        cpus = [sorted({r.get("cpu") or "not recorded" for r in g}) for g in groups]
        if cpus[0] != cpus[1]:  # minutes to the target and iterations are wall-clock figures
            print(f"note: the reference ran on {' and '.join(cpus[0])}, the probe on {' and '.join(cpus[1])}: "
                  "its wall-clock figures (minutes, iterations) compare machines as well as recipes", file=sys.stderr)
        print(json.dumps(result))
        for k, row in result["figures"].items():
            print(f"{k:<22} reference median {row['reference_median']:.3f} mean {row['reference_mean']:.3f} | "
                  f"probe median {row['probe_median']:.3f} mean {row['probe_mean']:.3f} | p {row['p']:.3f}")
        print(f"reached: reference {result['reached'][0]} of {len(groups[0])}, probe {result['reached'][1]} of "
              f"{len(groups[1])}")
        return 0
    hlines: dict[str, list[tuple[float, str]]] = {}
    for spec in args.hline:
        key, _, rest = spec.partition("=")
        value, _, text = rest.partition(":")
        try:
            hlines.setdefault(key, []).append((float(value), text))
        except ValueError:
            raise SystemExit(f"--hline {spec}: expected KEY=VALUE:TEXT with a number for VALUE") from None
    runs = [_load_run(spec) for spec in args.runs]
    missing = [k for k in args.keys if not any(k in c for _, r in runs for c in r["curve"])]
    if missing:
        known = sorted({k for _, r in runs for c in r["curve"] for k in c})
        raise SystemExit(f"no run's curve has {', '.join(missing)}; its figures: {', '.join(known)}")
    if args.x == "env_steps" and any("env_steps" not in c for _, r in runs for c in r["curve"]):
        raise SystemExit("--x env_steps: a run's curve has no env_steps (older learn scripts wrote only wall_s)")
    compare_runs(runs, args.out, keys=args.keys, hlines=hlines, title=args.title, x=args.x)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
