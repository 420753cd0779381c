"""Teacher-student distillation: rsl-rl's ``Distillation`` behind horde's run lifecycle.

``horde train task=quadruped-rough-student algo=distillation teacher=<PPO run dir>``: the student acts in the envs
(its own observation group ``policy``: what the robot has), the teacher reads the task's ``teacher`` group (the
observations without noise) and labels every step with its mean action; the student learns to match it. The run
directory, progress, checkpoints, resume and summary are PPO's (:class:`horde.train.ppo.PPOTrainer`); a checkpoint
stores the student as ``actor_state_dict`` too, so ``play`` and ``export`` treat it like any policy.
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import torch
from omegaconf import DictConfig
from rsl_rl.algorithms import Distillation

from horde.envs import RslRlVecEnv, make
from horde.policies.actor_critic import (activations_in_place, freeze_normalizers_after, rsl_model_cfgs,
                                         squash_actions)
from horde.train.checkpoint import load_checkpoint, resolve_checkpoint
from horde.train.config import ConfigError, TrainConfig, from_container
from horde.train.ppo import PPOTrainer, use_fused_adam
from horde.train.session import RunSession

__all__ = ["DistillationTrainer", "load_teacher"]


def load_teacher(where: str) -> tuple[dict, TrainConfig, Path]:
    """The teacher's checkpoint dict, typed config and path; one line when it is missing or not a PPO actor."""
    if not where:
        raise ConfigError("algo=distillation needs teacher=<run dir or checkpoint of a PPO run>")
    try:
        path = resolve_checkpoint(where)
        ckpt = load_checkpoint(path)
    except (FileNotFoundError, ValueError, RuntimeError) as exc:
        raise ConfigError(f"teacher={where}: {str(exc).splitlines()[0]}") from None
    if "actor_state_dict" not in ckpt:
        raise ConfigError(f"teacher={where}: {path.name} holds no PPO actor (train the teacher with algo=ppo)")
    return ckpt, from_container(ckpt["config"], ckpt["task"]), path


class DistillationTrainer(PPOTrainer):
    """One distillation run; the loop, logging and checkpoints are :class:`PPOTrainer`'s."""

    label = "distill"
    algo_name = "distillation"

    def __init__(self, cfg: TrainConfig, task: str, raw_cfg: DictConfig, *, run_dir: str | Path | None = None,
                 quiet: bool = False) -> None:
        self.cfg, self.task = cfg, task
        a = cfg.algo
        self.session = session = RunSession.begin(cfg, task, self.algo_name, quiet=quiet)
        self.dist, self.quiet, seed = session.dist, session.quiet, session.seed
        teacher_ckpt, teacher_cfg, teacher_path = load_teacher(a.teacher)
        self.core = make(task, num_envs=session.num_envs, device=session.device, seed=seed, config=cfg.task)
        if self.core.teacher_obs is None:
            raise ConfigError(f"task '{task}' has no teacher group to distill from (the legged tasks with "
                              "privileged_critic have one, such as quadruped-rough-student)")
        sizes = (int(teacher_ckpt["obs_dim"]), int(teacher_ckpt["num_actions"]))
        if sizes != (self.core.obs_dim, self.core.num_actions):
            raise ConfigError(
                f"teacher={a.teacher} ({teacher_ckpt['task']}) reads {teacher_ckpt['obs_dim']} observations and writes "
                f"{teacher_ckpt['num_actions']} actions; task '{task}' gives it {self.core.obs_dim} and takes "
                f"{self.core.num_actions}")
        self.env = RslRlVecEnv(self.core, teacher=True)
        self.device = self.core.device
        self.run_dir = session.open(raw_cfg, run_dir)
        self.config_dict, resume_ckpt = session.config_dict, session.resume_ckpt
        images = getattr(self.core, "obs_images", ())  # the teacher group holds the policy's columns too
        student, _ = rsl_model_cfgs(a.policy, images)
        teacher, _ = rsl_model_cfgs(teacher_cfg.algo.policy, images)
        train_cfg = {
            "num_steps_per_env": a.num_steps_per_env,
            "obs_groups": {"student": ["policy"], "teacher": ["teacher"]},
            "algorithm": {"class_name": Distillation, "learning_rate": a.learning_rate,
                          "num_learning_epochs": a.num_learning_epochs, "gradient_length": a.gradient_length,
                          "max_grad_norm": a.max_grad_norm, "loss_type": a.loss_type},
            "student": student, "teacher": teacher, "multi_gpu": self.dist.rsl_multi_gpu_cfg(),
        }
        with contextlib.redirect_stdout(io.StringIO()):
            self.alg = Distillation.construct_algorithm(self.env.get_observations(), self.env, train_cfg,
                                                        str(self.device))
        squash_actions(self.alg.student, a.policy)
        squash_actions(self.alg.teacher, teacher_cfg.algo.policy)
        activations_in_place(self.alg.student)
        freeze_normalizers_after([self.alg.student], a.policy)
        self.alg.load(teacher_ckpt, {"teacher": True}, strict=True)
        use_fused_adam(self.alg)
        self._start_loop(resume_ckpt, seed)
        if not self.quiet:
            n_params = sum(p.numel() for p in self.alg.get_policy().parameters())
            start = f", resuming at iteration {self.iteration}" if resume_ckpt is not None else ""
            print(f"[{task}] {session.num_envs} envs on {self.device}, distilling {teacher_path} into a student "
                  f"{a.policy.actor_hidden_dims} ({n_params} parameters), {cfg.max_iterations} iterations{start} -> "
                  f"{self.run_dir}", flush=True)

    def _restore(self, ckpt: dict) -> None:
        if ckpt["task"] != self.task:
            raise ConfigError(f"checkpoint is for task '{ckpt['task']}', not '{self.task}'")
        self.alg.load(ckpt, {"student": True, "teacher": True, "optimizer": True}, strict=True)
        self.iteration = int(ckpt["iteration"])
        torch.set_rng_state(ckpt["torch_rng"])
        self._restore_envs(ckpt)

    def _learner_state(self) -> dict:
        """The student, the teacher and the optimizer; the student also as ``actor_state_dict`` (what play and
        export load)."""
        saved = self.alg.save()
        return {**saved, "actor_state_dict": saved["student_state_dict"]}

    def noise_std(self) -> float:
        return float(self.alg.student.output_std.detach().mean())
