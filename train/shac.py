"""SHAC (Xu et al., ICLR 2022): short-horizon actor-critic, with the actor's gradient taken through the simulator.

One iteration rolls ``horizon`` control steps of ``num_envs`` worlds through :mod:`horde.sim.diff`, sampling
actions from the Gaussian actor by reparameterization (``mean + std * noise``), and minimizes

    actor loss = -1 / (H N) * sum over envs and segments of [ sum_t gamma^t r_t + gamma^len V'(s_end) ]

by backpropagating through the physics. A segment ends at the horizon or at an episode end; ``V'`` is the target
critic, zero after a failure. The critic then regresses TD(lambda) targets over the same rollout (detached; with
``critic_replay`` also over the last few rollouts, their targets recomputed), and the target critic follows it
slowly (Polyak averaging). Gradients are clipped by norm; observations are normalized with running statistics
inside the actor and the critic, as PPO's are. Actions are tanh-squashed as in the paper, or clipped with a
straight-through gradient (``policy.action_squash=clip``) plus a penalty on a mean outside [-1, 1].

The actor is the same rsl-rl ``MLPModel`` with a Gaussian head that PPO trains (:func:`horde.policies.build_actor`)
and is saved under the same checkpoint keys, so ``horde play`` and ``horde export`` work on SHAC runs unchanged.
Episodes run on a batch of states held here in torch (the RL env core has no tape): resets are drawn with a torch
generator from the task's reset distribution, and no gradient crosses an episode boundary.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path

import torch
from rsl_rl.models import MLPModel

from horde.policies.actor_critic import OBS_GROUP, build_actor, example_obs, rsl_model_cfgs
from horde.train.shac_config import SHACConfig  # noqa: F401  (re-exported: the config lives beside, torch-free)
from horde.train.timing import PhaseTimer

# what imports horde.train.config (checkpoint, ppo, session) is imported inside the trainer's methods.


# --- the maths, as free functions over [T, N] tensors ------------------------------------------------------------
def td_lambda_targets(rewards: torch.Tensor, next_values: torch.Tensor, ends: torch.Tensor, gamma: float,
                      lam: float) -> torch.Tensor:
    """TD(lambda) returns G [T, N] of one rollout.

    ``rewards`` [T, N] are r_t; ``next_values`` [T, N] are V'(s_{t+1}) of the state reached by step t (before any
    reset; zero where the episode failed); ``ends`` bool [T, N] marks steps after which the episode ended. With
    G_T = V'(s_T) at the horizon, G_t = r_t + gamma * ((1 - lam) V'(s_{t+1}) + lam G_{t+1}), and at an episode end
    G_t = r_t + gamma V'(s_{t+1}) (nothing flows back across it).
    """
    horizon = rewards.shape[0]
    out = torch.empty_like(rewards)
    nxt = next_values[-1]
    for t in reversed(range(horizon)):
        if t == horizon - 1:
            blend = next_values[t]
        else:
            blend = torch.where(ends[t], next_values[t], (1.0 - lam) * next_values[t] + lam * nxt)
        nxt = rewards[t] + gamma * blend
        out[t] = nxt
    return out


def straight_through_clip(actions: torch.Tensor) -> torch.Tensor:
    """Actions [N, A] clipped to [-1, 1] in value, with the identity as gradient (a clipped action passes one)."""
    return actions + (actions.clamp(-1.0, 1.0) - actions).detach()


def mean_bound_penalty(mean: torch.Tensor) -> torch.Tensor:
    """relu(|mean| - 1)^2 summed over actions: [N, A] -> [N]; zero inside the action box."""
    return (mean.abs() - 1.0).clamp_min(0.0).square().sum(-1)


@torch.no_grad()
def polyak_update(target: torch.nn.Module, source: torch.nn.Module, tau: float) -> None:
    """``target <- tau * target + (1 - tau) * source`` for parameters; buffers (normalizer statistics) are copied."""
    for pt, ps in zip(target.parameters(), source.parameters(), strict=True):
        pt.mul_(tau).add_(ps, alpha=1.0 - tau)
    for bt, bs in zip(target.buffers(), source.buffers(), strict=True):
        bt.copy_(bs)


def linear_lr(start: float, end: float, iteration: int, max_iterations: int) -> float:
    """Learning rate decayed linearly from ``start`` at iteration 0 to ``end`` at ``max_iterations``."""
    return start + (end - start) * min(iteration / max(max_iterations, 1), 1.0)


def _value(critic: MLPModel, obs: torch.Tensor) -> torch.Tensor:
    """V(obs) [N] of raw observations [N, obs_dim] (normalized inside the critic)."""
    return critic.mlp(critic.obs_normalizer(obs)).squeeze(-1)


class SHACTrainer:
    """One SHAC run: differentiable task model + actor, critic and target critic + logging; same surface as PPO's.

    ``learn()`` runs it; ``checkpoint()`` saves it; ``iterate()`` runs one iteration and returns its losses.
    """

    def __init__(self, cfg, task: str, raw_cfg, *, run_dir: str | Path | None = None, quiet: bool = False) -> None:
        from horde.envs import make_diff_task
        from horde.sim import NotDifferentiableError
        from horde.train.config import ConfigError
        from horde.train.session import RunSession

        a = cfg.algo
        if getattr(cfg, "distributed", False):
            raise ConfigError("algo=shac runs in one process: distributed=true is for PPO")
        if getattr(a.policy, "rnn_type", "none") != "none":
            raise ConfigError("algo=shac trains a feed-forward actor: set algo.policy.rnn_type=none")
        if len(a.adam_betas) != 2:  # choices and bounds were checked when the config was composed
            raise ConfigError(f"algo.adam_betas={a.adam_betas}: must be two numbers")
        self.cfg, self.task = cfg, task
        self.session = session = RunSession.begin(cfg, task, "shac", quiet=quiet, distributed=False)  # one process
        self.dist, self.quiet = session.dist, session.quiet
        try:
            self.model = make_diff_task(task, config=cfg.task, device=cfg.device)
        except NotDifferentiableError as exc:
            raise ConfigError(f"algo=shac needs a differentiable task: {exc}") from None
        wrong = self.model.mismatched_settings(cfg.task)
        if wrong:  # play, export and evaluation build the env from this config: it must run the trained dynamics
            fix = " ".join(f"task.{k}={want}" for k, (want, _) in wrong.items())
            got = ", ".join(f"task.{k}={have}" for k, (_, have) in wrong.items())
            raise ConfigError(f"algo=shac on '{task}' differentiates the dynamics of {fix}, but the config has {got}: "
                              f"add {fix} (configs/tuned/{task}_shac.yaml sets it)")
        self.device = self.model.rollout.device
        self.num_envs = n = cfg.num_envs
        self.gen = torch.Generator(device=self.device).manual_seed(cfg.seed)

        # Networks: the actor is exactly what PPO trains and play/export rebuild; the critic is PPO's critic.
        probe = self.model.obs(self.model.sample_state(2, torch.Generator(device=self.device).manual_seed(0)))
        self.obs_dim, self.num_actions = probe.shape[1], self.model.rollout.action_dim
        self.actor = build_actor(a.policy, self.obs_dim, self.num_actions).to(self.device)
        self._tanh = a.policy.action_squash == "tanh"
        self._pre_squash = list(self.actor.mlp)[:-1] if self._tanh else []  # the actor's layers before its Tanh
        _, critic_cfg = rsl_model_cfgs(a.policy)
        critic_cfg = {k: v for k, v in critic_cfg.items() if k != "class_name"}
        groups = {"actor": [OBS_GROUP], "critic": [OBS_GROUP]}
        self.critic = MLPModel(example_obs(self.obs_dim), groups, "critic", 1, **critic_cfg).to(self.device)
        self.target_critic = copy.deepcopy(self.critic).requires_grad_(False)
        betas = tuple(a.adam_betas)
        self.actor_opt = torch.optim.Adam(self.actor.parameters(), lr=a.actor_learning_rate, betas=betas)
        self.critic_opt = torch.optim.Adam(self.critic.parameters(), lr=a.critic_learning_rate, betas=betas)
        self.actor.train()
        self.critic.train()

        # Episode state of the batch, and preallocated rollout buffers [T, N, ...].
        from horde.envs.episode import EpisodeBook  # not at import: horde.train.config imports this module

        t_steps = a.horizon
        self.state = self.model.sample_state(n, self.gen)
        self.episodes = EpisodeBook(list(self.model.reward_scales.values()), n, self.model.episode_length,
                                    self.device)
        if a.random_episode_start:
            self.episodes.length.copy_(torch.randint(0, self.model.episode_length, (n,), generator=self.gen,
                                                     device=self.device, dtype=torch.int32))
        self._obs_buf = torch.zeros(t_steps, n, self.obs_dim, device=self.device)
        self._rew_buf = torch.zeros(t_steps, n, device=self.device)
        self._next_value_buf = torch.zeros(t_steps, n, device=self.device)
        self._end_buf = torch.zeros(t_steps, n, dtype=torch.bool, device=self.device)
        self._next_obs_buf = torch.zeros(t_steps, n, self.obs_dim, device=self.device)
        self._fail_buf = torch.zeros(t_steps, n, dtype=torch.bool, device=self.device)
        self._replay: list[tuple[torch.Tensor, ...]] = []
        self._scales = torch.tensor(list(self.model.reward_scales.values()), device=self.device)

        self.iteration = 0
        self.writer = None
        self.timer = PhaseTimer(self.device)
        self.run_dir = session.open(raw_cfg, run_dir)
        self.config_dict, resume_ckpt = session.config_dict, session.resume_ckpt
        if resume_ckpt is not None:
            self._restore(resume_ckpt)
        if not quiet:
            n_params = sum(p.numel() for p in self.actor.parameters())
            start = f", resuming at iteration {self.iteration}" if resume_ckpt is not None else ""
            print(f"[{task}] {n} envs on {self.device}, SHAC horizon {a.horizon}, actor {a.policy.actor_hidden_dims} "
                  f"({n_params} parameters), {cfg.max_iterations} iterations{start} -> {self.run_dir}", flush=True)

    # --- one iteration -----------------------------------------------------------------------------------------
    def _rollout(self) -> torch.Tensor:
        """Roll ``horizon`` steps through the differentiable simulator; returns the actor loss (with its graph)."""
        a, m, timer = self.cfg.algo, self.model, self.timer
        n, gamma = self.num_envs, a.gamma
        std = self.actor.distribution.std_param.clamp(*self.actor.distribution.std_range)
        state = self.state
        rew_acc = torch.zeros(n, device=self.device)
        disc = torch.ones(n, device=self.device)
        loss = torch.zeros((), device=self.device)
        penalty = torch.zeros((), device=self.device)
        for t in range(a.horizon):
            obs = m.obs(state)
            self._obs_buf[t] = obs.detach()
            noise = torch.randn(n, self.num_actions, generator=self.gen, device=self.device)
            latent = self.actor.obs_normalizer(obs)
            if self._tanh:  # sample before the squash: a = tanh(mu + std * eps), deterministic a = tanh(mu)
                pre = latent
                for layer in self._pre_squash:
                    pre = layer(pre)
                actions = torch.tanh(pre + std * noise)
            else:  # a = clip(mu + std * eps) with a straight-through gradient; deterministic a = clip(mu)
                mean = self.actor.mlp(latent)
                actions = straight_through_clip(mean + std * noise)
                penalty = penalty + mean_bound_penalty(mean).sum()
            timer.mark("inference")
            nxt = m.rollout.step(state, actions)
            timer.mark("sim")
            terms = torch.stack(list(m.reward_terms(nxt, actions).values()), dim=-1)  # [N, K]
            reward = (terms * self._scales).sum(-1)
            failed = m.failed(nxt.detach())
            done, _ = self.episodes.record(terms, failed)  # a time-out or a failure, kept as a task env keeps them
            next_obs = m.obs(nxt)
            next_value = torch.where(failed, 0.0, _value(self.target_critic, next_obs))
            self._next_obs_buf[t] = next_obs.detach()
            self._fail_buf[t] = failed
            rew_acc = rew_acc + disc * (a.reward_scale * reward)
            disc = disc * gamma
            # A segment closes at an episode end, and every env's at the horizon: add its bootstrapped return.
            end = done if t < a.horizon - 1 else torch.ones_like(done)
            loss = loss - torch.where(end, rew_acc + disc * next_value, 0.0).sum()
            rew_acc = torch.where(done, 0.0, rew_acc)
            disc = torch.where(done, 1.0, disc)
            self._rew_buf[t] = a.reward_scale * reward.detach()
            self._next_value_buf[t] = next_value.detach()
            self._end_buf[t] = done
            state = torch.where(done[:, None], m.sample_state(n, self.gen), nxt)
            timer.mark("other")
        self.state = state.detach()
        return loss / (a.horizon * n) + a.mean_bound_coef * penalty / n

    @torch.no_grad()
    def _critic_data(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Observations [M, obs_dim] and TD(lambda) targets [M] of the newest rollout and the replayed ones."""
        a = self.cfg.algo
        obs = [self._obs_buf.view(-1, self.obs_dim)]
        targets = [td_lambda_targets(self._rew_buf, self._next_value_buf, self._end_buf, a.gamma, a.lam).view(-1)]
        if a.critic_replay < 1:
            return obs[0], targets[0]
        for old_obs, next_obs, rew, failed, ends in self._replay:
            next_values = torch.where(failed, 0.0, _value(self.target_critic, next_obs.view(-1, self.obs_dim))
                                      .view(failed.shape))
            obs.append(old_obs.view(-1, self.obs_dim))
            targets.append(td_lambda_targets(rew, next_values, ends, a.gamma, a.lam).view(-1))
        self._replay.append((self._obs_buf.clone(), self._next_obs_buf.clone(), self._rew_buf.clone(),
                             self._fail_buf.clone(), self._end_buf.clone()))
        del self._replay[:-a.critic_replay]
        return torch.cat(obs), torch.cat(targets)

    def _train_critic(self) -> torch.Tensor:
        """Regress TD(lambda) targets of the last rollout; returns the mean loss of the last pass (a tensor)."""
        a = self.cfg.algo
        obs, targets = self._critic_data()
        total = torch.zeros((), device=self.device)
        for _ in range(a.critic_iterations):
            total = torch.zeros((), device=self.device)
            perm = torch.randperm(obs.shape[0], generator=self.gen, device=self.device)
            for idx in perm.chunk(a.critic_mini_batches):
                loss = (_value(self.critic, obs[idx]) - targets[idx]).square().mean()
                self.critic_opt.zero_grad(set_to_none=True)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(self.critic.parameters(), a.max_grad_norm)
                self.critic_opt.step()
                total = total + loss.detach()
        return total / a.critic_mini_batches

    def iterate(self) -> dict[str, float]:
        """One SHAC iteration: rollout and actor step, observation statistics, critic fit, target update."""
        a = self.cfg.algo
        if a.lr_schedule == "linear":
            lr_a = linear_lr(a.actor_learning_rate, a.min_learning_rate, self.iteration, self.cfg.max_iterations)
            lr_c = linear_lr(a.critic_learning_rate, a.min_learning_rate, self.iteration, self.cfg.max_iterations)
            for g in self.actor_opt.param_groups:
                g["lr"] = lr_a
            for g in self.critic_opt.param_groups:
                g["lr"] = lr_c
        actor_loss = self._rollout()
        self.actor_opt.zero_grad(set_to_none=True)
        actor_loss.backward()
        self.timer.mark("learn")
        grad_norm = torch.nn.utils.clip_grad_norm_(self.actor.parameters(), a.max_grad_norm)
        skipped = not bool(torch.isfinite(grad_norm))  # one sync per iteration: a blown-up rollout is not applied
        if not skipped:
            self.actor_opt.step()
        with torch.no_grad():  # normalizers learn from this rollout after the step that used them
            obs = self._obs_buf.view(-1, self.obs_dim)
            if self.actor.obs_normalization:
                self.actor.obs_normalizer.update(obs)
            if self.critic.obs_normalization:
                self.critic.obs_normalizer.update(obs)
        critic_loss = self._train_critic()
        polyak_update(self.target_critic, self.critic, a.target_critic_tau)
        self.timer.mark("learn")
        self.iteration += 1
        return {"actor": float(actor_loss.detach()), "critic": float(critic_loss), "grad_norm": float(grad_norm),
                "skipped_steps": float(skipped)}

    # --- statistics and checkpoints ----------------------------------------------------------------------------
    def pop_episode_stats(self) -> dict[str, float]:
        """Statistics of episodes finished since the last call (the env core's keys, one helper), then clear them."""
        return self.episodes.pop_stats(list(self.model.reward_scales))

    @property
    def learning_rate(self) -> float:
        """Current learning rate of the actor."""
        return float(self.actor_opt.param_groups[0]["lr"])

    def checkpoint(self) -> Path:
        """Write ``model_<iteration>.pt`` atomically, with PPO's keys for the actor (play and export read them)."""
        import horde
        from horde.train.checkpoint import save_checkpoint

        payload = {
            "iteration": self.iteration,
            "task": self.task,
            "horde_version": horde.__version__,
            "config": self.config_dict,
            "obs_dim": self.obs_dim,
            "num_actions": self.num_actions,
            "learning_rate": self.learning_rate,
            "torch_rng": torch.get_rng_state(),
            "actor_state_dict": self.actor.state_dict(),
            "critic_state_dict": self.critic.state_dict(),
            "target_critic_state_dict": self.target_critic.state_dict(),
            "optimizer_state_dict": self.actor_opt.state_dict(),
            "critic_optimizer_state_dict": self.critic_opt.state_dict(),
            "generator_state": self.gen.get_state(),
            "env_state": {"state": self.state.cpu(), "episode_length": self.episodes.length.cpu(),
                          "episode_return": self.episodes.returns.cpu(),
                          "episode_sums": self.episodes.sums.T.cpu()},  # [N, K], as before the shared book
            # the rollouts the critic refits (critic_replay): without them a resumed run's critic, and so its actor,
            # leaves the run it continues
            "critic_replay": [tuple(x.cpu() for x in entry) for entry in self._replay],
        }
        return save_checkpoint(self.run_dir / f"model_{self.iteration}.pt", payload)

    def _restore(self, ckpt: dict) -> None:
        from horde.train.config import ConfigError

        if ckpt["task"] != self.task or ckpt["config"].get("algo_name") != "shac":
            raise ConfigError(f"checkpoint is a {ckpt['config'].get('algo_name', 'ppo')} run of '{ckpt['task']}', "
                              f"not a shac run of '{self.task}'")
        self.actor.load_state_dict(ckpt["actor_state_dict"])
        self.critic.load_state_dict(ckpt["critic_state_dict"])
        self.target_critic.load_state_dict(ckpt["target_critic_state_dict"])
        self.actor_opt.load_state_dict(ckpt["optimizer_state_dict"])
        self.critic_opt.load_state_dict(ckpt["critic_optimizer_state_dict"])
        self.gen.set_state(ckpt["generator_state"])
        torch.set_rng_state(ckpt["torch_rng"])
        self.iteration = int(ckpt["iteration"])
        env = ckpt["env_state"]
        self.state = env["state"].to(self.device)
        self.episodes.length.copy_(env["episode_length"])
        self.episodes.returns.copy_(env["episode_return"])
        self.episodes.sums.copy_(env["episode_sums"].T)
        self._replay = [tuple(x.to(self.device) for x in entry) for entry in ckpt.get("critic_replay", [])]

    # --- the loop (horde.train.runner drives it) -------------------------------------------------------------
    label = "shac"

    @property
    def steps_per_iteration(self) -> int:
        return self.cfg.algo.horizon * self.num_envs

    def noise_std(self) -> float:
        return float(self.actor.distribution.std_param.detach().mean())

    def policy(self) -> torch.nn.Module:
        return self.actor

    def start(self) -> None:
        """Nothing to do before the first iteration (one process; the rollout state lives in the trainer)."""

    def learn(self, on_iteration: Callable[[SHACTrainer], bool] | None = None) -> dict:
        """Train for ``cfg.max_iterations`` iterations (:func:`horde.train.runner.run`); returns the summary
        (PPO's keys)."""
        from horde.train.runner import run

        return run(self, on_iteration)
