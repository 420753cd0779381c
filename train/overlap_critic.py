"""PPO with the critic's update hidden behind the next rollout, on-policy exactly (``algo.overlap=true
algo.max_staleness=0``).

rsl-rl's PPO updates two networks that share nothing: the actor (surrogate and entropy losses, the KL that sets the
adaptive learning rate) and the critic (value loss), each with its own gradient-norm clip, under one Adam whose
state is per parameter. Only the actor is needed to act. So an iteration here is:

1. the rollout of batch ``i`` with the actor of update ``i - 1``, *without* the critic's per-step forward pass (its
   values are deferred) -- meanwhile the learner (a forked process on the CPU, a thread elsewhere) runs the
   critic's half of update ``i - 1``;
2. wait for that critic, then batch ``i``'s values in one pass, the time-out bootstrap of the rewards and the
   returns (GAE) exactly as rsl-rl computes them step by step;
3. the actor's half of update ``i`` here: the same mini-batch permutation (drawn from torch's generator at the
   same point of the stream as rsl-rl draws it), the same adaptive learning rate per mini-batch;
4. the critic's half of update ``i`` sent to the learner with that permutation and those learning rates.

Every number is the one synchronous PPO computes -- the actor's gradients do not depend on the value loss, nor the
critic's on the surrogate, and Adam skips the parameters without a gradient -- so the same seed gives a
bit-identical run (``tests/integration/test_overlap.py`` compares them), ``deterministic=true`` is allowed, and a
checkpoint (taken after the in-flight critic update has landed) resumes exactly. The staleness is 0: no correction is
needed. What it hides is the critic's update and the rollout's per-step critic calls; ``algo.max_staleness=1``
(:mod:`horde.train.overlap`) hides the whole update at the price of one update of lag.

The two halves are :meth:`horde.train.algorithm.HordePPO.update_actor` and ``update_critic`` (rsl-rl's PPO
subclassed); this module schedules them.

Feed-forward policies only (a recurrent critic needs each step's hidden state); not with RND or distributed runs.
"""

from __future__ import annotations

import contextlib
import copy
import io
from concurrent.futures import ThreadPoolExecutor

import torch
from rsl_rl.storage import RolloutStorage

from horde.train.overlap import LearnerProcess, fork_learner, reshare, share_storage, take_back_optimizer


