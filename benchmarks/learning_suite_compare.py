"""Two learners' scoreboards side by side (issue 70: one scoreboard, two learners).

    python benchmarks/learning_suite.py --compare benchmarks/results/<date>_learning_suite_cpu.json \\
        benchmarks/results/<date>_learning_suite_cpu_sac.json [--out benchmarks/results]

Reads two ``learning_suite.py`` results files of one device (PPO's and SAC's, or any two runs) and writes
``<out>/<date>_learning_suite_<device>_<a>_vs_<b>.md`` (one table: per task and learner the status, env steps and
wall time to the target, final and best figures, the learner's share of the training time, each beside that run's
trivial baseline) and ``.png`` (per task, both learners' curves against env steps and against training minutes, with
the target and the baselines). Env steps compare across machines; wall times only on one machine, which the page
says when the two files' CPUs differ. Nothing trains.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from learning_suite import ENTRIES, GPU_ORDER, _duration, _fmt, learner_share, portable, target_text

COLOURS = ("tab:blue", "tab:orange")
"""The first file's learner, the second's."""


def load(path: str) -> dict:
    """A ``learning_suite.py`` results file with its learner (``ppo`` for files written before ``--algo``), its
    rows by task; a file that is not one stops in one line."""
    try:
        data = json.loads(Path(path).read_text())
        machine, rows = data["machine"], data["rows"]
        by_task = {r["task"]: r for r in rows}
        device = machine["device"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise SystemExit(f"--compare {path}: not a learning_suite results file ({type(exc).__name__}: {exc})")
    algo = data.get("algo", "ppo")
    return {"path": path, "algo": algo, "machine": machine, "device": device, "quick": bool(data.get("quick")),
            "command": data.get("command"), "rows": {t: {"algo": algo, **r} for t, r in by_task.items()}}


def labels(boards: list[dict]) -> list[str]:
    """Each board's name in the table: its learner, with its date (then A/B) where both trained the same one."""
    names = [b["algo"].upper() for b in boards]
    if names[0] == names[1]:
        names = [f"{n} {b['machine'].get('date', '?')}" for n, b in zip(names, boards)]
    if names[0] == names[1]:
        names = [f"{n} ({ab})" for n, ab in zip(names, "AB")]
    return names


def task_order(boards: list[dict]) -> list[str]:
    """Every task of either board, in the scoreboard's order (tasks it no longer lists last)."""
    order = GPU_ORDER if boards[0]["device"].startswith("cuda") else tuple(e.task for e in ENTRIES)
    tasks = list(dict.fromkeys([t for b in boards for t in b["rows"]]))
    return sorted(tasks, key=lambda t: order.index(t) if t in order else len(order))


def _baseline(row: dict) -> str:
    targets = row.get("targets") or []
    return "; ".join(f"{name}: " + ", ".join(f"{t['key']} {_fmt(b.get(t['key']))}" for t in targets)
                     for name, b in (row.get("baselines") or {}).items()) or "—"


def _ratios(task: str, rows: list[dict | None], names: list[str]) -> str | None:
    """``task: B took x A's env steps and y its wall time`` where both reached the target."""
    if not all(r and r.get("reached") for r in rows):
        return None
    a, b = rows
    parts = []
    if a.get("env_steps_to_target") and b.get("env_steps_to_target") is not None:
        parts.append(f"{b['env_steps_to_target'] / a['env_steps_to_target']:.2f}x {names[0]}'s env steps")
    if a.get("time_to_target_s") and b.get("time_to_target_s") is not None:
        parts.append(f"{b['time_to_target_s'] / a['time_to_target_s']:.2f}x its wall time")
    return f"{task}: {names[1]} took " + " and ".join(parts) if parts else None


