"""horde's PPO: rsl-rl's :class:`~rsl_rl.algorithms.PPO`, with the two pieces the overlapped schedules need.

A synchronous run calls rsl-rl's own ``update()``; the one thing changed in it is where the *logged* symmetry loss
comes from (:class:`MirrorErrorFromUpdate`: the same figure without a second actor forward). The schedules of
``algo.overlap=true`` call the pieces this subclass adds:

* :meth:`HordePPO.update_actor` and :meth:`HordePPO.update_critic`: rsl-rl's update split in its two halves
  (``algo.max_staleness=0``, :mod:`horde.train.overlap_critic`). The actor's half (surrogate, entropy, symmetry
  loss, the adaptive learning rate, the actor's normalizer) and the critic's half (value loss, the critic's
  normalizer) share no gradient and Adam's state is per parameter, so running them one after the other over the same
  mini-batches at the same learning rates gives every number rsl-rl's ``update()`` gives
  (``tests/integration/test_overlap.py`` checks it bit for bit).
* :meth:`HordePPO.decouple`: the decoupled PPO objective for a batch collected one update ago
  (``algo.max_staleness=1``, :mod:`horde.train.overlap`).
* :meth:`HordePPO.own_update`: rsl-rl's ``update()`` with each mini-batch's forward passes and losses in one function
  (:func:`mini_batch_losses`), which ``algo.compile=true`` hands to ``torch.compile`` (one fused graph and its
  backward per mini-batch instead of some hundred eager operators), and which can leave the mirrored samples out of
  the critic's half (``algo.symmetry.augment_critic=false``).

All of them follow rsl-rl 5.x's ``PPO.update``; ``pyproject.toml`` pins the rsl-rl versions they were checked against.
"""

from __future__ import annotations

import math

import torch
from rsl_rl.algorithms import PPO
from rsl_rl.extensions import Symmetry
from rsl_rl.models import MLPModel
from rsl_rl.modules import GaussianDistribution
from rsl_rl.storage import RolloutStorage
from torch import nn

from horde.train import cpu_linear

__all__ = ["HordePPO", "MirrorErrorFromUpdate", "WEIGHT_CAP", "gaussian_std", "mini_batch_losses", "mini_batches",
           "project_std"]

WEIGHT_CAP = 2.0
"""Largest importance weight pi_prox / pi_behaviour a sample's advantage takes in the decoupled objective."""

ACTOR_FIELDS = ("observations", "actions", "advantages", "actions_log_prob", "distribution_params")
CRITIC_FIELDS = ("observations", "values", "returns")
ALL_FIELDS = ("observations", "actions", "values", "returns", "advantages", "actions_log_prob", "distribution_params")
"""What each half indexes (symmetry's augmentation repeats every field: it gets them all)."""


def mini_batches(storage: RolloutStorage, perm: torch.Tensor, num_mini_batches: int, num_epochs: int,
                 fields: tuple[str, ...]):
    """rsl-rl's ``mini_batch_generator`` over a given permutation (so two passes walk the same batches), with only
    ``fields`` of the storage indexed (the others stay None)."""
    size = storage.num_envs * storage.num_transitions_per_env // num_mini_batches
    flat = {name: getattr(storage, name).flatten(0, 1) for name in fields if name != "distribution_params"}
    params = tuple(p.flatten(0, 1) for p in storage.distribution_params) if "distribution_params" in fields else None
    names = {"actions_log_prob": "old_actions_log_prob"}
    for _ in range(num_epochs):
        for i in range(num_mini_batches):
            idx = perm[i * size:(i + 1) * size]
            batch = RolloutStorage.Batch(**{names.get(k, k): v[idx] for k, v in flat.items()})
            if params is not None:
                batch.old_distribution_params = tuple(p[idx] for p in params)
            yield batch


