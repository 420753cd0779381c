"""``make bench``: run every benchmark script, then write one JSON file, a Markdown table and PNG plots.

    python benchmarks/run_all.py [--device cpu|cuda:0] [--quick] [--only sim_throughput ...] [--render]

Each script prints JSON lines with ``--json``; this collects them per script into
``benchmarks/results/<date>_<device>.json`` and renders ``benchmarks/RESULTS.md`` (date, CPU/GPU model, core count,
versions) and ``benchmarks/results/<date>_<device>_*.png``: env-steps/s against number of envs (log-log) per task
and implementation, and return against wall time for each learner comparison. Every figure keeps the unit, N,
device and repeat count its script reported; ratios are computed by the scripts within one run.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path

HERE = Path(__file__).resolve().parent
SCRIPTS = ["sim_throughput", "policy_latency", "diff_vs_ppo", "train_vs_sb3", "overlap"]
"""Scripts in run order; a missing one is reported and skipped. sim_throughput runs newton_throughput's articulated
tasks (ant, humanoid, quadruped) itself."""
DEVICE_AWARE = {"sim_throughput", "newton_throughput", "overlap"}
SCRIPT_ARGS = {"overlap": ["--tasks", "cartpole", "pendulum", "ant", "--budget-s", "300"]}
"""Arguments a script gets in ``make bench`` (overlap: the quadruped's runs alone take 40 minutes on 2 cores; run
``benchmarks/overlap.py`` by hand for it)."""


def cpu_model() -> str:
    """The CPU's model name (``/proc/cpuinfo``; elsewhere what ``platform`` knows)."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine_info(device: str) -> dict:
    """CPU model, cores, GPU name and library versions, for the results header."""
    info = {"date": dt.date.today().isoformat(), "device": device, "cpu": cpu_model(), "cores": os.cpu_count(),
            "python": platform.python_version(), "gpu": None}
    for pkg in ("horde", "torch", "warp-lang", "newton", "mujoco", "mujoco-warp", "rsl-rl-lib", "onnxruntime",
                "stable-baselines3"):
        try:
            info[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            info[pkg] = None
    if device.startswith("cuda"):
        import torch

        info["gpu"] = torch.cuda.get_device_name(int(device.split(":")[1]) if ":" in device else 0)
    return info


def run_script(name: str, device: str, quick: bool) -> tuple[list[dict], float, str]:
    path = HERE / f"{name}.py"
    cmd = [sys.executable, str(path), "--json"] + (["--quick"] if quick else SCRIPT_ARGS.get(name, []))
    if name in DEVICE_AWARE:
        cmd += ["--device", device]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    rows = []
    for line in proc.stdout.splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:
                pass
    status = "ok" if proc.returncode == 0 else f"exit {proc.returncode}: {proc.stderr.strip().splitlines()[-1:]}"
    return rows, time.perf_counter() - t0, status


def _fmt(v) -> str:
    if isinstance(v, float):
        return f"{v:,.3g}" if abs(v) < 1000 else f"{v:,.0f}"
    if isinstance(v, list):
        return json.dumps(v)[:60]
    return "" if v is None else str(v)


RATIO_KEYS = ("ratio", "wall_time_ratio", "env_steps_ratio", "value")
"""Where a script's ratio row keeps its figure."""


def ratio_rows(results: dict) -> list[dict]:
    """One row per ratio a script reported (rows labelled ``ratio:a/b`` or of kind ``ratio``), for the summary."""
    out = []
    for name, res in results.items():
        for r in res["rows"]:
            label = next((r[k] for k in ("impl", "learner") if str(r.get(k, "")).startswith("ratio:")), None)
            if label is None and r.get("kind") != "ratio":
                continue
            value = next((r[k] for k in RATIO_KEYS if isinstance(r.get(k), (int, float))
                          and not isinstance(r.get(k), bool)), None)
            what = label[6:] if label else r.get("what", "ratio")
            subject = " ".join(str(r[k]) for k in ("task", "policy") if r.get(k))
            n = r.get("num_envs", "")
            extra = {k: v for k, v in r.items() if k not in ("impl", "learner", "kind", "task", "policy", "num_envs",
                                                            "device", "what", *RATIO_KEYS)}
            out.append({"script": name, "subject": subject, "ratio of": what, "N": n, "value": value,
                        "notes": ", ".join(f"{k}={_fmt(v)}" for k, v in extra.items())})
    return out


def markdown(info: dict, results: dict) -> str:
    gpu = f", GPU {info['gpu']}" if info.get("gpu") else ", no GPU"
    out = [f"# horde benchmark results", "",
           f"{info['date']} on {info['cpu']} ({info['cores']} cores{gpu}), device `{info['device']}`. "
           f"Versions: horde {info['horde']}, torch {info['torch']}, warp {info['warp-lang']}, newton {info['newton']}, "
           f"mujoco {info['mujoco']}, rsl-rl {info['rsl-rl-lib']}, onnxruntime {info['onnxruntime']}, "
           f"stable-baselines3 {info['stable-baselines3']}.", "",
           "Regenerate with `make bench` (or `make bench DEVICE=cuda:0`). Every ratio compares two figures "
           "measured in the same script run on the same machine.", ""]
    ratios = ratio_rows(results)
    if ratios:
        out += ["## Summary: every ratio", "", "| script | subject | ratio of | N | value | notes |",
                "|---|---|---|---|---|---|"]
        out += [f"| {r['script']} | {r['subject']} | {r['ratio of']} | {r['N']} | {_fmt(r['value'])} | {r['notes']} |"
                for r in ratios]
        out += [""]
    for name, res in results.items():
        out += [f"## {name}", "", f"status: {res['status']}, {res['seconds']:.0f} s", ""]
        rows = [{k: v for k, v in r.items() if k not in ("curve", "curves")} for r in res["rows"]
                if "curves" not in r]
        if not rows:
            out += ["(no rows)", ""]
            continue
        keys = list(dict.fromkeys(k for r in rows for k in r))
        out += ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
        out += ["| " + " | ".join(_fmt(r.get(k)) for k in keys) + " |" for r in rows]
        out += [""]
    return "\n".join(out)


def plots(results: dict, prefix: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    written = []
    tput = [r for name in ("sim_throughput", "newton_throughput") for r in results.get(name, {}).get("rows", [])
            if "env_steps_per_s" in r]
    if tput:
        tasks = sorted({r["task"] for r in tput}, key=lambda t: (t != "cartpole", t))
        impls = sorted({r["impl"] for r in tput})
        color = {impl: f"C{k}" for k, impl in enumerate(impls)}  # one colour per implementation in every panel
        cols = min(2, len(tasks))
        rows = -(-len(tasks) // cols)
        fig, axes = plt.subplots(rows, cols, figsize=(6 * cols, 4.2 * rows), constrained_layout=True, squeeze=False)
        for ax, task in zip(axes.flat, tasks, strict=False):
            series = {}
            for r in (r for r in tput if r["task"] == task):
                series.setdefault((r["impl"], r["device"]), []).append((r["num_envs"], r["env_steps_per_s"]))
            for (impl, device), pts in sorted(series.items()):
                pts.sort()
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", color=color[impl],
                        label=f"{impl} ({device})")
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xlabel("number of envs")
            ax.set_ylabel("env steps per second")
            ax.grid(alpha=0.3, which="both")
            ax.legend(fontsize=8)
            ax.set_title(task)
        for ax in list(axes.flat)[len(tasks):]:
            ax.set_visible(False)
        fig.suptitle("Simulation throughput (log-log)")
        path = prefix.with_name(prefix.name + "_throughput.png")
        fig.savefig(path, dpi=100)
        plt.close(fig)
        written.append(path)
    for script in ("train_vs_sb3", "diff_vs_ppo"):  # one plot per comparison: its own learners and threshold
        rows = results.get(script, {}).get("rows", [])
        curves = [c for r in rows for c in r.get("curves", [])]
        for task in sorted({c["task"] for c in curves}):
            fig, ax = plt.subplots(figsize=(8, 5.5), constrained_layout=True)
            threshold = next((r["threshold"] for r in rows if r.get("task") == task and "threshold" in r), None)
            if threshold is not None:
                ax.axhline(threshold, color="0.4", linestyle="--", linewidth=1, label=f"threshold {threshold:g}")
            colors = {}
            for c in (c for c in curves if c["task"] == task and c["curve"]):
                first = c["seed"] == min(x["seed"] for x in curves if x["learner"] == c["learner"] and x["task"] == task)
                ax.plot([p[0] for p in c["curve"]], [p[2] for p in c["curve"]],
                        color=colors.setdefault(c["learner"], f"C{len(colors)}"), alpha=0.8,
                        label=c["learner"] if first else None)
            ax.set_xlabel("training wall time [s] (evaluation excluded)")
            ax.set_ylabel("deterministic evaluation return")
            ax.grid(alpha=0.3)
            ax.legend()
            ax.set_title(f"{task} ({script}): return against wall time, one line per seed")
            path = prefix.with_name(prefix.name + f"_learning_{script}_{task}.png")
            fig.savefig(path, dpi=100)
            plt.close(fig)
            written.append(path)
    return written


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--quick", action="store_true", help="every script in its quick mode (smoke test)")
    ap.add_argument("--only", nargs="+", default=None,
                    help="run only these scripts; the other scripts' results of the same day and device are kept")
    ap.add_argument("--out", default=str(HERE / "results"), help="results folder")
    ap.add_argument("--render", action="store_true",
                    help="run nothing: write the table and plots again from today's results file")
    args = ap.parse_args(argv)
    info = machine_info(args.device)
    out = Path(args.out)
    tag = f"{info['date']}_{args.device.replace(':', '')}" + ("_quick" if args.quick else "")
    results = {}
    if (args.only or args.render) and (out / f"{tag}.json").is_file():  # keep today's figures of the others
        results = json.loads((out / f"{tag}.json").read_text())["results"]
    elif args.render:
        print(f"[bench] --render: no {out / (tag + '.json')} to render", file=sys.stderr)
        return 2
    for name in [] if args.render else args.only or SCRIPTS:
        if not (HERE / f"{name}.py").is_file():
            print(f"[bench] {name}: script not present, skipped", flush=True)
            continue
        print(f"[bench] {name} ...", flush=True)
        rows, seconds, status = run_script(name, args.device, args.quick)
        results[name] = {"rows": rows, "seconds": seconds, "status": status}
        print(f"[bench] {name}: {status}, {len(rows)} rows, {seconds:.0f} s", flush=True)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{tag}.json").write_text(json.dumps({"machine": info, "results": results}, indent=1))
    md = markdown(info, results)
    pngs = plots(results, out / tag)
    md += "\n## Plots\n\n" + "\n".join(f"![{p.stem}](results/{p.name})" for p in pngs) + "\n"
    md_path = HERE / ("RESULTS_quick.md" if args.quick else "RESULTS.md")
    md_path.write_text(md)
    print(f"[bench] wrote {out / (tag + '.json')}, {md_path}, {len(pngs)} plots", flush=True)
    failed = [n for n, r in results.items() if r["status"] != "ok"]
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
