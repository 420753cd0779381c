"""Teacher-student distillation (issue #15): ``algo=distillation teacher=<run>`` on rsl-rl's Distillation."""

from __future__ import annotations

import pytest
import torch

from horde.train.config import ConfigError, compose

SMALL = ["num_envs=8", "algo.num_steps_per_env=4", "algo.policy.actor_hidden_dims=[32,32]"]


@pytest.fixture(scope="module")
def teacher_run(tmp_path_factory) -> str:
    from horde.train.ppo import PPOTrainer

    root = tmp_path_factory.mktemp("teacher")
    cfg, name, raw = compose(["task=quadruped-rough-perceptive", "max_iterations=1", f"run_root={root}", *SMALL,
                              "algo.policy.critic_hidden_dims=[32,32]"])
    trainer = PPOTrainer(cfg, name, raw, quiet=True)
    trainer.learn()
    return str(trainer.run_dir)


def _student(teacher: str, root, *extra: str):
    from horde.train.distill import DistillationTrainer

    cfg, name, raw = compose(["task=quadruped-rough-student", "algo=distillation", f"teacher={teacher}",
                              "max_iterations=2", "algo.gradient_length=4", f"run_root={root}", *SMALL, *extra])
    return DistillationTrainer(cfg, name, raw, quiet=True)


def test_distillation_runs_two_iterations_from_a_teacher_checkpoint_and_exports_the_student(teacher_run, tmp_path):
    from horde.deploy import load_policy

    trainer = _student(teacher_run, tmp_path)
    core = trainer.core
    teacher_policy, _, _, _ = load_policy(teacher_run)
    obs = trainer.env.get_observations()
    assert set(obs.keys()) == {"policy", "critic", "teacher"}
    # the teacher group is the observations without noise; the student's own group is noisy
    assert torch.equal(obs["teacher"], core.critic_obs[:, :core.obs_dim])
    assert not torch.allclose(obs["teacher"], obs["policy"])
    with torch.no_grad():  # the loaded teacher is the PPO run's deterministic actor
        assert torch.allclose(trainer.alg.teacher(obs), teacher_policy(obs["teacher"]), atol=1e-5)
    teacher0 = {k: v.clone() for k, v in trainer.alg.teacher.state_dict().items()}
    student0 = {k: v.clone() for k, v in trainer.alg.student.state_dict().items()}
    summary = trainer.learn()
    assert summary["iterations"] == 2
    after = trainer.alg.teacher.state_dict()
    assert all(torch.equal(teacher0[k], after[k]) for k in teacher0)  # the teacher never learns
    assert any(not torch.equal(student0[k], v) for k, v in trainer.alg.student.state_dict().items())
    student, ckpt, cfg, _ = load_policy(str(trainer.run_dir))
    assert ckpt["obs_dim"] == core.obs_dim and cfg.algo.teacher == teacher_run
    with torch.no_grad():
        assert torch.allclose(student(obs["policy"]), trainer.alg.student(obs), atol=1e-5)


def test_distillation_resumes_where_it_stopped(teacher_run, tmp_path):
    from horde.train.distill import DistillationTrainer

    first = _student(teacher_run, tmp_path)
    first.learn()
    cfg, name, raw = compose([f"resume={first.run_dir}", "max_iterations=3"])
    again = DistillationTrainer(cfg, name, raw, quiet=True)
    assert again.iteration == 2 and again.run_dir == first.run_dir
    for key, value in first.alg.student.state_dict().items():
        assert torch.equal(value, again.alg.student.state_dict()[key])


def test_distillation_mistakes_are_one_line(teacher_run, tmp_path):
    from horde.train.distill import DistillationTrainer

    with pytest.raises(ConfigError, match=r"^teacher= is the teacher of algo=distillation; add algo=distillation$"):
        compose(["task=quadruped-rough-student", f"teacher={teacher_run}"])
    with pytest.raises(ConfigError, match=r"^algo=distillation needs teacher=<run dir or checkpoint of a PPO run>$"):
        cfg, name, raw = compose(["task=quadruped-rough-student", "algo=distillation", f"run_root={tmp_path}"])
        DistillationTrainer(cfg, name, raw, quiet=True)
    with pytest.raises(ConfigError, match=r"^teacher=/nonexistent: "):
        cfg, name, raw = compose(["task=quadruped-rough-student", "algo=distillation", "teacher=/nonexistent"])
        DistillationTrainer(cfg, name, raw, quiet=True)
    with pytest.raises(ConfigError, match=r"^task 'quadruped' has no teacher group to distill from"):
        cfg, name, raw = compose(["task=quadruped", "algo=distillation", f"teacher={teacher_run}", *SMALL,
                                  f"run_root={tmp_path}"])
        DistillationTrainer(cfg, name, raw, quiet=True)