def gaussian_std(dist: GaussianDistribution) -> torch.Tensor:
    """The standard deviation rsl-rl's :class:`GaussianDistribution` acts with (``update()``'s: its parameter
    clamped to the range, in scalar or log space)."""
    if dist.std_type == "log":
        return torch.exp(dist.log_std_param.clamp(dist.log_std_range[0], dist.log_std_range[1]))
    return dist.std_param.clamp(dist.std_range[0], dist.std_range[1])


def project_std(actor: MLPModel) -> None:
    """Clamp a Gaussian actor's learned noise parameter into its ``std_range`` (in place). The distribution acts
    with the clamped value anyway, but a parameter left above the cap gets no gradient through the clamp and could
    never come back down (``algo.policy.max_noise_std``); PPO calls this after every update."""
    dist = getattr(actor, "distribution", None)
    if not isinstance(dist, GaussianDistribution):
        return
    with torch.no_grad():
        if dist.std_type == "log":
            dist.log_std_param.clamp_(dist.log_std_range[0], dist.log_std_range[1])
        else:
            dist.std_param.clamp_(dist.std_range[0], dist.std_range[1])


def mini_batch_losses(actor: MLPModel, critic: MLPModel, *, clip_param: float, value_loss_coef: float,
                      entropy_coef: float, clipped_value_loss: bool, n: int, critic_rows: int,
                      onednn: bool = False):
    """PPO's losses on one mini-batch as one function of tensors, what rsl-rl's ``update()`` computes through its
    models' ``forward`` and distribution objects: the actor's Gaussian over the (augmented) rows, the surrogate's
    clipped ratio, the clipped value loss over the first ``critic_rows`` rows, the entropy and KL over the first
    ``n`` (the original samples). Returns ``f(actor_obs, critic_obs, actions, old_log_prob, advantages, values,
    returns, old_mean, old_std) -> (loss, surrogate, value_loss, entropy, kl, mean)``, the observations already
    concatenated from their groups (not normalized: the models' normalizers run inside), ``kl`` and ``mean``
    detached. Pure tensor code over the models' modules, so ``torch.compile`` takes it as one graph. ``onednn``:
    the MLPs' linear layers through oneDNN on the CPU (:mod:`horde.train.cpu_linear`: the same products, up to
    rounding, about twice as fast on AMD processors)."""
    dist = actor.distribution
    forward = cpu_linear.mlp_forward if onednn else (lambda mlp, x: mlp(x))
    log_sqrt_2pi = math.log(math.sqrt(2 * math.pi))  # torch.distributions.Normal's constants, in its order

    def losses(actor_obs, critic_obs, actions, old_log_prob, advantages, values, returns, old_mean, old_std):
        mean = forward(actor.mlp, actor.obs_normalizer(actor_obs))
        std = gaussian_std(dist).expand_as(mean)
        log_std = torch.log(std)
        log_prob = (-((actions - mean) ** 2) / (2 * std ** 2) - log_std - log_sqrt_2pi).sum(dim=-1)
        entropy = (0.5 + 0.5 * math.log(2 * math.pi) + log_std[:n]).sum(dim=-1).mean()
        with torch.no_grad():  # KL(old || new) over the original rows, as rsl-rl's inference-mode block
            var_ratio = (old_std / std[:n]).pow(2)
            t1 = ((old_mean - mean[:n]) / std[:n]).pow(2)
            kl = (0.5 * (var_ratio + t1 - 1 - var_ratio.log())).sum(dim=-1).mean()
        ratio = torch.exp(log_prob - torch.squeeze(old_log_prob))
        adv = torch.squeeze(advantages)
        surrogate = torch.max(-adv * ratio, -adv * torch.clamp(ratio, 1.0 - clip_param, 1.0 + clip_param)).mean()
        v = forward(critic.mlp, critic.obs_normalizer(critic_obs[:critic_rows]))
        v_old, v_ret = values[:critic_rows], returns[:critic_rows]
        if clipped_value_loss:
            v_clipped = v_old + (v - v_old).clamp(-clip_param, clip_param)
            value_loss = torch.max((v - v_ret).pow(2), (v_clipped - v_ret).pow(2)).mean()
        else:
            value_loss = (v_ret - v).pow(2).mean()
        loss = surrogate + value_loss_coef * value_loss - entropy_coef * entropy
        return loss, surrogate, value_loss, entropy, kl, mean.detach()

    return losses


