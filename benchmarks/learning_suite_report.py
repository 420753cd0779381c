"""The learning scoreboard's report (:mod:`learning_suite`): the Markdown table, the PNG of every task's curve
against its target and trivial baseline, the JSON of the rows as they stand, the suite's exit code, and the rows
of an earlier scoreboard (``--merge``). :mod:`learning_suite` re-exports these names."""

from __future__ import annotations

import json
import math
import time
from pathlib import Path


def _fmt(v) -> str:
    if v is None:
        return "—"
    if isinstance(v, float):
        return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.1f}" if abs(v) >= 10 else f"{v:.3g}"
    return f"{v:,}" if isinstance(v, int) else str(v)


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    return f"{seconds:.1f} s" if seconds < 120 else f"{seconds / 60:.1f} min"


def target_text(targets: list[dict]) -> str:
    return " and ".join(f"`{t['key']}` {t['op']} {t['threshold']:g}" for t in targets)


def learner_share(row: dict) -> str:
    """The learner's update as a share of the training time, and the simulation's (``time_split``; rows written
    before it was recorded have none)."""
    split = row.get("time_split")
    if not split:
        return "—"
    return f"{100 * split['learn']:.0f}% (sim {100 * split['sim']:.0f}%)"


def markdown(info: dict, rows: list[dict], *, command: str, frames_dir: str, merged_from: str | None = None,
             algo: str = "ppo") -> str:
    """The scoreboard of the learner ``algo`` as Markdown; rows marked ``merged`` came from ``merged_from``
    (``--merge``) and are named."""
    gpu = f", GPU {info['gpu']}" if info.get("gpu") else ", no GPU"
    out = ["# horde learning scoreboard" + ("" if algo == "ppo" else f": {algo.upper()}"), "",
           f"{info['date']} on {info['cpu']} ({info['cores']} cores{gpu}), device `{info['device']}`, learner "
           f"`{algo}`; torch {info['torch']}, warp {info['warp-lang']}, newton {info['newton']}, mujoco "
           f"{info['mujoco']}. Command: "
           f"`{command}`. Each figure is the deterministic policy's, evaluated in fresh envs; the trivial baselines "
           "(zero action; standing still for the G1) are scored on the same measure and envs in the same run. "
           "Training time excludes evaluation; the learner share is the update's part of it (beside the "
           "simulation's).", "",
           "| task | target (measure) | trivial baseline | status | time to target | env steps to target | final | "
           "best | learner share | envs | budget | seed | command |",
           "|---|---|---|---|---:|---:|---|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        targets = r.get("targets") or []
        measure = "; ".join(t["measure"] for t in targets)
        base = "; ".join(f"{name}: " + ", ".join(f"{t['key']} {_fmt(b.get(t['key']))}" for t in targets)
                         for name, b in (r.get("baselines") or {}).items()) or "—"
        loud = r.get("defect") or r["status"].startswith(("error", "skipped"))
        status = f"**{r['status']}**" if loud else r["status"]
        final = ", ".join(f"{k} {_fmt(v)}" for k, v in (r.get("final") or {}).items()) or "—"
        tt = _duration(r.get("time_to_target_s"))
        target = f"{target_text(targets)} ({measure})" if targets else "—"
        out.append(f"| {r['task']} | {target} | {base} | {status} | {tt} | "
                   f"{_fmt(r.get('env_steps_to_target'))} | {final} | {_fmt(r.get('best'))} | {learner_share(r)} | "
                   f"{_fmt(r.get('num_envs'))} | {_fmt(r.get('budget_min'))} min | {_fmt(r.get('seed'))} | "
                   f"`{r.get('command', '')}` |")
    defects = [r["task"] for r in rows if r.get("defect")]
    out += ["", f"Defects (a target the trivial policy meets, or no baseline): {', '.join(defects) or 'none'}.", ""]
    earlier = [r for r in rows if r.get("merged")]
    if earlier:
        out += [f"Rows from an earlier run (`--merge {merged_from or '?'}`): " + "; ".join(
            f"{r['task']} ({r.get('date', '?')}, {r.get('machine', '?')}, commit {r.get('commit') or '?'})"
            for r in earlier) + ".", ""]
    framed = [r for r in rows if r.get("frame")]
    if framed:
        out += ["Frames of the trained policies (Newton tasks ray-traced in 3D, classic tasks in 2D):", ""]
        out += [f"![{r['task']}]({r.get('frame_rel') or frames_dir + '/' + Path(r['frame']).name})" for r in framed]
        out += [""]
    return "\n".join(out)


def plot(rows: list[dict], path: Path) -> None:
    """One subplot per task: the target's first figure against training minutes, the target and the baseline."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shown = [r for r in rows if r.get("curve")]
    if not shown:
        return
    cols = min(4, len(shown))
    nrows = math.ceil(len(shown) / cols)
    fig, axes = plt.subplots(nrows, cols, figsize=(4.2 * cols, 3.2 * nrows), dpi=110, squeeze=False)
    for ax in axes.flat[len(shown):]:
        ax.axis("off")
    for ax, r in zip(axes.flat, shown):
        t = r["targets"][0]
        minutes = [c["wall_s"] / 60 for c in r["curve"]]
        ax.plot(minutes, [c.get(t["key"]) for c in r["curve"]], "o-", ms=3, label="trained (deterministic)")
        ax.axhline(t["threshold"], color="k", ls="--", lw=0.9, label=f"target {t['op']} {t['threshold']:g}")
        for (name, b), color in zip((r.get("baselines") or {}).items(), ("tab:red", "tab:purple")):
            if b.get(t["key"]) is not None:
                ax.axhline(b[t["key"]], color=color, ls=":", lw=1.2, label=f"{name} {b[t['key']]:.4g}")
        if r.get("time_to_target_s") is not None:
            ax.axvline(r["time_to_target_s"] / 60, color="tab:green", lw=0.8, alpha=0.7)
        if r.get("log"):
            ax.set_yscale("log")
        ax.set_title(f"{r['task']} ({r.get('algo', 'ppo').upper()}, {r['num_envs']} envs): {r['status']}", fontsize=8,
                     color="tab:red" if r.get("defect") else "black")
        ax.set_xlabel("training wall time [min]", fontsize=8)
        ax.set_ylabel(t["key"], fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)


def exit_code(rows: list[dict]) -> int:
    """1 when a target is a defect, 2 when a task failed to run, else 0 (skipped tasks do not fail the suite)."""
    if any(r.get("defect") for r in rows):
        return 1
    return 2 if any(r["status"].startswith("error") for r in rows) else 0


def write(out: Path, stem: str, info: dict, command: str, quick: bool, t_start: float, rows: list[dict],
          frames: Path, merged_from: str | None = None, algo: str = "ppo") -> str:
    """The scoreboard's JSON, Markdown and PNG as they stand (after every task: a run cut short keeps its rows).
    ``command`` and ``merged_from`` come :func:`portable` already, as do the rows' frames."""
    out.mkdir(parents=True, exist_ok=True)
    tmp = out / f".{stem}.json.tmp"
    tmp.write_text(json.dumps({"machine": info, "algo": algo, "command": command, "quick": quick,
                               "merged_from": merged_from, "wall_s": round(time.perf_counter() - t_start, 1),
                               "rows": rows}, indent=1))
    tmp.replace(out / f"{stem}.json")
    table = markdown(info, rows, command=command, frames_dir=frames.name, merged_from=merged_from, algo=algo)
    (out / f"{stem}.md").write_text(table + "\n")
    plot(rows, out / f"{stem}.png")
    return table


def load_earlier(path: str, device: str, algo: str = "ppo") -> list[dict]:
    """The rows of an earlier scoreboard (``--merge``) of the same device and learner, each with its own date and
    machine; one-line errors."""
    p = Path(path)
    try:
        data = json.loads(p.read_text())
        machine, rows = data["machine"], data["rows"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise SystemExit(f"--merge {path}: not a learning_suite results file ({type(exc).__name__}: {exc})")
    if data.get("quick"):
        raise SystemExit(f"--merge {path}: a --quick smoke run; merge full runs only")
    if machine.get("device") != device:
        raise SystemExit(f"--merge {path}: its rows ran on {machine.get('device')}, this run on {device}")
    if data.get("algo", "ppo") != algo:  # scoreboards before --algo were PPO's
        raise SystemExit(f"--merge {path}: its rows trained {data.get('algo', 'ppo')}, this run {algo}")
    for r in rows:
        r.setdefault("algo", data.get("algo", "ppo"))
        r.setdefault("date", machine.get("date"))
        r.setdefault("machine", machine.get("cpu"))
        if r.get("frame") and not r.get("frame_rel"):
            frame = p.parent / f"{p.stem}_frames" / Path(r["frame"]).name
            r["frame_rel"] = f"{frame.parent.name}/{frame.name}" if frame.exists() else None
    return rows