class OverlappedCritic:
    """Drives one :class:`horde.train.ppo.PPOTrainer` with the critic's update overlapped with the next rollout
    (module docstring). ``learner``: ``process`` (CPU: a forked process sharing the critic and both rollout
    storages), ``thread`` (its own CUDA stream on a GPU), ``auto``: ``process`` on the CPU."""

    max_staleness = 0

    def __init__(self, trainer, learner: str = "auto") -> None:
        alg = trainer.alg
        if alg.actor.is_recurrent or alg.critic.is_recurrent or alg.rnd or trainer.dist.enabled:
            raise ValueError("algo.max_staleness=0 overlaps the critic's update of a feed-forward, single-process PPO "
                             "run: not with recurrent policies, RND or distributed=true (use algo.max_staleness=1)")
        self.trainer = trainer
        self._cuda = trainer.device.type == "cuda"
        if learner == "auto":
            learner = "thread" if self._cuda else "process"
        if learner == "process" and self._cuda:
            raise ValueError("algo.overlap_learner=process needs the CPU; use thread")
        self.learner = learner
        self._storages = (alg.storage, copy.deepcopy(alg.storage))
        self._next = 0  # the storage the next rollout fills
        self._in_flight = None  # the critic update running: a Future or True (process)
        steps, n = trainer.cfg.algo.num_steps_per_env, trainer.core.num_envs
        self._time_outs = torch.zeros(steps, n, 1, device=trainer.device)
        """Which env timed out at each step of the rollout (its bootstrap waits for the critic's values)."""
        self._zero_values = torch.zeros(n, 1, device=trainer.device)
        self._stream = torch.cuda.Stream(trainer.device) if self._cuda else None
        self._pool = (ThreadPoolExecutor(max_workers=1, thread_name_prefix="horde-critic") if learner == "thread"
                      else None)
        self._child: LearnerProcess | None = None
        self._shared_buffers: list = []
        self._advantages: dict[int, torch.Tensor] = {}  # each storage's shared advantage buffer (process learner)
        self.staleness_seen: list[int] = []
        self.value_loss = float("nan")
        """The mean value loss of the last critic update that landed."""

    # --- acting and returns (calling thread) ----------------------------------------------------------------
    def _rollout(self, storage: RolloutStorage) -> None:
        """rsl-rl's act / process_env_step with the critic's values left at zero; the time-outs are kept for the
        bootstrap that :meth:`_returns` adds once the critic has landed."""
        t, alg = self.trainer, self.trainer.alg
        timer = t.timer
        alg.storage = storage
        storage.clear()
        tr = alg.transition
        with torch.inference_mode():
            for step in range(len(self._time_outs)):
                tr.hidden_states = (None, None)
                tr.actions = alg.actor(t._obs, stochastic_output=True).detach()
                tr.values = self._zero_values
                tr.actions_log_prob = alg.actor.get_output_log_prob(tr.actions).detach()
                tr.distribution_params = tuple(p.detach() for p in alg.actor.output_distribution_params)
                tr.observations = t._obs
                timer.mark("inference")
                t._obs, rewards, dones, extras = t.env.step(tr.actions)
                timer.mark("sim")
                self._time_outs[step].copy_(extras["time_outs"].view(-1, 1))
                alg.process_env_step(t._obs, rewards, dones, extras)  # its bootstrap adds gamma * 0 here
                timer.mark("other")

    def _returns(self, storage: RolloutStorage) -> None:
        """The critic's values for the batch in one pass (the numbers the rollout's per-step calls give: a row of a
        matrix product does not depend on the rows computed beside it, which the bit-identity test checks), the
        time-out bootstrap of the rewards, then rsl-rl's returns and advantages."""
        alg = self.trainer.alg
        with torch.inference_mode():
            values = alg.critic(storage.observations.flatten(0, 1))
            storage.values.copy_(values.view_as(storage.values))
            storage.rewards.add_(alg.gamma * (storage.values * self._time_outs))
            alg.compute_returns(self.trainer._obs)
        shared = self._advantages.get(id(storage))
        if shared is not None:  # rsl-rl assigns a new advantage tensor: back into the one the learner reads
            with torch.inference_mode():
                shared.copy_(storage.advantages)
            storage.advantages = shared

    # --- the critic's update (learner thread or process) ----------------------------------------------------
    def _wait(self) -> None:
        """Until the critic update in flight has landed."""
        if self._in_flight is None:
            return
        if self._child is not None:
            _, value = self._child.reply()
        else:
            value, done = self._in_flight.result()
            if done is not None:
                torch.cuda.current_stream(self.trainer.device).wait_event(done)
        self.value_loss = value
        self._in_flight = None

    def _critic_in_thread(self, storage, perm, lrs, ready):
        with torch.cuda.stream(self._stream) if self._cuda else contextlib.nullcontext():
            if ready is not None:
                self._stream.wait_event(ready)
            loss = self.trainer.alg.update_critic(storage, perm, lrs)
            done = None
            if self._cuda:
                done = torch.cuda.Event()
                done.record(self._stream)
        return loss, done

    def _start_critic(self, index: int, perm: torch.Tensor, lrs: list[float]) -> None:
        storage = self._storages[index]
        if self.learner == "process":
            if self._child is None:
                self._fork()
            self._child.send("critic", index, perm, lrs)
            self._in_flight = True
        else:
            ready = None
            if self._cuda:
                ready = torch.cuda.Event()
                ready.record(torch.cuda.current_stream(self.trainer.device))
            self._in_flight = self._pool.submit(self._critic_in_thread, storage, perm, lrs, ready)

    def _fork(self) -> None:
        alg = self.trainer.alg
        filled = next(s for s in self._storages if s.distribution_params is not None)
        for storage in self._storages:
            share_storage(storage, filled)
            self._advantages[id(storage)] = storage.advantages
        alg.critic.share_memory()
        self._shared_buffers = [(m, name, b) for m in alg.critic.modules() for name, b in m._buffers.items()
                                if b is not None]
        self._child = fork_learner({"critic": self._serve_critic, "state": self._serve_state}, "critic")

    # the learner process's requests (:func:`fork_learner`)
    def _serve_critic(self, index: int, perm: torch.Tensor, lrs: list[float]) -> tuple:
        """The critic's update on batch ``index``: its mean value loss back."""
        loss = self.trainer.alg.update_critic(self._storages[index], perm, lrs)
        reshare(self._shared_buffers)  # normalizer buffers replaced: back into the shared ones
        return "done", loss

    def _serve_state(self) -> tuple:
        """The critic's Adam state, as bytes."""
        buf = io.BytesIO()
        torch.save(self.trainer.alg.optimizer.state_dict()["state"], buf)
        return "state", buf.getvalue()

    # --- one iteration --------------------------------------------------------------------------------------
    def iterate(self) -> dict[str, float]:
        t = self.trainer
        index = self._next
        storage = self._storages[index]
        self._rollout(storage)  # meanwhile the critic of the last update learns
        self._wait()
        t.timer.mark("learn")  # the time the rollout waited for the critic
        self._returns(storage)
        losses, perm, lrs = t.alg.update_actor(storage)
        self._start_critic(index, perm, lrs)
        t.timer.mark("learn")
        self._next = 1 - index
        self.staleness_seen.append(0)
        losses["value"] = self.value_loss  # the critic update that landed during this rollout
        losses["Overlap/staleness"] = 0.0
        t.iteration += 1
        return losses

    def learner_state(self) -> dict:
        """rsl-rl's ``save()`` with the critic update in flight landed (and, with the learner process, the critic's
        Adam state from there)."""
        self._wait()
        state = self.trainer.alg.save()
        if self._child is not None:
            _, data = self._child.call("state")
            critic_state = torch.load(io.BytesIO(data), weights_only=False)
            opt = state["optimizer_state_dict"]
            params = [p for g in self.trainer.alg.optimizer.param_groups for p in g["params"]]
            critic = {id(p) for p in self.trainer.alg.critic.parameters()}
            for k, p in enumerate(params):
                if id(p) in critic and k in critic_state:
                    opt["state"][k] = critic_state[k]
        return state

    def close(self) -> None:
        """Land the critic update in flight (the trainer's optimizer takes the learner's critic state) and stop."""
        if self._child is not None:
            if self._child.alive:
                take_back_optimizer(self.trainer.alg, self.learner_state())
            self._child.stop()
            self._child = None
        else:
            self._wait()
        if self._pool is not None:
            self._pool.shutdown(wait=True)

