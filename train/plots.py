"""``horde plot run=<dir>``: one PNG of the training curves, read back from the run's TensorBoard events."""

from __future__ import annotations

from pathlib import Path

from horde.sim.files import atomic_path


def read_scalars(run_dir: str | Path) -> dict[str, tuple[list[int], list[float]]]:
    """Every scalar series in a run directory's TensorBoard events: tag -> (steps, values)."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(run_dir), size_guidance={"scalars": 0})
    acc.Reload()
    out = {}
    for tag in acc.Tags().get("scalars", []):
        events = acc.Scalars(tag)
        out[tag] = ([e.step for e in events], [e.value for e in events])
    return out


def plot_run(run_dir: str | Path, out: str | Path | None = None) -> tuple[Path, dict[str, list[str]]]:
    """Write ``<run_dir>/plots/training.png``; returns its path and the series drawn in each panel."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    run_dir = Path(run_dir)
    series = read_scalars(run_dir)
    if not series:
        raise FileNotFoundError(f"{run_dir}: no TensorBoard scalars to plot")
    panels = {
        "Episode return": [t for t in ("Train/mean_return",) if t in series],
        "Episode length [steps]": [t for t in ("Train/mean_episode_length",) if t in series],
        # terms whose scale is zero for this task stay at zero: leave them out of the legend
        "Reward terms (per episode, scaled)": sorted(t for t in series if t.startswith("Reward/")
                                                     and any(v != 0.0 for v in series[t][1])),
        "Wall-time share": [t for t in ("Perf/share_sim", "Perf/share_inference", "Perf/share_learn",
                                        "Perf/share_other") if t in series],
    }
    fig, axes = plt.subplots(2, 2, figsize=(12, 8), constrained_layout=True)
    drawn: dict[str, list[str]] = {}
    for ax, (title, tags) in zip(axes.flat, panels.items()):
        ax.set_title(title)
        ax.set_xlabel("iteration")
        ax.grid(alpha=0.3)
        if title == "Wall-time share" and tags:
            steps = series[tags[0]][0]
            ax.stackplot(steps, *[series[t][1] for t in tags], labels=[t.split("_", 1)[1] for t in tags], alpha=0.8)
            ax.set_ylim(0, 1.05)
        else:
            for t in tags:
                ax.plot(*series[t], label=t.split("/", 1)[1])
        if tags:
            ax.legend(fontsize=8, loc="best")
        drawn[title] = tags
    fig.suptitle(f"{run_dir.parent.name}: {run_dir.name}")
    out = Path(out) if out else run_dir / "plots" / "training.png"
    with atomic_path(out) as tmp:
        fig.savefig(tmp, dpi=100)
    plt.close(fig)
    return out, drawn
