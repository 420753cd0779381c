"""CUDA code compiled on a machine with no GPU (Warp's NVRTC): every Warp module of horde's that building and
stepping every task loads, for sm_90 (H100: the GPU that trains; a Jetson runs the exported bundle, not Warp).
``make check-cuda`` compiles them for sm_87 (Jetson Orin) too: in a fresh clone's run on 2 cores (2026-11-28) this
test took 137 s with both architectures, 79 s with sm_90 alone.

Newton's and MuJoCo-Warp's modules (about 120 more, their runtime-created kernels included) are compiled by
``make check-cuda`` and by the GPU list's stack pack (``benchmarks/results/gpu/pack_stack.sh``), not here: with an
empty kernel cache they took 516 s of a 2-core machine's test run. Compiled modules land in Warp's kernel cache,
so only the first run on a machine (or after a kernel changes) pays for the compile. See horde.sim.cuda_aot for what a
pass does and does not prove."""

import importlib.util
import sys

import pytest
import warp as wp
from clihelp import run_cli

from horde.sim.cuda_aot import compile_module, loaded_modules

BROKEN = '''
import warp as wp

@wp.func_native("return (float)(__rdtsc() & 1);")  # an x86 intrinsic: clang compiles it, NVRTC cannot
def cpu_tick() -> float: ...

@wp.kernel
def tick(out: wp.array(dtype=float)):
    out[wp.tid()] = cpu_tick()
'''


def _task_names() -> list[str]:
    from horde.envs import task_names

    return task_names()


# one test per task, so that the two pytest workers share the compile (in one test it was 290 s of one worker on a
# 2-core Xeon from an empty cache, 2026-12-07); every task is one of them (the parameters are the registry)
@pytest.mark.parametrize("task", _task_names())
def test_every_horde_module_compiles_for_hopper(task):
    """horde's modules that building and stepping ``task`` loads, on the CPU's default solver in this process
    (horde's Warp modules are the same on MuJoCo-Warp, the solver a GPU runs, apart from
    ``horde.sim.mujoco_batch``'s; building on MuJoCo-Warp compiles its ~110 CPU modules first), with every horde
    module this worker loaded before (found in the kernel cache when another test compiled it). ``make check-cuda``
    builds on MuJoCo-Warp and compiles every loaded module."""
    from horde.train.compile_cuda import compile_tasks

    result = compile_tasks([task], archs=(90,), quiet=True, origin="horde", gpu_solver=False)  # raises on a failure
    built = {b.split()[0] for b in result["tasks"]}
    if not built:
        pytest.skip(f"{task}: its robot's package is not installed")
    assert built == {task}, result["tasks"]
    modules = set(result["modules"])
    if task == "cartpole":  # the C++ block step: its own kernels, no Newton world
        assert any("cartpole" in m for m in modules), modules
    else:
        assert {"horde.sim.world_kernels", "horde.sim.actuation"} & modules, modules
    if task.startswith(("quadruped", "g1-velocity")):
        # the velocity family's kernels are factories (its observation generated from its terms): one module each
        for kernel in ("velocity_observe", "velocity_post_step", "velocity_pre_step"):
            assert any(kernel in m for m in modules), (kernel, modules)


def test_compile_cuda_command_compiles_one_tasks_modules(tmp_path):
    proc = run_cli("compile-cuda", "archs=87,90", "tasks=pendulum", "origin=horde", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert proc.stdout.splitlines()[0] == "built pendulum", proc.stdout
    summary = next(ln for ln in proc.stdout.splitlines() if ln.startswith("compiled "))
    assert "Warp modules of horde for sm_87, sm_90: 0 failure(s)" in summary, summary
    assert int(summary.split()[1]) >= 2, summary  # the pendulum's own and the episode bookkeeping's


def test_a_kernel_only_the_cpu_compiles_is_named_with_the_compiler_message(tmp_path):
    path = tmp_path / "scratch_cpu_only.py"
    path.write_text(BROKEN)
    spec = importlib.util.spec_from_file_location("scratch_cpu_only", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["scratch_cpu_only"] = mod
    spec.loader.exec_module(mod)
    out = wp.zeros(2, dtype=float, device="cpu")
    wp.launch(mod.tick, dim=2, outputs=[out], device="cpu")  # runs on the CPU
    module = wp.get_module("scratch_cpu_only")
    assert module in loaded_modules()
    assert loaded_modules("scratch_cpu_only") == [module] and module not in loaded_modules("horde")
    assert loaded_modules("scratch_cpu") == []  # a package prefix, not a string prefix
    failures = compile_module(module, (87, 90), module_dir=tmp_path / "aot")
    assert [f.arch for f in failures] == [87, 90]
    for f in failures:
        assert f.module == "scratch_cpu_only" and f.origin == "scratch_cpu_only"
        assert '"__rdtsc" is undefined' in f.message, f.message
        assert str(f).startswith("scratch_cpu_only (scratch_cpu_only) for sm_")


def test_compile_cuda_rejects_an_unknown_task_in_one_line(tmp_path):
    proc = run_cli("compile-cuda", "tasks=cartpol", cwd=tmp_path)
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip() and not ln.startswith("Warp CUDA warning")]
    assert proc.returncode == 2 and len(lines) == 1 and "valid tasks: " in lines[0], proc.stderr


def test_compile_cuda_rejects_an_architecture_nvrtc_lacks(tmp_path):
    proc = run_cli("compile-cuda", "archs=12", "tasks=pendulum", cwd=tmp_path)
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert proc.returncode == 1 and len(lines) == 1, proc.stderr
    assert "archs=12: NVRTC in this Warp build compiles for " in lines[0] and " 87," in lines[0], lines[0]
