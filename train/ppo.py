"""PPO training: rsl-rl's PPO maths, driven by a thin runner that keeps rollouts on the simulation device.

The runner owns what rsl-rl's ``OnPolicyRunner`` leaves out for horde's users: a timed split of every iteration
(simulation, policy inference, learning), episode statistics read once per iteration instead of every step,
atomic checkpoints, a run directory with the resolved config, and a progress bar.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import warnings
from collections.abc import Callable
from pathlib import Path

import torch
from omegaconf import DictConfig
from rsl_rl.algorithms import PPO

import horde
from horde.envs import RslRlVecEnv, make
from horde.policies.actor_critic import (activations_in_place, freeze_normalizers_after, rsl_model_cfgs,
                                         squash_actions)
from horde.policies.precision import act_in_precision
from horde.train.checkpoint import save_checkpoint
from horde.train.algorithm import HordePPO
from horde.train.config import ConfigError, TrainConfig
from horde.train.overlap import OverlappedRollouts
from horde.train.overlap_critic import OverlappedCritic
from horde.train.runner import run
from horde.train.session import RunSession, new_run_dir  # noqa: F401 - new_run_dir: its old home
from horde.train.timing import PhaseTimer


def symmetry_cfg(cfg: TrainConfig, core, task: str) -> dict | None:
    """rsl-rl's ``symmetry_cfg`` for ``cfg.algo.symmetry`` over ``core``'s mirror map; None when it is off. A task
    without a left-right mirror fails with one line."""
    sym = cfg.algo.symmetry
    if not sym.on:
        return None
    from horde.envs.symmetry import task_mirror

    try:
        mirror = task_mirror(core, task)
    except ValueError as exc:
        raise ConfigError(f"algo.symmetry: {exc}") from None
    return {"use_data_augmentation": sym.augment, "use_mirror_loss": sym.mirror_loss > 0,
            "mirror_loss_coeff": sym.mirror_loss, "data_augmentation_func": mirror}


def rsl_train_cfg(cfg: TrainConfig, *, critic_group: bool = False, symmetry: dict | None = None,
                  images: list[dict] | tuple = ()) -> dict:
    """The rsl-rl 5.x training dict for ``cfg.algo`` (PPO): the actor sees the ``policy`` group, the critic the
    privileged ``critic`` group when the task has one (asymmetric actor-critic), else ``policy`` too;
    ``symmetry`` is :func:`symmetry_cfg`'s dict; ``images`` the task's image observations (``obs_images``)."""
    a = cfg.algo
    actor, critic = rsl_model_cfgs(a.policy, images)
    return {
        "num_steps_per_env": a.num_steps_per_env,
        "obs_groups": {"actor": ["policy"], "critic": ["critic" if critic_group else "policy"]},
        "algorithm": {
            "class_name": PPO, "learning_rate": a.learning_rate, "num_learning_epochs": a.num_learning_epochs,
            "num_mini_batches": a.num_mini_batches, "clip_param": a.clip_param, "gamma": a.gamma, "lam": a.lam,
            "value_loss_coef": a.value_loss_coef, "entropy_coef": a.entropy_coef, "max_grad_norm": a.max_grad_norm,
            "schedule": a.schedule, "desired_kl": a.desired_kl, "symmetry_cfg": symmetry,
        },
        "actor": actor,
        "critic": critic,
        "multi_gpu": None,
    }


def use_fused_adam(alg: PPO) -> None:
    """Give rsl-rl's PPO torch's fused Adam over the same parameters and settings.

    The update rule is Adam's; the fused kernel updates every parameter in one call instead of about ten tensor ops
    per parameter (0.07 ms against 0.25 ms a step for two 32-32 MLPs on one CPU thread): on the 2-core CPU a cartpole
    update of 8 mini-batches took 28 ms instead of 32 (interleaved medians, under load). rsl-rl's adaptive schedule
    keeps writing ``param_groups[*]["lr"]``, which the fused optimizer reads like the plain one. Where no fused
    kernel exists for the device, rsl-rl's optimizer stays.
    """
    old = alg.optimizer
    if type(old) is not torch.optim.Adam or old.defaults.get("fused"):
        return
    params = [p for group in old.param_groups for p in group["params"]]
    settings = {k: old.defaults[k] for k in ("betas", "eps", "weight_decay", "amsgrad", "maximize")}
    try:
        alg.optimizer = torch.optim.Adam(params, lr=old.param_groups[0]["lr"], fused=True, **settings)
    except (RuntimeError, ValueError):  # no fused kernel for this device or dtype
        alg.optimizer = old


def cpu_compiler() -> str | None:
    """The C++ compiler that ``torch.compile`` uses on the CPU (``$CXX``, g++ or clang++ on PATH), or None."""
    for name in (os.environ.get("CXX", "g++"), "g++", "clang++"):
        if found := shutil.which(name):
            return found
    return None


def use_own_update(alg: HordePPO, algo, device: torch.device) -> None:
    """``algo.compile`` and ``algo.symmetry.augment_critic=false`` (:meth:`HordePPO.use_own_update`), each bad
    combination one line."""
    compile_ = bool(getattr(algo, "compile", False))
    augment_critic = getattr(getattr(algo, "symmetry", None), "augment_critic", True)
    if not compile_ and augment_critic:
        return
    name = "algo.compile=true" if compile_ else "algo.symmetry.augment_critic=false"
    if not augment_critic and not algo.symmetry.augment:
        raise ConfigError("algo.symmetry.augment_critic=false leaves the mirrored samples out of the critic's half: "
                          "it needs algo.symmetry.augment=true")
    if getattr(algo, "overlap", False):
        raise ConfigError(f"{name} changes the synchronous update; algo.overlap=true splits it: drop one of the two")
    if compile_ and device.type == "cpu" and cpu_compiler() is None:
        raise ConfigError("algo.compile=true on the CPU needs a C++ compiler (g++ or clang++, or CXX) on PATH")
    try:
        alg.use_own_update(compile=compile_, augment_critic=augment_critic)
    except ValueError as exc:
        raise ConfigError(f"{name} {exc}") from None


class PPOTrainer:
    """One PPO run: env core + rsl-rl PPO + logging. ``learn()`` runs it; ``checkpoint()`` saves it."""

    algo_name = "ppo"
    """The learner's name in :data:`horde.train.config.ALGORITHMS` (``algo_name`` in its checkpoints)."""
    overlap: OverlappedRollouts | OverlappedCritic | None = None
    """The overlapped schedule (``algo.overlap=true``), else None (always None for learners built on this one
    without it, such as distillation)."""

    def __init__(self, cfg: TrainConfig, task: str, raw_cfg: DictConfig, *, run_dir: str | Path | None = None,
                 quiet: bool = False) -> None:
        self.cfg, self.task = cfg, task
        if getattr(cfg.algo, "overlap", False) and cfg.deterministic and cfg.algo.max_staleness > 0:
            raise ConfigError("algo.overlap=true with algo.max_staleness>=1 cannot be deterministic (the learner draws "
                              "random numbers beside the rollout, and its generator is not checkpointed): drop one of "
                              "the two, or use algo.max_staleness=0 (bit-identical to synchronous PPO)")
        self.session = session = RunSession.begin(cfg, task, self.algo_name, quiet=quiet)
        self.dist, self.quiet, seed = session.dist, session.quiet, session.seed
        self.core = make(task, num_envs=session.num_envs, device=session.device, seed=seed, config=cfg.task)
        self.env = RslRlVecEnv(self.core, value_scale=cfg.algo.policy.value_scale)
        self.device = self.core.device
        self.run_dir = session.open(raw_cfg, run_dir)
        self.config_dict, resume_ckpt = session.config_dict, session.resume_ckpt
        train_cfg = rsl_train_cfg(cfg, critic_group=bool(self.core.critic_names),
                                  symmetry=symmetry_cfg(cfg, self.core, task),
                                  images=getattr(self.core, "obs_images", ()))
        train_cfg["multi_gpu"] = self.dist.rsl_multi_gpu_cfg()
        train_cfg["algorithm"]["class_name"] = HordePPO  # rsl-rl's PPO plus the overlapped schedules' pieces
        with contextlib.redirect_stdout(io.StringIO()):  # rsl-rl prints both networks and the obs sets
            self.alg = HordePPO.construct_algorithm(self.env.get_observations(), self.env, train_cfg, str(self.device))
        squash_actions(self.alg.actor, cfg.algo.policy)
        activations_in_place(self.alg.actor)
        activations_in_place(self.alg.critic)
        act_in_precision(self.alg.actor, getattr(cfg.algo, "rollout_precision", "fp32"))
        freeze_normalizers_after([self.alg.actor, self.alg.critic], cfg.algo.policy)
        use_fused_adam(self.alg)
        use_own_update(self.alg, cfg.algo, self.device)
        self._start_loop(resume_ckpt, seed)
        if getattr(cfg.algo, "overlap", False):
            try:
                if cfg.algo.max_staleness == 0:
                    self.overlap = OverlappedCritic(self, cfg.algo.overlap_learner)
                else:
                    self.overlap = OverlappedRollouts(self, cfg.algo.max_staleness, cfg.algo.overlap_learner)
            except ValueError as exc:
                raise ConfigError(str(exc)) from None
        if not self.quiet:
            n_params = sum(p.numel() for p in self.alg.get_policy().parameters())
            ranks = f" x {self.dist.world_size} ranks" if self.dist.enabled else ""
            start = f", resuming at iteration {self.iteration}" if resume_ckpt is not None else ""
            print(f"[{task}] {session.num_envs} envs{ranks} on {self.device}, PPO actor {cfg.algo.policy.actor_hidden_dims} "
                  f"({n_params} parameters), {cfg.max_iterations} iterations{start} -> {self.run_dir}", flush=True)

    def _start_loop(self, resume_ckpt: dict | None, seed: int) -> None:
        """Iteration 0 and the timer; then the checkpoint's state when resuming, else random episode clocks when
        ``algo.random_episode_start``."""
        self.iteration = 0
        self.writer = None
        self.timer = PhaseTimer(self.device)
        if resume_ckpt is not None:
            self._restore(resume_ckpt)
        elif self.cfg.algo.random_episode_start:
            g = torch.Generator().manual_seed(seed)
            n = self.core.num_envs
            self.core.episode_length.copy_(torch.randint(0, self.core.max_episode_length, (n,), generator=g))

    def _restore(self, ckpt: dict) -> None:
        if ckpt["task"] != self.task:
            raise ConfigError(f"checkpoint is for task '{ckpt['task']}', not '{self.task}'")
        self.alg.load(ckpt, None, strict=True)
        self.alg.learning_rate = float(ckpt["learning_rate"])
        self.iteration = int(ckpt["iteration"])
        torch.set_rng_state(ckpt["torch_rng"])
        self._restore_envs(ckpt)

    def _restore_envs(self, ckpt: dict) -> None:
        """The envs exactly as saved (single process); an env state from another simulator backend (e.g. saved on
        the CPU's MuJoCo C engine, resumed on a GPU's MuJoCo-Warp) is skipped with a warning: the envs start afresh."""
        if "env_state" in ckpt and not self.dist.enabled:
            try:
                self.core.set_env_state(ckpt["env_state"])
            except ValueError as exc:
                warnings.warn(f"{exc}: the envs start afresh (an exact resume needs the same backend)", stacklevel=3)

    # --- checkpoints -------------------------------------------------------------------------------------------
    def checkpoint(self) -> Path:
        """Write ``model_<iteration>.pt`` atomically."""
        payload = {
            "iteration": self.iteration,
            "task": self.task,
            "horde_version": horde.__version__,
            "config": self.config_dict,
            "obs_dim": self.core.obs_dim,
            "obs_images": list(getattr(self.core, "obs_images", ())),
            "num_actions": self.core.num_actions,
            "learning_rate": float(self.alg.learning_rate),
            "torch_rng": torch.get_rng_state(),
            "env_state": self.core.get_env_state(),
            **self._learner_state(),
        }
        return save_checkpoint(self.run_dir / f"model_{self.iteration}.pt", payload)

    def _learner_state(self) -> dict:
        """rsl-rl's state of the learner (networks, optimizer; from the learner process when overlap runs one)."""
        state = self.overlap.learner_state() if self.overlap is not None else None
        return state if state is not None else self.alg.save()

    # --- the loop (horde.train.runner drives it) -------------------------------------------------------------
    label = "ppo"

    @property
    def num_envs(self) -> int:
        return self.core.num_envs

    @property
    def steps_per_iteration(self) -> int:
        return self.cfg.algo.num_steps_per_env * self.core.num_envs * self.dist.world_size

    @property
    def learning_rate(self) -> float:
        return float(self.alg.learning_rate)

    def action_std(self) -> torch.Tensor:
        """Standard deviation of each action's noise ``[num_actions]``, from the distribution's parameters (the
        actor need not have run a forward pass in this process: with the overlapped learner process it has not)."""
        dist = self.alg.get_policy().distribution
        kind = getattr(dist, "std_type", None)
        if kind == "scalar":
            std = dist.std_param.clamp(*dist.std_range)
        elif kind == "log":
            std = dist.log_std_param.clamp(*dist.log_std_range).exp()
        else:
            std = self.alg.get_policy().output_std
        return std.detach().reshape(-1)

    def noise_std(self) -> float:
        """Mean standard deviation of the action noise (:meth:`action_std`)."""
        return float(self.action_std().mean())

    def policy(self) -> torch.nn.Module:
        return self.alg.get_policy()

    def pop_episode_stats(self) -> dict[str, float]:
        return self.core.pop_episode_stats()

    def start(self) -> None:
        if self.dist.enabled:
            self.alg.broadcast_parameters()
        self._obs = self.env.get_observations()
        self.alg.train_mode()

    def iterate(self) -> dict[str, float]:
        """One PPO iteration: ``num_steps_per_env`` steps of every env, returns, the update (with overlap: the
        update of the last batch while the next is collected)."""
        if self.overlap is not None:
            return self.overlap.iterate()
        self.rollout(self.alg, returns_phase="learn")
        threads = self.cfg.update_threads or self.cfg.torch_threads
        if threads != self.cfg.torch_threads:  # the physics' pool is idle: the update takes every core
            torch.set_num_threads(threads)
        losses = self.alg.update()
        if threads != self.cfg.torch_threads:
            torch.set_num_threads(self.cfg.torch_threads)
        self.timer.mark("learn")
        self.iteration += 1
        return losses

    def rollout(self, alg: PPO, *, returns_phase: str) -> None:
        """``num_steps_per_env`` steps of every env acted by ``alg`` (the learner's PPO, or the overlapped
        schedule's acting copy) into its storage, then its returns; the timer charges the returns to
        ``returns_phase``."""
        timer = self.timer
        with torch.inference_mode():
            for _ in range(self.cfg.algo.num_steps_per_env):
                actions = alg.act(self._obs)
                timer.mark("inference")
                self._obs, rewards, dones, extras = self.env.step(actions)
                timer.mark("sim")
                alg.process_env_step(self._obs, rewards, dones, extras)
                timer.mark("other")
            alg.compute_returns(self._obs)
            timer.mark(returns_phase)

    def learn(self, on_iteration: Callable[[PPOTrainer], bool] | None = None) -> dict:
        """Train for ``cfg.max_iterations`` iterations (:func:`horde.train.runner.run`); returns the summary."""
        try:
            return run(self, on_iteration)
        finally:
            if self.overlap is not None:
                self.overlap.close()