class MirrorErrorFromUpdate(Symmetry):
    """rsl-rl's symmetry extension, whose logged-only mirror error reuses the update's own actor forward.

    With data augmentation on and the mirror loss off (``algo.symmetry.augment=true``, the quadrupeds' recipes),
    rsl-rl's ``compute_loss`` runs the actor a second time over the augmented mini-batch (``[original; mirrored]``
    observations) only to log a figure that takes no part in the loss: about a seventh of the quadruped's update on a
    CPU. The update's forward has just computed those very means (a Gaussian's mean is the actor's output), so the
    figure is taken from them: the same inputs, shapes and kernels, so the same numbers, and the training is
    untouched (``tests/unit/test_symmetry.py`` checks both). Every other case (the mirror loss in the loss,
    no augmentation, a non-Gaussian actor) is rsl-rl's own."""

    def compute_loss(self, actor, batch: RolloutStorage.Batch, original_batch_size: int) -> torch.Tensor:
        if self.use_mirror_loss or not self.use_data_augmentation or not isinstance(actor.distribution,
                                                                                   GaussianDistribution):
            return super().compute_loss(actor, batch, original_batch_size)
        n = original_batch_size
        with torch.no_grad():
            mean = actor.output_distribution_params[0]  # the update's forward over the augmented mini-batch
            _, mirrored = self.data_augmentation_func(env=self.env, obs=None, actions=mean[:n])
            return nn.functional.mse_loss(mean[n:], mirrored[n:])


