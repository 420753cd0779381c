"""PPO with the rollout and the update at the same time (``algo.overlap=true``).

Overlap. Synchronous PPO alternates: the envs and the policy's inference wait while the update runs, and the update
waits while the envs step. :class:`OverlappedRollouts` runs the update of iteration ``i``'s batch in a learner (a
forked process on the CPU, a thread on CUDA) while the calling thread collects iteration ``i + 1``'s batch with the
parameters of the last finished update (the *behaviour* policy, a copy of the actor and the critic). Every iteration
pairs one update with the next rollout and then joins both, so every batch after the first is exactly 1 update stale
(``algo.max_staleness`` is the bound it is checked against; the first batch, and the first after a resume, is
collected synchronously with staleness 0). ``algo.max_staleness=0`` is another schedule,
:mod:`horde.train.overlap_critic`: only the critic's half of the update overlaps the rollout, bit-identical to
synchronous PPO.

The objective is decoupled PPO (:meth:`horde.train.algorithm.HordePPO.decouple`): the clip is centred on the
learner's policy at the update's start, and each sample is weighted by that policy's probability over the behaviour
policy's (stored by rsl-rl at acting time), capped at :data:`horde.train.algorithm.WEIGHT_CAP`; with staleness 0 it
is PPO exactly. The KL between the behaviour and the learner's policy (``Overlap/kl_behaviour``), the staleness
(``Overlap/staleness``) and the update's own time (``Overlap/update_s``) are logged every iteration; the runner's
``learn`` share is the time the rollout waited for the update.

Where the time goes. CPU: the learner process shares the networks' parameters and both rollout storages with the
trainer through shared memory and gets one message per iteration over a pipe, so the update and the rollout hold
no lock in common (two threads of one process would share the GIL: torch's and Warp's small calls hold it between
kernels). ``algo.overlap_learner=thread`` keeps the update in a thread (recurrent policies and distributed runs use
it). CUDA: the learner thread issues its work on its own stream, ordered against the rollout's stream with events
(no host sync in the step).

Not deterministic: a learner thread draws from torch's process-wide generators (action noise, mini-batch shuffles)
in an order that timing decides, and a learner process's generator is not in the checkpoint; ``deterministic=true``
with overlap is refused. A checkpoint holds the learner after update ``i`` (the optimizer's state fetched from the
learner process) and the envs after rollout ``i + 1``; that batch is discarded (a resumed run collects its next
batch synchronously with the checkpoint's parameters).

The PPO maths of both schedules are methods of :class:`horde.train.algorithm.HordePPO` (rsl-rl's PPO subclassed);
the rollout precision (``algo.rollout_precision``) is :mod:`horde.policies.precision`.
"""

from __future__ import annotations

import contextlib
import copy
import io
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor

import torch
from rsl_rl.storage import RolloutStorage


