"""``algo=sac`` through horde's run loop: the replay ring filled from the env core (pre-reset observations at
time-outs), exact resume with the ring saved beside the checkpoint (and an empty ring when it is not there), and the
command line: ``horde train task=pendulum algo=sac``, then ``horde play`` and ``horde export`` of that run.

No learning bar here (a bar needs 8 seeds); on the 2-core EPYC one pendulum run (64 envs, ``algo.batch_size=512
algo.num_updates=4``) went from -985 at 40 s to -146 at 124 s (one seed, 2026-12-06)."""

import json

import pytest
import torch
from clihelp import run_cli, run_main

from horde.train.config import compose
from horde.train.sac import REPLAY_FILE, SACTrainer

SMALL = ["task=pendulum", "algo=sac", "num_envs=16", "algo.num_steps_per_env=4", "algo.batch_size=64",
         "algo.buffer_length=8", "algo.learning_starts=3", "algo.num_atoms=11", "algo.policy.actor_hidden_dims=[32]",
         "algo.policy.critic_hidden_dims=[32,32]", "save_interval=1000"]


def _train(root, overrides, **kw) -> SACTrainer:
    cfg, task, raw = compose([f"run_root={root}", *SMALL, *overrides])
    trainer = SACTrainer(cfg, task, raw, quiet=True, **kw)
    trainer.learn()
    return trainer


def _states(t: SACTrainer) -> dict[str, torch.Tensor]:
    out = {}
    for name, module in (("actor", t.actor), ("critic", t.critic), ("target", t.target_critic),
                         ("scale", t.return_scale)):
        out.update({f"{name}.{k}": v for k, v in module.state_dict().items()})
    for name, opt in (("actor_opt", t.actor_opt), ("critic_opt", t.critic_opt)):
        for i, s in opt.state_dict()["state"].items():
            out.update({f"{name}.{i}.{k}": v for k, v in s.items() if torch.is_tensor(v)})
    out.update({f"ring.{k}": v for k, v in t.ring.state_dict().items() if torch.is_tensor(v)})
    out["log_alpha"] = t.log_alpha.detach()
    out["env"] = t.core.state
    return out


def test_the_ring_holds_pre_reset_observations_at_time_outs(tmp_path):
    cfg, task, raw = compose([f"run_root={tmp_path}", *SMALL, "task.episode_length=5", "algo.buffer_length=16",
                              "algo.learning_starts=100", "max_iterations=1"])
    t = SACTrainer(cfg, task, raw, quiet=True)
    for _ in range(7):
        t._step()
        if t.ring.pos == 5:  # the step that ended every episode: the envs have reset already
            final, fresh = t.core.final_obs.clone(), t.core.obs.clone()
    ring = t.ring
    assert ring.truncated[4].all() and not ring.truncated[:4].any() and not ring.terminated.any()
    torch.testing.assert_close(ring.next_obs[4], final)
    assert torch.equal(ring.obs[5], fresh) and not torch.allclose(ring.next_obs[4], ring.obs[5])
    for k in (0, 1, 2, 3, 5):  # within an episode the next observation is the next step's
        assert torch.equal(ring.next_obs[k], ring.obs[k + 1])


def test_resume_continues_exactly_with_the_saved_ring(tmp_path):
    straight = _train(tmp_path / "a", ["max_iterations=5", "seed=3"])
    first = _train(tmp_path / "b", ["max_iterations=3", "seed=3"])
    assert (first.run_dir / REPLAY_FILE).is_file() and first.ring.count == 12 and first.updates > 0
    cfg, task, raw = compose([f"resume={first.run_dir}", "max_iterations=5"])
    resumed = SACTrainer(cfg, task, raw, quiet=True)
    assert resumed.iteration == 3 and resumed.ring.count == 12
    resumed.learn()
    a, b = _states(straight), _states(resumed)
    assert a.keys() == b.keys()
    for k in a:
        assert torch.equal(a[k], b[k]), k
    assert (straight.updates, straight.env_steps) == (resumed.updates, resumed.env_steps)


def test_resume_without_the_ring_refills_an_empty_one(tmp_path):
    first = _train(tmp_path, ["max_iterations=2", "seed=1"])
    (first.run_dir / REPLAY_FILE).unlink()
    cfg, task, raw = compose([f"resume={first.run_dir}", "max_iterations=3"])
    with pytest.warns(UserWarning, match="replay ring starts empty"):
        resumed = SACTrainer(cfg, task, raw, quiet=True)
    assert resumed.ring.count == 0 and resumed.env_steps == 0
    resumed.learn()
    assert resumed.ring.count == 4 and resumed.iteration == 3


def test_horde_train_play_and_export_a_sac_run(tmp_path):
    proc = run_cli("train", "task=pendulum", "algo=sac", "max_iterations=3", f"run_root={tmp_path}", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "SAC actor" in proc.stdout and "it 3/3" in proc.stdout and "eta" in proc.stdout
    (run,) = (tmp_path / "pendulum").iterdir()
    assert (run / "model_3.pt").is_file() and (run / REPLAY_FILE).is_file()
    assert list(run.glob("events.out.tfevents.*")), "TensorBoard curves"
    assert run_main("play", f"run={run}", "episodes=4") == 0
    assert run_main("export", f"run={run}", "episodes=64", "sim2sim_episodes=0") == 0
    (bundle,) = (run / "exported").iterdir()
    spec = json.loads((bundle / "policy.json").read_text())
    assert spec["onnx"]["action_squash"] == "tanh" and "Gaussian mean -> tanh -> " in spec["onnx"]["graph"]
    report = json.loads((bundle / "parity_report.json").read_text())
    assert report["passed"], report


def test_update_threads_run_the_gradient_steps_and_the_steps_keep_torch_threads(tmp_path):
    """``update_threads=2``: every gradient step runs on 2 torch threads, acting and stepping on ``torch_threads``
    (1), and the count is back to 1 after the iteration."""
    cfg, task, raw = compose([f"run_root={tmp_path}", *SMALL, "max_iterations=2", "update_threads=2"])
    trainer = SACTrainer(cfg, task, raw, quiet=True)
    seen = {"update": set(), "step": set()}
    update, step = trainer._update, trainer._step

    def counted_update():
        seen["update"].add(torch.get_num_threads())
        return update()

    def counted_step():
        seen["step"].add(torch.get_num_threads())
        return step()

    trainer._update, trainer._step = counted_update, counted_step
    trainer.learn()
    assert seen == {"update": {2}, "step": {1}}
    assert torch.get_num_threads() == 1