class HordePPO(PPO):
    """rsl-rl's PPO plus the split update and the decoupled objective (module docstring)."""

    def __init__(self, *args, symmetry_cfg: dict | None = None, **kwargs) -> None:
        super().__init__(*args, symmetry_cfg=symmetry_cfg, **kwargs)
        if self.symmetry is not None:
            self.symmetry = MirrorErrorFromUpdate(**symmetry_cfg)

    _losses = None
    """:meth:`own_update`'s mini-batch function (:func:`mini_batch_losses`, compiled or not), set by
    :meth:`use_own_update`; None: rsl-rl's ``update()``."""

    def use_own_update(self, *, compile: bool = False, augment_critic: bool = True) -> None:
        """Run :meth:`own_update` in place of rsl-rl's ``update()``: its mini-batch losses through ``torch.compile``
        (``compile``), the critic's half on the original samples only (``augment_critic=False``, with symmetry
        augmentation). Feed-forward MLP actor and critic with rsl-rl's Gaussian, no RND, no mirror loss, one
        process; anything else raises ValueError with one line."""
        if not compile and augment_critic:
            self._losses = None
            return
        if type(self.actor) is not MLPModel or type(self.critic) is not MLPModel:
            raise ValueError("needs feed-forward MLP actor and critic (not recurrent or CNN policies)")
        if type(self.actor.distribution) is not GaussianDistribution:
            raise ValueError("needs rsl-rl's Gaussian action distribution")
        if self.rnd or self.is_multi_gpu:
            raise ValueError("not with RND or distributed=true")
        if self.symmetry is not None and self.symmetry.use_mirror_loss:
            raise ValueError("not with the mirror loss (algo.symmetry.mirror_loss > 0)")
        self._own = {"compile": compile, "augment_critic": augment_critic}
        self._losses = {}  # per (mini-batch rows, critic rows): built on the first update, when the sizes are known

    def _mini_batch_fn(self, rows: int, n: int):
        critic_rows = rows if self._own["augment_critic"] else n
        fn = self._losses.get((rows, critic_rows))
        if fn is None:
            fn = mini_batch_losses(self.actor, self.critic, clip_param=self.clip_param,
                                   value_loss_coef=self.value_loss_coef, entropy_coef=self.entropy_coef,
                                   clipped_value_loss=self.use_clipped_value_loss, n=n, critic_rows=critic_rows,
                                   onednn=self._own["compile"] and cpu_linear.available(self.device))
            if self._own["compile"]:
                fn = torch.compile(fn, dynamic=False)
            self._losses[(rows, critic_rows)] = fn
        return fn

    def update(self) -> dict[str, float]:
        """rsl-rl's ``update()``, or :meth:`own_update` after :meth:`use_own_update`; then the noise's parameter
        projected onto its range (:func:`project_std`)."""
        losses = super().update() if self._losses is None else self.own_update()
        project_std(self.actor)
        return losses

    def own_update(self) -> dict[str, float]:
        """rsl-rl's ``update()`` (same mini-batches from the same random draw, same adaptive learning rate, clips,
        optimizer steps, normalizer updates and logged losses) with each mini-batch's forward passes and losses in
        :func:`mini_batch_losses`: compiled, or with the critic on the original samples (:meth:`use_own_update`)."""
        sums = {"value": 0.0, "surrogate": 0.0, "entropy": 0.0, "symmetry": 0.0}
        steps = 0
        prepared = self._prepared_mini_batches()
        for batch, n, actor_obs, critic_obs in (mb for _ in range(self.num_learning_epochs) for mb in prepared):
            fn = self._mini_batch_fn(actor_obs.shape[0], n)
            with self._autocast():
                loss, surrogate, value_loss, entropy, kl, mean = fn(
                    actor_obs, critic_obs, batch.actions, batch.old_actions_log_prob, batch.advantages, batch.values,
                    batch.returns, *batch.old_distribution_params)
            if self.desired_kl is not None and self.schedule == "adaptive":
                self._adapt_learning_rate(kl)
            self.optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(self.actor.parameters(), self.max_grad_norm)
            nn.utils.clip_grad_norm_(self.critic.parameters(), self.max_grad_norm)
            self.optimizer.step()
            sums["value"] += value_loss.item()
            sums["surrogate"] += surrogate.item()
            sums["entropy"] += entropy.item()
            if self.symmetry:  # the logged mirror error, from this forward's means (MirrorErrorFromUpdate's figure)
                with torch.no_grad():
                    _, mirrored = self.symmetry.data_augmentation_func(env=self.symmetry.env, obs=None,
                                                                       actions=mean[:n])
                    sums["symmetry"] += nn.functional.mse_loss(mean[n:], mirrored[n:]).item()
            steps += 1
        flat = self.storage.observations.flatten(0, 1)
        self.actor.update_normalization(flat)
        self.critic.update_normalization(flat)
        losses = {k: v / max(steps, 1) for k, v in sums.items() if k != "symmetry" or self.symmetry}
        self.storage.clear()
        return losses

    def _prepared_mini_batches(self) -> list[tuple[RolloutStorage.Batch, int, torch.Tensor, torch.Tensor]]:
        """The update's mini-batches, gathered, prepared (:meth:`_prepare`) and with their observation groups
        concatenated once: rsl-rl's generator draws one permutation for all epochs, so every epoch walks these very
        batches (the same rows, the same values), and gathering and mirroring them once instead of once per epoch
        spares ``num_learning_epochs - 1`` of every ``aten::index``, ``cat`` and ``repeat`` of the update (about a
        tenth of the quadruped's update on a CPU). The permutation is drawn where rsl-rl draws it. Each: the batch,
        its original size, the actor's and the critic's observations."""
        actor_groups, critic_groups = self.actor.obs_groups, self.critic.obs_groups
        out = []
        for batch in self.storage.mini_batch_generator(self.num_mini_batches, 1):
            n = self._prepare(batch)
            obs = batch.observations
            actor_obs = torch.cat([obs[g] for g in actor_groups], dim=-1)
            critic_obs = actor_obs if critic_groups == actor_groups else torch.cat([obs[g] for g in critic_groups],
                                                                                   dim=-1)
            out.append((batch, n, actor_obs, critic_obs))
        return out

    def _prepare(self, batch: RolloutStorage.Batch) -> int:
        """rsl-rl's start of a mini-batch step: the advantages normalized per mini-batch (when set), then the
        symmetry augmentation. Returns the original batch size."""
        n = batch.observations.batch_size[0]
        if self.normalize_advantage_per_mini_batch:
            with torch.no_grad():
                batch.advantages = (batch.advantages - batch.advantages.mean()) / (batch.advantages.std() + 1e-8)
        if self.symmetry:
            self.symmetry.augment_batch(batch, n)
        return n

    def _adapt_learning_rate(self, kl: torch.Tensor) -> None:
        """rsl-rl's adaptive schedule: the learning rate down 1.5x above twice the desired KL, up 1.5x under half."""
        if kl > self.desired_kl * 2.0:
            self.learning_rate = max(1e-5, self.learning_rate / 1.5)
        elif kl < self.desired_kl / 2.0 and kl > 0.0:
            self.learning_rate = min(1e-2, self.learning_rate * 1.5)
        for group in self.optimizer.param_groups:
            group["lr"] = self.learning_rate

    def _autocast(self):
        return torch.amp.autocast(device_type=torch.device(self.device).type, enabled=self.use_mixed_precision,
                                  dtype=torch.bfloat16)

    def update_actor(self, storage: RolloutStorage) -> tuple[dict[str, float], torch.Tensor, list[float]]:
        """The actor's half of ``PPO.update`` on ``storage``. Returns its losses, the mini-batch permutation (drawn
        from torch's generator where rsl-rl draws it) and the learning rate of every mini-batch step (what
        :meth:`update_critic` replays)."""
        n_mb, epochs = self.num_mini_batches, self.num_learning_epochs
        size = storage.num_envs * storage.num_transitions_per_env // n_mb
        perm = torch.randperm(n_mb * size, requires_grad=False, device=self.device)  # rsl-rl's draw, same place
        lrs: list[float] = []
        sums = {"surrogate": 0.0, "entropy": 0.0, "symmetry": 0.0}
        for batch in mini_batches(storage, perm, n_mb, epochs, ALL_FIELDS if self.symmetry else ACTOR_FIELDS):
            n = self._prepare(batch)
            with self._autocast():
                self.actor(batch.observations, stochastic_output=True)
                log_prob = self.actor.get_output_log_prob(batch.actions)
                dist_params = tuple(p[:n] for p in self.actor.output_distribution_params)
                entropy = self.actor.output_entropy[:n]
                if self.desired_kl is not None and self.schedule == "adaptive":
                    with torch.inference_mode():
                        self._adapt_learning_rate(
                            torch.mean(self.actor.get_kl_divergence(batch.old_distribution_params, dist_params)))
                ratio = torch.exp(log_prob - torch.squeeze(batch.old_actions_log_prob))
                surrogate = -torch.squeeze(batch.advantages) * ratio
                clipped = -torch.squeeze(batch.advantages) * torch.clamp(ratio, 1.0 - self.clip_param,
                                                                         1.0 + self.clip_param)
                surrogate_loss = torch.max(surrogate, clipped).mean()
                loss = surrogate_loss - self.entropy_coef * entropy.mean()
                if self.symmetry:
                    symmetry_loss = self.symmetry.compute_loss(self.actor, batch, n)
                    if self.symmetry.use_mirror_loss:
                        loss = loss + self.symmetry.mirror_loss_coeff * symmetry_loss
                    sums["symmetry"] += symmetry_loss.item()
            self.optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(self.actor.parameters(), self.max_grad_norm)
            self.optimizer.step()  # Adam skips the critic's parameters: they have no gradient
            lrs.append(self.learning_rate)
            sums["surrogate"] += surrogate_loss.item()
            sums["entropy"] += entropy.mean().item()
        self.actor.update_normalization(storage.observations.flatten(0, 1))
        project_std(self.actor)
        steps = n_mb * epochs
        losses = {"surrogate": sums["surrogate"] / steps, "entropy": sums["entropy"] / steps}
        if self.symmetry:
            losses["symmetry"] = sums["symmetry"] / steps
        return losses, perm, lrs

    def update_critic(self, storage: RolloutStorage, perm: torch.Tensor, lrs: list[float]) -> float:
        """The critic's half of ``PPO.update`` over :meth:`update_actor`'s mini-batches, each step at the learning
        rate the actor's half used; then the critic's normalizer. Returns the mean value loss."""
        total = 0.0
        fields = ALL_FIELDS if self.symmetry else CRITIC_FIELDS
        for batch, lr in zip(mini_batches(storage, perm, self.num_mini_batches, self.num_learning_epochs, fields),
                             lrs):
            if self.symmetry:
                self.symmetry.augment_batch(batch, batch.observations.batch_size[0])
            with self._autocast():
                values = self.critic(batch.observations)
                if self.use_clipped_value_loss:
                    clipped = batch.values + (values - batch.values).clamp(-self.clip_param, self.clip_param)
                    value_loss = torch.max((values - batch.returns).pow(2), (clipped - batch.returns).pow(2)).mean()
                else:
                    value_loss = (batch.returns - values).pow(2).mean()
            self.optimizer.zero_grad()
            (self.value_loss_coef * value_loss).backward()
            nn.utils.clip_grad_norm_(self.critic.parameters(), self.max_grad_norm)
            for group in self.optimizer.param_groups:
                group["lr"] = lr
            self.optimizer.step()  # Adam skips the actor's parameters
            total += value_loss.item()
        self.critic.update_normalization(storage.observations.flatten(0, 1))
        return total / max(len(lrs), 1)

    def decouple(self, storage: RolloutStorage, *, decoupled: bool = True) -> float:
        """Prepare ``storage`` (collected by an older *behaviour* policy) for decoupled PPO (Hilton et al. 2021,
        "Batch size-invariance for policy optimization"; AReaL trains on stale rollouts with it): the clip is
        centred on the *proximal* policy (this actor, at the update's start), not on the behaviour policy, and each
        sample's advantage is weighted by pi_prox / pi_behaviour (capped at :data:`WEIGHT_CAP`). In rsl-rl's
        storage: the old log-probabilities and distribution parameters become the proximal policy's (so the
        adaptive learning rate measures the KL of the update, not of the lag), and the normalized advantages take
        the weight. Returns the mean KL(behaviour || proximal); ``decoupled=False`` only measures it (plain PPO
        against the behaviour policy). With staleness 0 every weight is 1 and nothing changes. Recurrent actors
        (whose forward needs each step's stored hidden state) keep the behaviour's figures; the KL is then NaN."""
        actor = self.actor
        if actor.is_recurrent:
            return float("nan")
        with torch.inference_mode():
            steps, envs = storage.actions.shape[:2]
            actor(storage.observations.flatten(0, 1), stochastic_output=True)
            prox = tuple(p.detach() for p in actor.output_distribution_params)
            behaviour = tuple(p.flatten(0, 1) for p in storage.distribution_params)
            kl = actor.get_kl_divergence(behaviour, prox).mean()
            logp = actor.get_output_log_prob(storage.actions.flatten(0, 1)).view(steps, envs, 1)
            if not decoupled:
                return float(kl)
            weight = (logp - storage.actions_log_prob).exp().clamp(max=WEIGHT_CAP)
            storage.advantages.mul_(weight)
            storage.actions_log_prob.copy_(logp)
            for dst, src in zip(storage.distribution_params, prox):
                dst.copy_(src.view(dst.shape))
            return float(kl)