class OverlappedRollouts:
    """Drives one :class:`horde.train.ppo.PPOTrainer` with the update of a batch and the next rollout overlapped.

    ``learner``: ``thread`` runs the update in a thread of this process (CUDA: on its own stream); ``process`` in a
    forked child process that shares the networks' parameters and both rollout storages through shared memory (CPU
    only: no GIL between the two sides); ``auto`` picks ``process`` on the CPU for feed-forward, single-process
    runs and ``thread`` otherwise.
    """

    def __init__(self, trainer, max_staleness: int, learner: str = "auto") -> None:
        self.trainer = trainer
        self.max_staleness = max_staleness
        alg = trainer.alg
        # the acting side: rsl-rl's PPO object, shallow-copied, with its own actor/critic copies, transition and
        # storage; act / process_env_step / compute_returns then run on it exactly as on the learner's
        self.acting = copy.copy(alg)
        self.acting.actor = copy.deepcopy(alg.actor)
        self.acting.critic = copy.deepcopy(alg.critic)
        self.acting.transition = RolloutStorage.Transition()
        self._storages = (alg.storage, copy.deepcopy(alg.storage))
        self._free = list(self._storages)  # the storages not being filled or updated on
        self._pending: RolloutStorage | None = None  # a collected batch with its returns, not yet updated on
        self._pending_version = 0
        self.version = 0
        """Updates finished."""
        self.staleness_seen: list[int] = []
        """The staleness of every batch updated on (instrumentation for tests and the benchmark)."""
        self.kl_seen: list[float] = []
        """The behaviour policy's KL from the learner's, before every update."""
        self._cuda = trainer.device.type == "cuda"
        recurrent = alg.actor.is_recurrent or alg.critic.is_recurrent
        if learner == "auto":
            learner = "process" if not (self._cuda or recurrent or trainer.dist.enabled) else "thread"
        if learner == "process" and (self._cuda or recurrent):
            raise ValueError("algo.overlap_learner=process needs the CPU and a feed-forward policy; use thread")
        self.learner = learner
        """``thread`` or ``process`` (resolved)."""
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="horde-learner")
        self._learn_stream = torch.cuda.Stream(trainer.device) if self._cuda else None
        self._threads_set = False
        self._child: LearnerProcess | None = None  # once forked
        self._advantages: dict[int, torch.Tensor] = {}  # each storage's shared advantage buffer (process learner)
        self.decoupled = True
        """Decoupled PPO objective (:meth:`_decouple`); False: PPO's clip around the behaviour policy."""

    # --- the acting side (calling thread) -------------------------------------------------------------------
    def _sync_behaviour(self) -> None:
        """The behaviour policy takes the learner's parameters and normalizer statistics (after its last update)."""
        alg = self.trainer.alg
        with torch.no_grad():
            self.acting.actor.load_state_dict(alg.actor.state_dict())
            self.acting.critic.load_state_dict(alg.critic.state_dict())

    def _collect(self) -> RolloutStorage:
        """One batch with the behaviour policy into a free storage, its returns computed (calling thread)."""
        acting = self.acting
        acting.storage = storage = self._free.pop()
        storage.clear()
        self.trainer.rollout(acting, returns_phase="inference")
        shared = self._advantages.get(id(storage))
        if shared is not None:  # rsl-rl assigns new advantage tensors: back into the buffer the child reads
            with torch.inference_mode():
                shared.copy_(storage.advantages)
            storage.advantages = shared
        return storage

    # --- the learning side ----------------------------------------------------------------------------------
    def _learn(self, storage: RolloutStorage) -> dict[str, float]:
        """Decoupling, then rsl-rl's update on ``storage`` (learner thread or process)."""
        alg = self.trainer.alg
        t0 = time.perf_counter()
        kl = alg.decouple(storage, decoupled=self.decoupled)
        alg.storage = storage
        losses = alg.update()
        losses["Overlap/kl_behaviour"] = kl
        losses["Overlap/update_s"] = time.perf_counter() - t0
        return losses

    def _update_in_thread(self, storage: RolloutStorage, ready) -> tuple[dict[str, float], object]:
        if not self._threads_set:
            torch.set_num_threads(1)  # per thread (OpenMP): the calling thread keeps its own count
            self._threads_set = True
        with torch.cuda.stream(self._learn_stream) if self._cuda else contextlib.nullcontext():
            if ready is not None:
                self._learn_stream.wait_event(ready)
            losses = self._learn(storage)
            done = None
            if self._cuda:
                done = torch.cuda.Event()
                done.record(self._learn_stream)
        return losses, done

    def _fork(self) -> None:
        """Put the networks and both storages in shared memory and fork the learner process."""
        alg = self.trainer.alg
        filled = next(s for s in self._storages if s.distribution_params is not None)
        for storage in self._storages:
            share_storage(storage, filled)
            self._advantages[id(storage)] = storage.advantages
        alg.actor.share_memory()
        alg.critic.share_memory()
        # buffers a module replaces instead of updating in place (rsl-rl's normalizer assigns a new ``_std``) are
        # copied back into the shared one after every update (:meth:`_reshare`)
        self._shared_buffers = [(m, name, b) for net in (alg.actor, alg.critic) for m in net.modules()
                                for name, b in m._buffers.items() if b is not None]
        self._child = fork_learner({"update": self._serve_update, "state": self._serve_state}, "learner")

    # the learner process's requests (:func:`fork_learner`)
    def _serve_update(self, index: int) -> tuple:
        """Update on batch ``index``: the losses and the learning rate back."""
        losses = self._learn(self._storages[index])
        self._reshare()
        return "done", losses, float(self.trainer.alg.learning_rate)

    def _serve_state(self) -> tuple:
        """rsl-rl's ``save()`` as bytes (no shared-memory handles cross the pipe) and the learning rate."""
        buf = io.BytesIO()
        torch.save(self.trainer.alg.save(), buf)
        return "state", buf.getvalue(), float(self.trainer.alg.learning_rate)

    def _reshare(self) -> None:
        """Every buffer the update replaced goes back into its shared tensor (learner process)."""
        reshare(self._shared_buffers)

    def learner_state(self) -> dict | None:
        """rsl-rl's ``save()`` of the learner as it is in the learner process (None with the thread learner, whose
        state is the trainer's own)."""
        if self._child is None:
            return None
        _, data, _ = self._child.call("state")
        return torch.load(io.BytesIO(data), weights_only=False)

    # --- one iteration --------------------------------------------------------------------------------------
    def iterate(self) -> dict[str, float]:
        """Update on the pending batch while collecting the next one (none after the last iteration)."""
        t = self.trainer
        if self._pending is None:  # the first batch (or the first after a resume): collected synchronously
            self._sync_behaviour()
            self._pending, self._pending_version = self._collect(), self.version
        if self.learner == "process" and self._child is None:
            self._fork()
        batch, staleness = self._pending, self.version - self._pending_version
        if staleness > self.max_staleness:
            raise RuntimeError(f"staleness {staleness} exceeds algo.max_staleness={self.max_staleness}")
        ready = None
        if self._cuda:
            ready = torch.cuda.Event()
            ready.record(torch.cuda.current_stream(t.device))
        if self._child is not None:
            index = next(i for i, s in enumerate(self._storages) if s is batch)
            self._child.send("update", index)
        else:
            future: Future = self._pool.submit(self._update_in_thread, batch, ready)
        # meanwhile the next batch, with the parameters of the last finished update (the running one has not)
        last = t.iteration + 1 >= t.cfg.max_iterations
        nxt = None if last else self._collect()
        done = None
        if self._child is not None:
            _, losses, lr = self._child.reply()
            t.alg.learning_rate = lr  # for the logs and checkpoints; the optimizer lives in the child
        else:
            losses, done = future.result()
        if done is not None:
            torch.cuda.current_stream(t.device).wait_event(done)
        t.timer.mark("learn")  # the rollout's marks are in: this is the time the rollout waited for the update
        self._free.append(batch)
        self._pending, self._pending_version = nxt, self.version
        self.version += 1
        self.staleness_seen.append(staleness)
        self.kl_seen.append(losses["Overlap/kl_behaviour"])
        self._sync_behaviour()
        losses["Overlap/staleness"] = float(staleness)
        t.iteration += 1
        return losses

    def close(self) -> None:
        """Stop the learner thread or process."""
        self._pool.shutdown(wait=True)
        if self._child is not None:
            if self._child.alive:
                take_back_optimizer(self.trainer.alg, self.learner_state())
            self._child.stop()
            self._child = None