def markdown(boards: list[dict], *, out: Path, command: str) -> str:
    """The side-by-side table: one row per task and learner, the task's target on its first row (and again on the
    second where that run stated another: the G1's threshold is measured in each run)."""
    names = labels(boards)
    device = boards[0]["device"]
    out_lines = [f"# horde learning scoreboard: {names[0]} and {names[1]} side by side", "",
                 f"Device `{device}`. Command: `{command}`. Each figure is the deterministic policy's in fresh envs, "
                 "beside the trivial policy scored on the same measure and envs in the same run; training time "
                 "excludes evaluation; the learner share is the update's part of the training time (beside the "
                 "simulation's).", ""]
    for name, b in zip(names, boards):
        m = b["machine"]
        out_lines.append(f"- {name}: `{portable(b['path'], out)}`{' (a --quick smoke run)' if b['quick'] else ''}, "
                         f"{m.get('date', '?')} on {m.get('cpu', '?')} ({m.get('cores', '?')} cores), command "
                         f"`{b['command'] or '?'}`")
    cpus = {b["machine"].get("cpu") for b in boards}
    if len(cpus) > 1:
        out_lines.append(f"- The two ran on different CPUs ({' and '.join(sorted(map(str, cpus)))}): env steps "
                         "compare; wall times compare machines as well as learners.")
    out_lines += ["", "The final and best figures are the target's (every figure of every evaluation is in the "
                  "results files).", "",
                  "| task | target (measure) | learner | trivial baseline | status | env steps to target | "
                  "time to target | final | best | learner share | envs | budget | run |",
                  "|---|---|---|---|---|---:|---:|---|---:|---:|---:|---:|---|"]
    reached = {name: 0 for name in names}
    ratios = []
    tasks = task_order(boards)
    for task in tasks:
        rows = [b["rows"].get(task) for b in boards]
        shown_target = None
        for name, r in zip(names, rows):
            if r is None:
                out_lines.append(f"| {task} | | {name} | — | not run |" + " — |" * 8)
                continue
            targets = r.get("targets") or []
            target = (f"{target_text(targets)} ({'; '.join(t['measure'] for t in targets)})" if targets else "—")
            cell, shown_target = ("" if target == shown_target else target), target
            loud = r.get("defect") or r["status"].startswith(("error", "skipped"))
            status = f"**{r['status']}**" if loud else r["status"]
            last = r.get("final") or {}
            final = ", ".join(f"{t['key']} {_fmt(last.get(t['key']))}" for t in targets) or "—"
            budget = f"{_fmt(r.get('budget_min'))} min" if r.get("budget_min") is not None else "—"
            run = f"{r.get('date', '?')}, {r.get('commit') or '?'}"
            reached[name] += bool(r.get("reached"))
            out_lines.append(f"| {task} | {cell} | {name} | {_baseline(r)} | {status} | "
                             f"{_fmt(r.get('env_steps_to_target'))} | {_duration(r.get('time_to_target_s'))} | "
                             f"{final} | {_fmt(r.get('best'))} | {learner_share(r)} | {_fmt(r.get('num_envs'))} | "
                             f"{budget} | {run} |")
        ratios.append(_ratios(task, rows, names))
    out_lines += ["", "Targets reached: " + ", ".join(f"{n} {reached[n]} of {len(tasks)}" for n in names) + "."]
    both = [r for r in ratios if r]
    if both:
        out_lines += ["", "Where both reached the target: " + "; ".join(both) + "."]
    defects = [f"{task} ({name})" for task in tasks for name, b in zip(names, boards)
               if (b["rows"].get(task) or {}).get("defect")]
    out_lines += ["", f"Defects (a target the trivial policy meets, or no baseline): {', '.join(defects) or 'none'}.",
                  ""]
    return "\n".join(out_lines)


