"""Typed run configuration, composed by Hydra from the task registry, the algorithm schema and tuned YAML.

The dataclasses here are the schema; ``configs/`` YAML only picks groups and overrides values. Every bad
override fails with one line that names the valid choices (:class:`ConfigError`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from omegaconf import MISSING, DictConfig, OmegaConf, open_dict

from horde.policies.config import ActorCriticConfig
from horde.sim.fields import FieldError, bounded, check_fields, choice
from horde.train.overrides import (  # noqa: F401  (re-exported: horde.train.config's names before the split)
    TERM_PARAMS, ConfigError, _check_key, _first_line, _robot_shorthand, _term_params_key, _whole_number, check_terms,
    cpu_profile, import_user_modules, refuse_repeated_keys)
from horde.train.sac_config import SACConfig
from horde.train.shac_config import SHACConfig

SCHEMA_VERSION = 1
"""Version of the saved config and checkpoint layout; older ones go through :func:`horde.train.checkpoint.migrate`."""

MAX_ITERATIONS = 1_000_000_000
"""The most ``max_iterations`` a run may ask for: a billion iterations take 11 days at a millisecond each and 32
years at a second; to train until stopped, give a large number (``max_iterations=1000000``) and Ctrl-C (which
saves)."""


@dataclass(kw_only=True)
class SymmetryConfig:
    """Left-right symmetry with rsl-rl's symmetry extension; the mirror map comes from the robot config
    (:mod:`horde.envs.symmetry`), so it works on every legged velocity task."""

    augment: bool = False
    """Append the mirrored observations and actions to every mini-batch (doubles the update's batch)."""
    mirror_loss: float = bounded(0.0, ge=0)
    """Weight of the mirror loss: the policy's mean on mirrored observations against its mirrored mean (0: off)."""
    augment_critic: bool = True
    """With ``augment``: the critic learns from the mirrored samples too (rsl-rl's augmentation); false keeps them
    for the actor only (the critic's half of the update on the original samples: a quarter less work)."""

    @property
    def on(self) -> bool:
        return self.augment or self.mirror_loss > 0


@dataclass(kw_only=True)
class PPOConfig:
    """PPO hyperparameters (rsl-rl's PPO) and the actor-critic networks."""

    num_steps_per_env: int = bounded(24, ge=1)
    """Rollout length per env per iteration."""
    learning_rate: float = bounded(1e-3, gt=0)
    """Initial Adam learning rate (adapted when schedule=adaptive)."""
    num_learning_epochs: int = bounded(5, ge=1)
    """Passes over each rollout."""
    num_mini_batches: int = bounded(4, ge=1)
    """Mini-batches per epoch."""
    clip_param: float = bounded(0.2, gt=0)
    """PPO ratio clip."""
    gamma: float = bounded(0.99, gt=0, le=1)
    """Discount factor."""
    lam: float = bounded(0.95, ge=0, le=1)
    """GAE lambda."""
    value_loss_coef: float = bounded(1.0, ge=0)
    """Weight of the value loss."""
    entropy_coef: float = bounded(0.005, ge=0)
    """Weight of the entropy bonus."""
    max_grad_norm: float = bounded(1.0, gt=0)
    """Gradient-norm clip."""
    schedule: str = choice(("adaptive", "fixed"))
    """Learning-rate schedule: adaptive (KL-driven) or fixed."""
    desired_kl: float = bounded(0.01, gt=0)
    """Target KL for the adaptive schedule."""
    random_episode_start: bool = False
    """Start every env at a random point of its first episode (rsl-rl's ``init_at_random_ep_len``), so that episode
    ends are spread over iterations instead of every env sharing one episode clock."""
    symmetry: SymmetryConfig = field(default_factory=SymmetryConfig)
    """Left-right symmetry augmentation and mirror loss (legged velocity tasks)."""
    overlap: bool = False
    """Overlap the update with the next rollout: with ``max_staleness=0`` the critic's half of the update only,
    bit-identical to synchronous PPO (``horde.train.overlap_critic``); with 1 the whole update, the next batch
    collected with the last finished update's parameters (decoupled PPO objective; ``horde.train.overlap``; not
    deterministic)."""
    overlap_learner: str = choice(("auto", "process", "thread"))
    """With overlap, where the update runs: a forked process sharing the networks and rollouts through shared memory
    (the CPU's choice under auto: two threads of one process share its GIL), or a thread (CUDA, on its own stream;
    recurrent policies; distributed runs)."""
    max_staleness: int = bounded(1, ge=0)
    """With overlap: the most updates the acting policy may lag the learner by (checked every iteration); 0 keeps
    PPO on-policy and hides only the critic's update."""
    compile: bool = False
    """Run each mini-batch's forward passes and losses as one ``torch.compile`` graph (fused elementwise work, one
    backward graph; the same mini-batches, clips and adaptive learning rate as rsl-rl's update, float rounding
    apart). The first update compiles (seconds; tens with an empty cache). On the CPU it needs a C++ compiler (g++).
    Feed-forward MLP policies, not with overlap, RND, the mirror loss or distributed runs."""
    rollout_precision: str = choice(("fp32", "bf16", "fp16"))
    """Precision of the actor's forward pass in rollouts and in the update's log-probabilities (fp32 master weights);
    ``horde export`` defaults to it (fp16 bundles for fp16; fp32 otherwise)."""
    policy: ActorCriticConfig = field(default_factory=ActorCriticConfig)
    """Actor and critic networks."""


@dataclass(kw_only=True)
class DistillationConfig:
    """Teacher-student distillation (rsl-rl's ``Distillation``): a student policy learns to act like a trained
    teacher while stepping the envs itself (DAgger-style behaviour cloning on the student's own states)."""

    teacher: str = ""
    """The teacher: a PPO run directory or checkpoint whose actor reads the task's ``teacher`` group (``teacher=``
    on the command line)."""
    num_steps_per_env: int = bounded(24, ge=1)
    """Rollout length per env per iteration."""
    learning_rate: float = bounded(1e-3, gt=0)
    """Adam learning rate of the student."""
    num_learning_epochs: int = bounded(1, ge=1)
    """Passes over each rollout."""
    gradient_length: int = bounded(24, ge=1)
    """Rollout steps per gradient step (the loss is summed over them)."""
    max_grad_norm: float = bounded(1.0, gt=0)
    """Gradient-norm clip."""
    loss_type: str = choice(("mse", "huber"))
    """Behaviour-cloning loss between the student's and the teacher's mean actions."""
    random_episode_start: bool = False
    """Start every env at a random point of its first episode."""
    policy: ActorCriticConfig = field(default_factory=ActorCriticConfig)
    """The student network (its actor part; the critic settings are unused). Exported like any policy."""


@dataclass(kw_only=True)
class TrainConfig:
    """One training run."""

    task: Any = MISSING
    """The task's config (a TaskConfig subclass), chosen with ``task=<name>``."""
    algo: Any = MISSING
    """The learner's config, chosen with ``algo=<name>``."""
    num_envs: int = bounded(1024, ge=1)
    """Parallel envs."""
    device: str = "cpu"
    """Simulation and learning device: cpu, cuda or cuda:N."""
    cpu: dict[str, Any] = field(default_factory=dict)
    """The CPU profile: values a tuned config sets for a run on the CPU (fewer envs, smaller networks: its CPU
    recipe), nested as the config is (``{num_envs: 512, algo: {num_learning_epochs: 3}}``). On ``device=cpu`` each
    applies unless the command line sets that key (``horde train`` says which applied); ``cpu={}`` turns the
    profile off; other devices ignore it."""
    profile: str | None = None
    """The profile that applied and its values (``cpu: num_envs=512 ...``), written by ``compose``; null when none
    did."""
    imports: list[str] = field(default_factory=list)
    """Python modules imported before the config is composed: your own tasks, robots and reward terms
    (``imports=[my_robot_terms]``)."""
    seed: int = bounded(0, ge=0)
    """Seed of torch and of every env's random stream (numpy's generators take no negative seed)."""
    max_iterations: int = bounded(100, ge=1, le=MAX_ITERATIONS)
    """Learning iterations in all: the iteration a run ends at, also on resume (a run at iteration 20 resumed with
    max_iterations=30 trains 10 more)."""
    save_interval: int = bounded(50, ge=1)
    """Write a checkpoint every this many iterations (and always at the end)."""
    run_root: str = "runs"
    """Runs are written to <run_root>/<task>/<YYYY-mm-dd_HH-MM-SS>/."""
    torch_threads: int = bounded(1, ge=1)
    """torch CPU threads (1 is fastest for small networks on a shared machine)."""
    update_threads: int = bounded(0, ge=0)
    """torch CPU threads in the learner's update only (PPO's update, SAC's gradient steps; 0: ``torch_threads``).
    The physics' thread pool is idle then, so the update can use every core; during the rollout torch keeps
    ``torch_threads`` (more would spin against the physics' threads)."""
    log_interval: int = bounded(10, ge=1)
    """Print a progress line every this many iterations when no terminal shows a progress bar."""
    resume: str | None = None
    """Continue exactly from a run directory (its latest checkpoint) or a checkpoint file."""
    deterministic: bool = False
    """Seeded and deterministic torch kernels; CPU runs with the same seed then repeat bit for bit."""
    distributed: bool = False
    """Data-parallel over torch.distributed (launch with torchrun); each rank steps num_envs / world_size envs."""
    dist_backend: str | None = choice((None, "gloo", "nccl", "mpi"))
    """torch.distributed backend; None picks nccl on CUDA and gloo on CPU."""
    memory_check: bool = True
    """Refuse a run whose estimated memory (:mod:`horde.train.memory`: its envs, rollouts and update) exceeds what
    its device has available, in one line, before building anything; false skips the estimate."""
    lib: str = choice(("horde", "rsl-rl", "skrl", "sb3", "rl-games"))
    """Who trains: horde's own PPO/SHAC loop, or another library's PPO on the same env (horde.train.libs; the
    library's own settings, ``num_envs``, ``seed``, ``device`` and ``max_iterations`` from here)."""
    logger: str = choice(("tensorboard", "wandb"))
    """Where the training curves go: TensorBoard event files in the run directory, or those and Weights & Biases
    (rsl-rl's ``WandbLogWriter``; ``pip install "horde[wandb]"``, ``wandb login`` or ``WANDB_MODE=offline``; its
    files in ``<run>/wandb``). lib=horde only."""
    wandb_project: str = "horde"
    """The Weights & Biases project of ``logger=wandb`` (the entity from ``WANDB_USERNAME``, as rsl-rl reads it)."""


RESUMABLE_OVERRIDES = ("max_iterations", "save_interval", "log_interval", "memory_check", "logger", "wandb_project",
                       "resume")
"""Keys a resumed run may change; everything else comes from the checkpoint so that it continues exactly."""


@dataclass(frozen=True)
class Algorithm:
    """A learner ``algo=<name>`` selects: its config dataclass and its trainer (``"module:Class"``, imported when a
    run starts, so that composing a config does not import every learner)."""

    config: type
    learner: str

    def learner_class(self) -> type:
        """The trainer class: ``cls(cfg, task, raw_cfg, run_dir=..., quiet=...)`` with ``learn()``."""
        import importlib

        module, name = self.learner.split(":")
        return getattr(importlib.import_module(module), name)


ALGORITHMS: dict[str, Algorithm] = {
    "ppo": Algorithm(PPOConfig, "horde.train.ppo:PPOTrainer"),
    "shac": Algorithm(SHACConfig, "horde.train.shac:SHACTrainer"),
    "distillation": Algorithm(DistillationConfig, "horde.train.distill:DistillationTrainer"),
    "sac": Algorithm(SACConfig, "horde.train.sac:SACTrainer"),
}
"""Learners by name, selectable with ``algo=<name>``: config and trainer."""


def algorithm_name(cfg: TrainConfig) -> str:
    """The name in :data:`ALGORITHMS` of the learner ``cfg.algo`` configures."""
    return next(name for name, a in ALGORITHMS.items() if type(cfg.algo) is a.config)


def config_dir() -> Path:
    """The packaged ``configs/`` directory."""
    return Path(str(resources.files("horde") / "configs"))


_STORED: dict[tuple[str, str], int] = {}
"""What :func:`_register` has put in Hydra's config store: (group, name) -> id of the node (storing converts a
dataclass to an OmegaConf tree, 20-50 ms each: done once per process, again only for a task registered anew)."""


def _register() -> None:
    from hydra.core.config_store import ConfigStore

    from horde.envs import TASKS

    cs = ConfigStore.instance()
    nodes = [("", "train_schema", TrainConfig), *(("task", n, s.config) for n, s in TASKS.items()),
             *(("algo", n, a.config) for n, a in ALGORITHMS.items())]
    for group, name, node in nodes:
        if _STORED.get((group, name)) != id(node):
            cs.store(group=group or None, name=name, node=node)
            _STORED[(group, name)] = id(node)


def compose(overrides: list[str]) -> tuple[TrainConfig, str, DictConfig]:
    """Compose the run config from ``key=value`` overrides.

    Returns the typed config, the chosen task name, and the resolved OmegaConf tree (saved with the run).
    """
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from hydra.core.override_parser.overrides_parser import OverridesParser

    from horde.envs import task_names

    _register()
    try:
        parsed = OverridesParser.create().parse_overrides(overrides)
    except Exception as exc:  # noqa: BLE001 - hydra's grammar errors are multi-line
        raise ConfigError(f"cannot parse overrides {overrides}: {_first_line(exc)}") from None
    for ov in parsed:
        if ov.key_or_group == "imports":
            import_user_modules(ov.value())
            _register()  # tasks they registered become choices
    resume = [ov for ov in parsed if ov.key_or_group == "resume"]
    if resume and resume[0].value() not in (None, "null"):
        return _compose_resumed(str(resume[0].value()), parsed)
    if any(ov.key_or_group == "robot" for ov in parsed):
        return compose(_robot_shorthand(parsed))
    if any(_term_params_key(ov.key_or_group) and not ov.input_line.startswith(("++", "~")) for ov in parsed):
        return compose([f"++{ov.input_line.lstrip('+')}" if _term_params_key(ov.key_or_group)
                        and not ov.input_line.startswith("~") else ov.input_line for ov in parsed])
    if any(ov.key_or_group == "teacher" for ov in parsed):
        if not any(ov.key_or_group == "algo" and ov.value() == "distillation" for ov in parsed):
            raise ConfigError("teacher= is the teacher of algo=distillation; add algo=distillation")
        return compose([f"algo.teacher={ov.value()}" if ov.key_or_group == "teacher" else ov.input_line
                        for ov in parsed])
    groups = {"task": task_names(), "algo": sorted(ALGORITHMS)}
    group_overrides, value_overrides = [], []
    for ov in parsed:
        key = ov.key_or_group
        if key in groups:
            value = ov.value()
            if not isinstance(value, str) or value not in groups[key]:
                raise ConfigError(f"unknown {key} '{value}'; valid choices: {', '.join(groups[key])}")
            group_overrides.append(ov.input_line)
        else:
            value_overrides.append(ov)

    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=str(config_dir()), version_base="1.3"):
        def check_keys() -> None:
            """Every overridden key exists (one line naming the valid keys where one does not)."""
            base = hydra_compose("train", overrides=group_overrides, return_hydra_config=True)
            for ov in value_overrides:
                key = ov.key_or_group.lstrip("+~")
                if _term_params_key(key):  # task.reward_params.<term>.<param>: the field must exist; the term and
                    _check_key(base, ".".join(key.split(".")[:2]))  # parameter are checked by check_terms
                elif ov.input_line.startswith("+") and "." in key:  # adds a key: its parent must exist (a dict such
                    _check_key(base, key.rsplit(".", 1)[0])        # as task.reward_scales; a term name: at build)
                else:
                    _check_key(base, key)

        if any(ov.input_line.startswith("+") for ov in value_overrides):
            check_keys()  # before composing: Hydra would create a missing parent of an added key
        whole = None
        try:
            cfg = hydra_compose("train", overrides=list(overrides), return_hydra_config=True)
        except Exception as exc:  # noqa: BLE001 - type errors etc. come as multi-line hydra errors
            check_keys()  # an unknown key: named with the valid ones (composing the base only when one failed)
            whole = _whole_number(parsed, exc)
            if whole is None:
                raise ConfigError(_first_line(exc)) from None
    if whole is not None:
        return compose(whole)
    task_name = str(cfg.hydra.runtime.choices.task)
    with open_dict(cfg):
        del cfg["hydra"]
    profile = cpu_profile(cfg, parsed)
    if profile:  # the tuned config's CPU recipe, under what the command line sets
        return compose([*profile, *overrides, f"profile='cpu: {' '.join(profile)}'"])
    try:
        typed: TrainConfig = OmegaConf.to_object(cfg)  # type: ignore[assignment]
    except Exception as exc:  # noqa: BLE001
        raise ConfigError(_first_line(exc)) from None
    validate(typed)
    check_terms(typed.task, task_name)
    return typed, task_name, cfg