def take_back_optimizer(alg, state: dict) -> None:
    """The trainer's own optimizer takes the learner process's state (``state``: rsl-rl's ``save()`` from there) at
    the trainer's learning rate."""
    alg.optimizer.load_state_dict(state["optimizer_state_dict"])
    for group in alg.optimizer.param_groups:
        group["lr"] = alg.learning_rate


def reshare(shared_buffers: list) -> None:
    """For each (module, buffer name, shared tensor): a buffer the update replaced instead of updating in place
    (rsl-rl's normalizer assigns a new ``_std``) is copied into the shared tensor, which takes its place again."""
    with torch.no_grad():
        for module, name, shared in shared_buffers:
            now = module._buffers.get(name)
            if now is not None and now is not shared:
                shared.copy_(now)
                module._buffers[name] = shared


def share_storage(storage: RolloutStorage, filled: RolloutStorage) -> None:
    """Move every tensor of ``storage`` into shared memory (a forked learner then reads what the trainer writes);
    the distribution parameters rsl-rl allocates at the first transition are allocated here like ``filled``'s."""
    if storage.distribution_params is None:
        storage.distribution_params = tuple(torch.zeros_like(p) for p in filled.distribution_params)
    for value in vars(storage).values():
        if isinstance(value, (tuple, list)):
            for v in value:
                if isinstance(v, torch.Tensor):
                    v.share_memory_()
        elif hasattr(value, "share_memory_"):
            value.share_memory_()


