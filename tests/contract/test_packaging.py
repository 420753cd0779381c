"""The package installs as ``horde.*`` with its configs, and bare top-level names do not leak."""

import subprocess
import sys
from importlib import resources


def test_subpackages_import_under_horde():
    import horde
    import horde.deploy
    import horde.envs
    import horde.policies
    import horde.sim
    import horde.train

    assert horde.__version__
    for mod in (horde.sim, horde.envs, horde.policies, horde.train, horde.deploy):
        assert mod.__all__, mod.__name__


def test_configs_ship_inside_the_package():
    root = resources.files("horde") / "configs"
    assert (root / "train.yaml").is_file()
    assert (root / "tuned" / "cartpole_ppo.yaml").is_file()


def test_bare_names_are_not_importable(tmp_path):
    code = "import importlib.util as u; print([n for n in ('sim','envs','train','deploy','policies') if u.find_spec(n)])"
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