def validate(cfg: TrainConfig) -> None:
    """Choices, bounds and the device of a composed config, each failure as one :class:`ConfigError` line."""
    from horde.sim.device import resolve_device

    try:
        check_fields(cfg)
    except FieldError as exc:
        raise ConfigError(str(exc)) from None
    try:
        resolve_device(cfg.device)
    except ValueError as exc:
        raise ConfigError(f"device={cfg.device}: {exc}") from None
    if cfg.logger == "wandb":
        import importlib.util

        if cfg.lib != "horde":
            raise ConfigError(f"logger=wandb: horde's own loop only (lib=horde), not lib={cfg.lib}")
        if importlib.util.find_spec("wandb") is None:
            raise ConfigError('logger=wandb needs the wandb package: pip install "horde[wandb]"')


def _compose_resumed(resume: str, parsed: list) -> tuple[TrainConfig, str, DictConfig]:
    """The saved config of the checkpoint to resume, with only run-length and logging keys overridable."""
    from horde.train.checkpoint import load_checkpoint, resolve_checkpoint

    path = resolve_checkpoint(resume)
    ckpt = load_checkpoint(path)
    bad = [ov.key_or_group for ov in parsed if ov.key_or_group not in RESUMABLE_OVERRIDES]
    if bad:
        raise ConfigError(f"resume continues {path}'s saved config; only {', '.join(RESUMABLE_OVERRIDES[:-1])} can "
                          f"change (got {', '.join(bad)})")
    data = {k: v for k, v in ckpt["config"].items() if k != "algo_name"}
    for ov in parsed:
        value = ov.value()
        if isinstance(value, float) and isinstance(data.get(ov.key_or_group), int):  # max_iterations=1e4
            if not value.is_integer():
                raise ConfigError(f"{ov.input_line}: {ov.key_or_group} takes a whole number")
            value = int(value)
        data[ov.key_or_group] = value
    data["resume"] = str(path)
    try:
        typed = from_container({**data, "algo_name": ckpt["config"].get("algo_name", "ppo")}, ckpt["task"])
    except ConfigError as exc:  # a value given here out of its range: the user's, not the saved config's
        saved, _, why = str(exc).partition("saved config does not match the current schema: ")
        if not saved and any(why.startswith(f"{ov.key_or_group}=") for ov in parsed):
            raise ConfigError(why) from None
        raise
    _left_to_train(resume, int(ckpt["iteration"]), typed.max_iterations,
                   given=any(ov.key_or_group == "max_iterations" for ov in parsed))
    return typed, ckpt["task"], OmegaConf.create(data)