def fork_learner(handlers: dict[str, Callable[..., tuple]], what: str) -> LearnerProcess:
    """Fork a daemon learner process that serves the parent's requests ``(kind, *args)`` on one torch thread:
    ``handlers[kind](*args)`` runs and its tuple goes back; an exception goes back as ``("error", "Type: message")``;
    another kind, or the parent's end closing, stops it (``what`` names it in errors). The child
    ignores SIGINT/SIGTERM (the parent stops the run and asks for its state) and leaves with ``os._exit``: none of
    the parent's atexit handlers (TensorBoard writers, Warp) run in it."""
    import multiprocessing

    def serve(conn) -> None:
        while True:
            try:
                kind, *args = conn.recv()
            except EOFError:
                return
            if kind not in handlers:
                return
            try:
                reply = handlers[kind](*args)
            except Exception as exc:  # reported in the parent, with its type
                reply = ("error", f"{type(exc).__name__}: {exc}")
            conn.send(reply)

    def main(conn) -> None:
        import os
        import signal

        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        torch.set_num_threads(1)
        code = 0
        try:
            serve(conn)
        except BaseException:
            code = 1
        finally:
            os._exit(code)

    ctx = multiprocessing.get_context("fork")
    parent, child = ctx.Pipe()
    proc = ctx.Process(target=main, args=(child,), name="horde-learner", daemon=True)
    proc.start()
    child.close()
    return LearnerProcess(proc, parent, what)


class LearnerProcess:
    """A learner process from :func:`fork_learner` and the parent's end of its pipe."""

    def __init__(self, proc, conn, what: str) -> None:
        self.proc, self.conn, self.what = proc, conn, what

    @property
    def alive(self) -> bool:
        return self.proc.is_alive()

    def send(self, kind: str, *args) -> None:
        """Ask for ``handlers[kind](*args)``; :meth:`reply` waits for its answer."""
        self.conn.send((kind, *args))

    def reply(self) -> tuple:
        """The answer to the last request; a one-line RuntimeError if the handler failed or the process died."""
        try:
            reply = self.conn.recv()
        except EOFError:
            self.proc.join(timeout=5)
            raise RuntimeError(f"the overlapped {self.what} process died (exit code {self.proc.exitcode})") from None
        if reply[0] == "error":
            raise RuntimeError(f"the overlapped {self.what} process failed: {reply[1]}")
        return reply

    def call(self, kind: str, *args) -> tuple:
        self.send(kind, *args)
        return self.reply()

    def stop(self) -> None:
        """Ask it to leave, wait up to 30 s, then kill it."""
        with contextlib.suppress(BrokenPipeError, OSError):
            self.conn.send(("stop",))
        self.proc.join(timeout=30)
        if self.proc.is_alive():
            self.proc.kill()
        self.conn.close()
