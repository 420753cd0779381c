"""SAC for thousands of envs (``algo=sac``), designed after FastSAC (Holosoma), FastTD3 and FlashSAC.

Every vector step of the envs goes into a replay ring on their device (:class:`horde.train.replay.ReplayRing`,
``num_envs x buffer_length``, no host copy), and is followed by ``num_updates`` updates of a large batch drawn
uniformly from it:

- **critics**: twin Q networks with a categorical head over ``num_atoms`` fixed atoms in ``[v_min, v_max]`` (C51).
  The target of a sampled n-step transition is the return distribution of the target critic whose expected value is
  the smaller of the two (clipped double-Q, as FastSAC and FastTD3 do), at an action the current actor samples at
  the bootstrap observation, shifted and shrunk onto ``G + discount * (z - alpha * log pi)`` and projected back onto
  the atoms (:func:`categorical_projection`); each critic minimizes its cross-entropy to it. ``discount`` is
  ``gamma^k``, zero after a termination; after a time-out the bootstrap observation is the episode's last one before
  the automatic reset (the env core's ``final_obs``), so time-outs bootstrap and terminations do not.
- **actor** (every ``actor_update_period`` critic updates): a tanh-squashed Gaussian
  (:class:`horde.policies.squashed.SquashedGaussianActor`) minimizing ``alpha * log pi(a|s) - min_i Q_i(s, a)``
  with reparameterized actions; the temperature ``alpha`` follows ``target_entropy`` (automatic entropy tuning).
- **targets**: Polyak averaging of the critics after every update.

Observations are normalized with running statistics learnt from the collected steps (the actor's normalizer, read
by the critics too, exported with the actor); rewards are divided by the spread of the discounted return
(:class:`horde.train.replay.ReturnScale`), so the returns fit the fixed support. The task's left-right mirror can
double every batch (``algo.symmetry.augment``).

Checkpoints keep PPO's keys (``actor_state_dict`` is the squashed actor; ``horde play``/``export`` rebuild it from
``config.algo.policy`` and run ``tanh(mean)``), plus the critics, targets, optimizers, temperature, return scale,
random generator and envs. The replay ring goes beside them in ``replay.pt`` (one file, the latest checkpoint's), so
``resume=`` continues exactly; a resume from an older checkpoint, or without the file, refills an empty ring (with
a warning). The critics read the actor's observation group (a task's privileged critic group is not used: the env
reports no pre-reset copy of it).
"""

from __future__ import annotations

import copy
import math
import warnings
from collections.abc import Callable
from pathlib import Path

import torch
from torch import nn

from horde.policies.squashed import SquashedGaussianActor, hidden_layers
from horde.train.replay import ReplayRing, ReturnScale
from horde.train.sac_config import SACConfig, SACSymmetryConfig  # noqa: F401  (re-exported, torch-free)
from horde.train.timing import PhaseTimer

REPLAY_FILE = "replay.pt"
"""The replay ring of a run's latest checkpoint, in its run directory."""


# --- the maths, as free functions -------------------------------------------------------------------------------
def categorical_projection(atoms: torch.Tensor, probs: torch.Tensor, v_min: float, v_max: float) -> torch.Tensor:
    """Project a distribution with mass ``probs`` [B, K] on positions ``atoms`` [B, K] onto the fixed support of K
    atoms evenly spaced over ``[v_min, v_max]``: [B, K], each row's mass kept (positions are clipped into the
    support; a position between two atoms splits its mass between them in proportion to its distance)."""
    k = probs.shape[1]
    delta = (v_max - v_min) / (k - 1)
    b = (atoms.clamp(v_min, v_max) - v_min) / delta  # fractional index in [0, K - 1]
    lower = b.floor().clamp(0, k - 1)
    upper_w = b - lower  # 0 at an atom (also at the top, where lower = K - 1)
    lower = lower.long()
    upper = (lower + 1).clamp(max=k - 1)
    out = torch.zeros_like(probs)
    out.scatter_add_(1, lower, probs * (1.0 - upper_w))
    out.scatter_add_(1, upper, probs * upper_w)
    return out