def _left_to_train(resume: str, iteration: int, max_iterations: int, *, given: bool) -> None:
    """A resumed run has iterations left: ``max_iterations`` is the total, so one at or below the run's iteration
    (which would end at once, having done nothing) is refused in one line that says what to pass."""
    if max_iterations > iteration:
        return
    more = max_iterations if given else iteration
    hint = f"pass max_iterations={iteration + more} for {more} more"
    if given:
        raise ConfigError(f"resume={resume}: max_iterations={max_iterations} is the total, and the run is at "
                          f"iteration {iteration}{' already' if max_iterations == iteration else ''}: {hint}")
    raise ConfigError(f"resume={resume}: the run is at iteration {iteration}, the max_iterations={max_iterations} it "
                      f"was given (the total): {hint}")


def expand_sweep(overrides: list[str]) -> list[list[str]]:
    """Hydra sweep syntax (``seed=0,1,2 task=cartpole,pendulum``) -> one override list per run (cartesian product)."""
    import itertools

    from hydra.core.override_parser.overrides_parser import OverridesParser

    try:
        parsed = OverridesParser.create().parse_overrides(overrides)
    except Exception as exc:  # noqa: BLE001
        raise ConfigError(f"cannot parse overrides {overrides}: {_first_line(exc)}") from None
    choices = []
    for ov in parsed:
        if ov.is_sweep_override():
            choices.append([f"{ov.get_key_element()}={v}" for v in ov.sweep_string_iterator()])
        else:
            choices.append([ov.input_line])
    return [list(combo) for combo in itertools.product(*choices)]


