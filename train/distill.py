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
from omegaconf import DictConfig, OmegaConf
from rsl_rl.algorithms import Distillation

from horde.envs import RslRlVecEnv, make
from horde.policies.actor_critic import freeze_normalizers_after, rsl_model_cfgs, squash_actions
from horde.train.checkpoint import load_checkpoint, resolve_checkpoint
from horde.train.config import ConfigError, TrainConfig, from_container, to_container
from horde.train.ppo import PPOTrainer, new_run_dir, use_fused_adam
from horde.train.session import DistInfo, broadcast_object, seed_everything, setup_distributed

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

    def __init__(self, cfg: TrainConfig, task: str, raw_cfg: DictConfig, *, run_dir: str | Path | None = None,
                 quiet: bool = False) -> None:
        self.cfg, self.task = cfg, task
        self.dist, device = (setup_distributed(cfg.device, cfg.dist_backend) if cfg.distributed
                             else (DistInfo(), cfg.device))
        self.quiet = quiet or not self.dist.is_main
        a = cfg.algo
        teacher_ckpt, teacher_cfg, teacher_path = load_teacher(a.teacher)
        num_envs = cfg.num_envs // self.dist.world_size
        if num_envs < 1:
            raise ConfigError(f"num_envs={cfg.num_envs} cannot be split over {self.dist.world_size} ranks")
        torch.set_num_threads(cfg.torch_threads)
        seed = cfg.seed + self.dist.rank
        seed_everything(seed, deterministic=cfg.deterministic)
        self.core = make(task, num_envs=num_envs, device=device, seed=seed, config=cfg.task)
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
        self.config_dict = {**to_container(raw_cfg), "algo_name": "distillation"}
        resume_ckpt = load_checkpoint(resolve_checkpoint(cfg.resume)) if cfg.resume else None
        if run_dir is None and resume_ckpt is not None:
            run_dir = resolve_checkpoint(cfg.resume).parent
        if self.dist.is_main:
            self.run_dir = Path(run_dir) if run_dir else new_run_dir(cfg.run_root, task)
            self.run_dir.mkdir(parents=True, exist_ok=True)
            (self.run_dir / "config.yaml").write_text(OmegaConf.to_yaml(raw_cfg, resolve=True))
        self.run_dir = Path(broadcast_object(str(self.run_dir) if self.dist.is_main else None, self.dist))
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
        freeze_normalizers_after([self.alg.student], a.policy)
        self.alg.load(teacher_ckpt, {"teacher": True}, strict=True)
        use_fused_adam(self.alg)
        self._start_loop(resume_ckpt, seed)
        if not self.quiet:
            n_params = sum(p.numel() for p in self.alg.get_policy().parameters())
            start = f", resuming at iteration {self.iteration}" if resume_ckpt is not None else ""
            print(f"[{task}] {num_envs} envs on {self.device}, distilling {teacher_path} into a student "
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