def pick_lower(probs: torch.Tensor, support: torch.Tensor) -> torch.Tensor:
    """Clipped double-Q over distributions: from ``probs`` [2, B, K] of two critics, each sample's distribution with
    the smaller expected value, [B, K]."""
    q = (probs * support).sum(-1)
    return torch.where((q[0] <= q[1])[:, None], probs[0], probs[1])


def mirror_batch(batch: dict[str, torch.Tensor], obs_mirror, action_mirror) -> dict[str, torch.Tensor]:
    """Symmetry augmentation: each sampled transition and its mirror image (``obs``, ``next_obs`` and ``actions``
    through the mirrors' ``apply``; returns and discounts as they are): every ``[B, ...]`` field becomes ``[2B, ...]``,
    the original samples first."""
    mirrored = {"obs": obs_mirror.apply(batch["obs"]), "next_obs": obs_mirror.apply(batch["next_obs"]),
                "actions": action_mirror.apply(batch["actions"])}
    return {k: torch.cat([v, mirrored.get(k, v)]) for k, v in batch.items()}


@torch.no_grad()
def polyak(target: nn.Module, source: nn.Module, tau: float) -> None:
    """``target <- (1 - tau) * target + tau * source`` over the parameters."""
    torch._foreach_lerp_(list(target.parameters()), list(source.parameters()), tau)