def plot(boards: list[dict], path: Path) -> None:
    """Per task two panels, the target's first figure against env steps and against training minutes: a line per
    learner (its time to the target marked), the target, and each run's trivial baseline where they differ."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = labels(boards)
    tasks = [t for t in task_order(boards) if any((b["rows"].get(t) or {}).get("curve") for b in boards)]
    if not tasks:
        return
    per_row = min(2, len(tasks))
    nrows = math.ceil(len(tasks) / per_row)
    fig, axes = plt.subplots(nrows, 2 * per_row, figsize=(3.6 * 2 * per_row, 3.0 * nrows), dpi=110, squeeze=False)
    for ax in axes.flat[2 * len(tasks):]:
        ax.axis("off")
    for i, task in enumerate(tasks):
        pair = (axes.flat[2 * i], axes.flat[2 * i + 1])
        rows = [b["rows"].get(task) for b in boards]
        first = next(r for r in rows if r and r.get("curve"))
        t = first["targets"][0]
        status = ", ".join(f"{n} {r['status'] if r else 'not run'}" for n, r in zip(names, rows))
        for ax, x in zip(pair, ("env_steps", "minutes")):
            seen_baselines: list[float] = []
            baseline_colours: dict[str, str] = {}
            for k, (name, r, colour) in enumerate(zip(names, rows, COLOURS)):
                if not r or not r.get("curve"):
                    continue
                points = [c for c in r["curve"] if c.get(t["key"]) is not None]
                xs = [c["env_steps"] / 1e6 if x == "env_steps" else c["wall_s"] / 60 for c in points]
                ax.plot(xs, [c[t["key"]] for c in points], "o-", ms=2.5, lw=1.1, color=colour, label=name)
                hit = r.get("env_steps_to_target") if x == "env_steps" else r.get("time_to_target_s")
                if hit is not None:
                    ax.axvline(hit / (1e6 if x == "env_steps" else 60), color=colour, lw=0.8, alpha=0.6)
                for bname, b in (r.get("baselines") or {}).items():
                    v = b.get(t["key"])
                    if v is not None and not any(math.isclose(v, s, rel_tol=1e-6, abs_tol=1e-9)
                                                 for s in seen_baselines):
                        seen_baselines.append(v)
                        line = baseline_colours.setdefault(bname, ("tab:red", "tab:purple")[len(baseline_colours) % 2])
                        run = f" ({name}'s run)" if k else ""  # the second run's trivial policy scored otherwise
                        ax.axhline(v, color=line, ls=":", lw=1.1, alpha=0.8, label=f"{bname}{run} {v:.4g}")
            ax.axhline(t["threshold"], color="k", ls="--", lw=0.9, label=f"target {t['op']} {t['threshold']:g}")
            if first.get("log"):
                ax.set_yscale("log")
            ax.set_xlabel("env steps [M]" if x == "env_steps" else "training wall time [min]", fontsize=8)
            ax.set_ylabel(t["key"], fontsize=8)
            ax.tick_params(labelsize=7)
            ax.grid(alpha=0.3)
        pair[0].set_title(f"{task}: {status}", fontsize=8, loc="left")
        pair[0].legend(fontsize=6)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)


def compare(a: str, b: str, *, out: Path, command: str) -> int:
    """Write the side-by-side Markdown and PNG of the results files ``a`` and ``b`` under ``out``; print the table."""
    boards = [load(a), load(b)]
    if boards[0]["device"] != boards[1]["device"]:
        raise SystemExit(f"--compare: {a} ran on {boards[0]['device']}, {b} on {boards[1]['device']}; compare "
                         "scoreboards of one device")
    date = max(str(bd["machine"].get("date", "")) for bd in boards)
    device = boards[0]["device"].replace(":", "")
    stem = (f"{date}_learning_suite_{device}_{boards[0]['algo']}_vs_{boards[1]['algo']}"
            + ("_quick" if any(bd["quick"] for bd in boards) else ""))
    out.mkdir(parents=True, exist_ok=True)
    table = markdown(boards, out=out, command=command)
    (out / f"{stem}.md").write_text(table + "\n")
    plot(boards, out / f"{stem}.png")
    print(table)
    print(f"wrote {out / stem}.md and .png", flush=True)
    return 0