def to_container(cfg: DictConfig) -> dict:
    """Plain, resolved dict of a composed config (what runs and checkpoints store)."""
    return OmegaConf.to_container(cfg, resolve=True)  # type: ignore[return-value]


def from_container(data: dict, task_name: str) -> TrainConfig:
    """Rebuild a typed config saved by :func:`to_container`, validating it against the current schema.

    Every command that reads a run (play, export, verify, resume, a distillation teacher) comes here: the run's
    ``imports`` are imported first, so the tasks, robots and terms its plugins register are known again."""
    from horde.envs import get_task

    import_user_modules(data.get("imports"))
    spec = get_task(task_name)
    migrate = getattr(spec.config, "migrate", None)  # a task whose fields moved reads its older configs
    if migrate is not None and isinstance(data.get("task"), dict):
        data = {**data, "task": migrate(data["task"])}
    algo_name = data.get("algo_name", "ppo")
    schema = OmegaConf.structured(TrainConfig)
    schema.task = OmegaConf.structured(spec.config)
    schema.algo = OmegaConf.structured(ALGORITHMS[algo_name].config)
    try:
        merged = OmegaConf.merge(schema, {k: v for k, v in data.items() if k != "algo_name"})
        typed = OmegaConf.to_object(merged)
    except Exception as exc:  # noqa: BLE001
        raise ConfigError(f"saved config does not match the current schema: {_first_line(exc)}") from None
    try:
        check_fields(typed)
    except FieldError as exc:
        raise ConfigError(f"saved config does not match the current schema: {exc}") from None
    return typed  # type: ignore[return-value]