class TwinCritic(nn.Module):
    """Two Q networks ``(normalized obs [B, obs_dim], action [B, A]) -> logits [B, num_atoms]``, LayerNorm MLPs."""

    def __init__(self, obs_dim: int, num_actions: int, hidden: list[int], activation: str, layer_norm: bool,
                 num_atoms: int) -> None:
        super().__init__()
        self.q = nn.ModuleList(
            nn.Sequential(*hidden_layers(obs_dim + num_actions, hidden, activation, layer_norm),
                          nn.Linear(hidden[-1], num_atoms))
            for _ in range(2))

    def forward(self, obs: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        """Logits of both critics, [2, B, num_atoms]."""
        x = torch.cat([obs, actions], dim=-1)
        return torch.stack([q(x) for q in self.q])


@torch.no_grad()
def critic_target(target_critic: TwinCritic, actor: SquashedGaussianActor, support: torch.Tensor,
                  returns: torch.Tensor, discount: torch.Tensor, next_obs: torch.Tensor, noise: torch.Tensor,
                  alpha: torch.Tensor, v_min: float, v_max: float) -> torch.Tensor:
    """The target distribution [B, K] of n-step transitions: ``returns`` [B] plus ``discount`` [B] times the soft
    return at the bootstrap observation ``next_obs`` [B, obs_dim] (normalized), from the target critic with the
    lower expected value at an action the actor samples there with ``noise`` [B, A], projected onto ``support``
    [K]. With ``discount`` 0 (a termination) it is the point mass at ``returns``, projected."""
    next_actions, next_logp, _ = actor.sample(next_obs, noise)
    probs = torch.softmax(target_critic(next_obs, next_actions), dim=-1)
    atoms = returns[:, None] + discount[:, None] * (support[None, :] - alpha * next_logp[:, None])
    return categorical_projection(atoms, pick_lower(probs, support), v_min, v_max)


def critic_loss(critic: TwinCritic, target_critic: TwinCritic, actor: SquashedGaussianActor, support: torch.Tensor,
                obs: torch.Tensor, actions: torch.Tensor, returns: torch.Tensor, discount: torch.Tensor,
                next_obs: torch.Tensor, noise: torch.Tensor, alpha: torch.Tensor, v_min: float,
                v_max: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Cross-entropy of both critics to :func:`critic_target`, summed over the critics and averaged over the batch,
    and the critics' mean expected value (for the log). Observations are normalized already; returns and the support
    are in the critic's units; ``noise`` [B, A] samples the next actions."""
    target = critic_target(target_critic, actor, support, returns, discount, next_obs, noise, alpha, v_min, v_max)
    log_probs = torch.log_softmax(critic(obs, actions), dim=-1)  # [2, B, K]
    loss = -(target * log_probs).sum(-1).mean(-1).sum()
    q = (log_probs.detach().exp() * support).sum(-1).mean()
    return loss, q


def actor_losses(critic: TwinCritic, actor: SquashedGaussianActor, support: torch.Tensor, obs: torch.Tensor,
                 noise: torch.Tensor, log_alpha: torch.Tensor,
                 target_entropy: float) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(actor loss, temperature loss, entropy estimate)``: the actor's ``mean(alpha log pi - min_i Q_i)`` at
    reparameterized actions (back-propagate it into the actor's parameters only), and ``-mean(log_alpha (log pi +
    target_entropy))`` with log pi detached."""
    actions, logp, _ = actor.sample(obs, noise)
    q = (torch.softmax(critic(obs, actions), dim=-1) * support).sum(-1).min(0).values
    alpha = log_alpha.detach().exp()
    loss = (alpha * logp - q).mean()
    alpha_loss = -(log_alpha * (logp.detach() + target_entropy)).mean()
    return loss, alpha_loss, -logp.detach().mean()


def _adamw(params, lr: float, a: SACConfig) -> torch.optim.Optimizer:
    return torch.optim.AdamW(params, lr=lr, betas=tuple(a.adam_betas), weight_decay=a.weight_decay)


class SACTrainer:
    """One SAC run: env core + replay ring + actor, twin critics and temperature. ``learn()`` runs it through
    :func:`horde.train.runner.run`; ``checkpoint()`` saves it."""

    algo_name = "sac"
    label = "sac"

    def __init__(self, cfg, task: str, raw_cfg, *, run_dir: str | Path | None = None, quiet: bool = False) -> None:
        from horde.envs import make
        from horde.train.config import ConfigError
        from horde.train.session import RunSession

        a: SACConfig = cfg.algo
        if getattr(cfg, "distributed", False):
            raise ConfigError("algo=sac runs in one process: distributed=true is for PPO")
        if not a.v_min < a.v_max:
            raise ConfigError(f"algo.v_min={a.v_min} must be below algo.v_max={a.v_max}")
        if not a.policy.log_std_min < a.policy.log_std_max:
            raise ConfigError(f"algo.policy.log_std_min={a.policy.log_std_min} must be below algo.policy.log_std_max="
                              f"{a.policy.log_std_max}")
        if getattr(cfg.task, "action_squash", "clip") == "tanh":
            raise ConfigError("algo=sac squashes its actions with tanh itself: set task.action_squash=clip")
        self.cfg, self.task = cfg, task
        self.session = session = RunSession.begin(cfg, task, self.algo_name, quiet=quiet, distributed=False)
        self.dist, self.quiet = session.dist, session.quiet
        self.core = make(task, num_envs=session.num_envs, device=session.device, seed=session.seed, config=cfg.task)
        if getattr(self.core, "obs_images", ()):
            raise ConfigError(f"algo=sac reads flat observations; task '{task}' has image observations")
        self.device = self.core.device
        self.num_envs = n = self.core.num_envs
        self.obs_dim, self.num_actions = self.core.obs_dim, self.core.num_actions
        self.gen = torch.Generator(device=self.device).manual_seed(session.seed)

        p = a.policy
        self.actor = SquashedGaussianActor(p, self.obs_dim, self.num_actions).to(self.device)
        self.critic = TwinCritic(self.obs_dim, self.num_actions, list(p.critic_hidden_dims), p.activation,
                                 p.layer_norm, a.num_atoms).to(self.device)
        self.target_critic = copy.deepcopy(self.critic).requires_grad_(False)
        self.log_alpha = torch.tensor(math.log(a.init_alpha), device=self.device, requires_grad=True)
        self.actor_opt = _adamw(self.actor.parameters(), a.actor_learning_rate, a)
        self.critic_opt = _adamw(self.critic.parameters(), a.critic_learning_rate, a)
        self.alpha_opt = torch.optim.Adam([self.log_alpha], lr=a.alpha_learning_rate, betas=tuple(a.adam_betas))
        self.target_entropy = float(-self.num_actions if a.target_entropy is None else a.target_entropy)
        self.support = torch.linspace(a.v_min, a.v_max, a.num_atoms, device=self.device)
        self.ring = ReplayRing(n, a.buffer_length, self.obs_dim, self.num_actions, self.device)
        self.return_scale = ReturnScale(n, a.gamma, a.return_max, self.device)
        self.mirror = self._mirror(task) if a.symmetry.augment else None
        self._critic_loss, self._actor_losses = critic_loss, actor_losses
        if a.compile:
            self._compile()

        self._obs = self.core.obs.clone()  # what the envs observe now (acted on by the next step)
        self._next_obs = torch.zeros_like(self._obs)
        self._std = torch.zeros((), device=self.device)
        self.env_steps = 0
        """Vector steps taken since the run began (learning starts after ``learning_starts``)."""
        self.updates = 0
        """Critic updates since the run began (the actor's period counts them)."""
        self.iteration = 0
        self.writer = None
        self.timer = PhaseTimer(self.device)
        self.run_dir = session.open(raw_cfg, run_dir)
        self.config_dict, resume_ckpt = session.config_dict, session.resume_ckpt
        if resume_ckpt is not None:
            self._restore(resume_ckpt)
        elif a.random_episode_start:
            g = torch.Generator().manual_seed(session.seed)
            self.core.episode_length.copy_(torch.randint(0, self.core.max_episode_length, (n,), generator=g))
        if not self.quiet:
            n_params = sum(q.numel() for q in self.actor.parameters())
            start = f", resuming at iteration {self.iteration}" if resume_ckpt is not None else ""
            print(f"[{task}] {n} envs on {self.device}, SAC actor {list(p.actor_hidden_dims)} ({n_params} parameters), "
                  f"critics 2 x {list(p.critic_hidden_dims)} x {a.num_atoms} atoms, replay {n} x {a.buffer_length}, "
                  f"{a.num_updates} updates of {a.batch_size} per step, {cfg.max_iterations} iterations{start} -> "
                  f"{self.run_dir}", flush=True)

    def _mirror(self, task: str):
        """The task's observation and action mirrors, or a one-line error for a task without one."""
        from horde.envs.symmetry import task_mirror
        from horde.train.config import ConfigError

        try:
            m = task_mirror(self.core, task)
        except ValueError as exc:
            raise ConfigError(f"algo.symmetry: {exc}") from None
        return m.groups["policy"], m.actions

    def _compile(self) -> None:
        from horde.train.config import ConfigError
        from horde.train.ppo import cpu_compiler

        if self.device.type == "cpu" and cpu_compiler() is None:
            raise ConfigError("algo.compile=true on the CPU needs a C++ compiler (g++ or clang++, or CXX) on PATH")
        self._critic_loss = torch.compile(critic_loss, dynamic=False)
        self._actor_losses = torch.compile(actor_losses, dynamic=False)

    # --- one iteration -----------------------------------------------------------------------------------------
    @torch.no_grad()
    def _step(self) -> None:
        """Act on every env, step them, and store the transition in the ring; statistics learn from it."""
        timer = self.timer
        if self.actor.obs_normalization:
            self.actor.obs_normalizer.update(self._obs)
        noise = torch.randn(self.num_envs, self.num_actions, generator=self.gen, device=self.device)
        actions, _, log_std = self.actor.sample(self.actor.obs_normalizer(self._obs), noise)
        self._std = log_std.exp().mean()
        timer.mark("inference")
        r = self.core.step(actions)
        timer.mark("sim")
        # the step's own next observation: the pre-reset one where the episode ended (a time-out bootstraps on it)
        torch.where(r.dones[:, None], self.core.final_obs, r.obs, out=self._next_obs)
        self.ring.add(self._obs, actions, r.reward, r.terminated, r.truncated, self._next_obs)
        if self.cfg.algo.reward_normalization:
            self.return_scale.update(r.reward, r.dones)
        self._obs.copy_(r.obs)
        self.env_steps += 1
        timer.mark("other")

    def _update(self) -> dict[str, torch.Tensor]:
        """One critic update (and every ``actor_update_period`` one of the actor and the temperature), then the
        targets; returns the losses as device scalars."""
        a = self.cfg.algo
        batch = self.ring.sample(a.batch_size, a.n_step, a.gamma, self.gen)
        if a.reward_normalization:
            batch["returns"] = batch["returns"] * self.return_scale.scale()
        if self.mirror is not None:
            batch = mirror_batch(batch, *self.mirror)
        with torch.no_grad():
            obs = self.actor.obs_normalizer(batch["obs"])
            next_obs = self.actor.obs_normalizer(batch["next_obs"])
        b = obs.shape[0]
        alpha = self.log_alpha.detach().exp()
        noise = torch.randn(b, self.num_actions, generator=self.gen, device=self.device)
        loss, q = self._critic_loss(self.critic, self.target_critic, self.actor, self.support, obs, batch["actions"],
                                    batch["returns"], batch["discount"], next_obs, noise, alpha, a.v_min, a.v_max)
        self.critic_opt.zero_grad(set_to_none=True)
        loss.backward()
        if a.max_grad_norm > 0:
            torch.nn.utils.clip_grad_norm_(self.critic.parameters(), a.max_grad_norm)
        self.critic_opt.step()
        out = {"critic": loss.detach(), "q_mean": q}
        if self.updates % a.actor_update_period == 0:
            noise = torch.randn(b, self.num_actions, generator=self.gen, device=self.device)
            actor_loss, alpha_loss, entropy = self._actor_losses(self.critic, self.actor, self.support, obs, noise,
                                                                 self.log_alpha, self.target_entropy)
            actor_params = list(self.actor.parameters())
            self.actor_opt.zero_grad(set_to_none=True)
            self.alpha_opt.zero_grad(set_to_none=True)
            # one backward (a compiled graph allows one): the actor's loss holds alpha detached and the temperature's
            # log pi detached, so each parameter gets its own loss's gradient; the critics' stay untouched
            (actor_loss + alpha_loss).backward(inputs=[*actor_params, self.log_alpha])
            if a.max_grad_norm > 0:
                torch.nn.utils.clip_grad_norm_(actor_params, a.max_grad_norm)
            self.actor_opt.step()
            self.alpha_opt.step()
            out |= {"actor": actor_loss.detach(), "alpha_loss": alpha_loss.detach(), "entropy": entropy}
        polyak(self.target_critic, self.critic, a.tau)
        self.updates += 1
        return out

    def iterate(self) -> dict[str, float]:
        """``num_steps_per_env`` vector steps, each followed by ``num_updates`` updates once ``learning_starts`` steps
        are in the ring; returns the mean losses of the iteration's updates."""
        a = self.cfg.algo
        sums: dict[str, torch.Tensor] = {}
        counts: dict[str, int] = {}
        # on a CPU the physics' pool is idle during the updates: they may take every core (``update_threads``),
        # while acting and stepping keep ``torch_threads`` (more would spin against the physics' threads)
        threads = self.cfg.update_threads or self.cfg.torch_threads
        for _ in range(a.num_steps_per_env):
            self._step()
            if self.env_steps < a.learning_starts:
                continue
            if threads != self.cfg.torch_threads:
                torch.set_num_threads(threads)
            for _ in range(a.num_updates):
                for k, v in self._update().items():
                    sums[k] = sums[k] + v if k in sums else v
                    counts[k] = counts.get(k, 0) + 1
            if threads != self.cfg.torch_threads:
                torch.set_num_threads(self.cfg.torch_threads)
            self.timer.mark("learn")
        self.iteration += 1
        out = {k: float(v) / counts[k] for k, v in sums.items()}  # one sync per value and iteration
        out["alpha"] = float(self.log_alpha.detach().exp())
        if a.reward_normalization:
            out["return_scale"] = float(self.return_scale.scale())
        return out

    # --- statistics and checkpoints ----------------------------------------------------------------------------
    def pop_episode_stats(self) -> dict[str, float]:
        return self.core.pop_episode_stats()

    @property
    def learning_rate(self) -> float:
        """Learning rate of the actor."""
        return float(self.actor_opt.param_groups[0]["lr"])

    @property
    def steps_per_iteration(self) -> int:
        return self.cfg.algo.num_steps_per_env * self.num_envs

    def noise_std(self) -> float:
        """Mean standard deviation (before the tanh) of the last step's action noise."""
        return float(self._std)

    def policy(self) -> torch.nn.Module:
        return self.actor

    def start(self) -> None:
        """Nothing to do before the first iteration (one process; the envs were built and observed already)."""

    def checkpoint(self) -> Path:
        """Write ``replay.pt`` (the ring, tagged with the iteration) and then ``model_<iteration>.pt``, both
        atomically; the checkpoint has PPO's keys for the actor (play and export read them)."""
        import horde
        from horde.train.checkpoint import save_checkpoint

        save_checkpoint(self.run_dir / REPLAY_FILE, {"iteration": self.iteration, "ring": self.ring.state_dict()})
        payload = {
            "iteration": self.iteration,
            "task": self.task,
            "horde_version": horde.__version__,
            "config": self.config_dict,
            "obs_dim": self.obs_dim,
            "num_actions": self.num_actions,
            "learning_rate": self.learning_rate,
            "torch_rng": torch.get_rng_state(),
            "env_state": self.core.get_env_state(),
            "actor_state_dict": self.actor.state_dict(),
            "critic_state_dict": self.critic.state_dict(),
            "target_critic_state_dict": self.target_critic.state_dict(),
            "optimizer_state_dict": self.actor_opt.state_dict(),
            "critic_optimizer_state_dict": self.critic_opt.state_dict(),
            "alpha_optimizer_state_dict": self.alpha_opt.state_dict(),
            "log_alpha": self.log_alpha.detach().cpu(),
            "return_scale_state_dict": {k: v.cpu() for k, v in self.return_scale.state_dict().items()},
            "generator_state": self.gen.get_state(),
            "counters": {"env_steps": self.env_steps, "updates": self.updates},
            "replay": {"file": REPLAY_FILE, "iteration": self.iteration},
        }
        return save_checkpoint(self.run_dir / f"model_{self.iteration}.pt", payload)

    def _restore(self, ckpt: dict) -> None:
        from horde.train.config import ConfigError

        if ckpt["task"] != self.task or ckpt["config"].get("algo_name") != "sac":
            raise ConfigError(f"checkpoint is a {ckpt['config'].get('algo_name', 'ppo')} run of '{ckpt['task']}', "
                              f"not a sac run of '{self.task}'")
        self.actor.load_state_dict(ckpt["actor_state_dict"])
        self.critic.load_state_dict(ckpt["critic_state_dict"])
        self.target_critic.load_state_dict(ckpt["target_critic_state_dict"])
        self.actor_opt.load_state_dict(ckpt["optimizer_state_dict"])
        self.critic_opt.load_state_dict(ckpt["critic_optimizer_state_dict"])
        self.alpha_opt.load_state_dict(ckpt["alpha_optimizer_state_dict"])
        with torch.no_grad():
            self.log_alpha.copy_(ckpt["log_alpha"])
        self.return_scale.load_state_dict(ckpt["return_scale_state_dict"])
        self.gen.set_state(ckpt["generator_state"])
        torch.set_rng_state(ckpt["torch_rng"])
        self.iteration = int(ckpt["iteration"])
        self.env_steps, self.updates = int(ckpt["counters"]["env_steps"]), int(ckpt["counters"]["updates"])
        try:
            self.core.set_env_state(ckpt["env_state"])
        except ValueError as exc:
            warnings.warn(f"{exc}: the envs start afresh (an exact resume needs the same backend)", stacklevel=3)
        self._obs.copy_(self.core.obs)
        path = self.run_dir / ckpt["replay"]["file"]
        why = None
        try:
            saved = torch.load(path, map_location="cpu", weights_only=True) if path.is_file() else None
        except Exception as exc:  # noqa: BLE001 - torch raises many types for truncated or foreign files
            saved, why = None, f"{path}: unreadable ({type(exc).__name__})"
        if saved is None:
            why = why or f"{path} is missing"
        elif not isinstance(saved, dict) or saved.get("iteration") != self.iteration:
            held = saved.get("iteration") if isinstance(saved, dict) else None
            why = f"{path} holds iteration {held}'s ring, not {self.iteration}'s"
        else:
            self.ring.load_state_dict(saved["ring"])
            return
        warnings.warn(f"{why}: the replay ring starts empty (the run continues, not exactly as it would have)",
                      stacklevel=3)
        self.env_steps = 0  # learning resumes after learning_starts new steps

    # --- the loop (horde.train.runner drives it) -------------------------------------------------------------
    def learn(self, on_iteration: Callable[[SACTrainer], bool] | None = None) -> dict:
        """Train for ``cfg.max_iterations`` iterations (:func:`horde.train.runner.run`); returns the summary."""
        from horde.train.runner import run

        return run(self, on_iteration)
