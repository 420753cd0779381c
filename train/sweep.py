"""Sweeps through Hydra's launchers: ``horde train -m hydra/launcher=submitit_slurm seed=0,1,2 [hydra.launcher.<key>=...]``.

Without ``hydra/launcher=`` a sweep runs its combinations one after another in this process (:mod:`horde.cli`).
With it, Hydra's own multirun takes the sweep: its basic sweeper expands the combinations and the named launcher
runs them, e.g. the submitit launcher (``pip install "horde[submitit]"``: ``submitit_slurm`` submits one Slurm job
per combination, ``submitit_local`` runs them as local processes; ``hydra.launcher.timeout_min=240``,
``hydra.launcher.gpus_per_node=1``, ``hydra.launcher.partition=...`` are the plugin's own keys). Every job runs
``horde train`` with its combination's overrides (:func:`run_job`), so it writes, locks and resumes its run
directory as a plain ``horde train`` does; Hydra's sweep folder (the launcher's logs, each job's ``.hydra``) is
``<run_root>/sweeps/<date>_<time>``. The command returns when every job has ended and fails in one line when one
failed: the first failed job's error (its traceback in ``<sweep>/<job>/horde_error.txt``), or for a job that died
(killed, out of time) the launcher's error and where its logs are.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from horde.train.config import ConfigError

__all__ = ["SweepError", "launch", "launcher_names", "plan", "run_job"]


class SweepError(RuntimeError):
    """A job of a launched sweep failed; one line with its log."""


def launcher_names() -> list[str]:
    """The launchers Hydra knows here (its ``basic`` and every installed plugin's)."""
    from hydra.core.config_store import ConfigStore
    from hydra.core.plugins import Plugins

    Plugins.instance()  # discovering the plugins registers their launcher configs
    return sorted(n.removesuffix(".yaml") for n in ConfigStore.instance().list("hydra/launcher"))


def plan(args: list[str]) -> list[str]:
    """Check the launcher a sweep names (one line listing the valid ones); returns the sweep's own overrides, those
    that are not Hydra's."""
    launcher = next((a.partition("=")[2] for a in reversed(args) if a.startswith("hydra/launcher=")), "basic")
    names = launcher_names()
    if launcher not in names:
        hint = "" if "submitit_slurm" in names else ' (submitit_local, submitit_slurm: pip install "horde[submitit]")'
        raise ConfigError(f"unknown hydra/launcher '{launcher}'; valid choices: {', '.join(names)}{hint}")
    return [a for a in args if not a.startswith(("hydra/", "hydra."))]


ERROR_FILE = "horde_error.txt"
"""Written into a job's folder of Hydra's sweep when its ``horde train`` failed: the one-line error, then the
traceback."""


def run_job(cfg) -> dict:
    """Hydra's task function: one ``horde train`` with the job's overrides (what the sweep made of the command
    line, without Hydra's own keys). A failure is written to the job's folder (:data:`ERROR_FILE`) for the
    launching process to report in one line."""
    import traceback

    from hydra.core.hydra_config import HydraConfig

    from horde.train.session import run_training

    hc = HydraConfig.get()
    try:
        return run_training(list(hc.overrides.task))
    except Exception as exc:  # noqa: BLE001 - reported by the launching process
        line = " ".join(str(exc).split()) or type(exc).__name__
        Path(hc.runtime.output_dir, ERROR_FILE).write_text(f"{line}\n\n{traceback.format_exc()}")
        return {"error": line}


def launch(args: list[str]) -> Path:
    """Run the sweep ``args`` (``horde train -m`` overrides with ``hydra/launcher=...``) through Hydra's multirun;
    returns Hydra's sweep folder."""
    import hydra

    from horde.train.config import _register, compose, config_dir, expand_sweep

    ours = plan(args)
    for combination in expand_sweep(ours):  # every run's config, checked here in one line before any job starts
        compose(combination)
    _register()  # the tasks (a plugin's too) in Hydra's config store, which the launcher hands to every job
    run_root = next((a.partition("=")[2] for a in reversed(ours) if a.startswith("run_root=")), "runs")
    sweep_dir = (Path(run_root) / "sweeps" / time.strftime("%Y-%m-%d_%H-%M-%S")).resolve()
    argv = [sys.argv[0], "--multirun", f"hydra.sweep.dir={sweep_dir}", "hydra.sweep.subdir=${hydra.job.num}", *args]
    main = hydra.main(config_path=str(config_dir()), config_name="train", version_base="1.3")(run_job)
    saved, full_error = sys.argv, os.environ.get("HYDRA_FULL_ERROR")
    sys.argv = argv
    os.environ["HYDRA_FULL_ERROR"] = "1"  # Hydra raises a job's failure instead of printing its traceback
    try:
        main()
    except Exception as exc:  # noqa: BLE001 - a job that died (killed, timed out) comes back as the executor's error
        text = str(exc).strip().splitlines()
        raise SweepError(f"a job of the sweep failed: {text[-1] if text else type(exc).__name__}; "
                         f"logs in {sweep_dir / '.submitit'}") from None
    finally:
        sys.argv = saved
        if full_error is None:
            del os.environ["HYDRA_FULL_ERROR"]
        else:
            os.environ["HYDRA_FULL_ERROR"] = full_error
    failed = sorted(sweep_dir.glob(f"*/{ERROR_FILE}"), key=lambda f: int(f.parent.name))
    if failed:
        first = failed[0].read_text().splitlines()[0]
        raise SweepError(f"{len(failed)} of {len(expand_sweep(ours))} jobs failed; job {failed[0].parent.name}: "
                         f"{first} (traceback: {failed[0]})")
    return sweep_dir
