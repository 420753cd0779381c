"""CUDA code compiled on a machine with no GPU (Warp's NVRTC): every Warp module that building and stepping every
task loads, Newton's and MuJoCo-Warp's runtime-created kernels included, for sm_87 (Jetson Orin) and sm_90 (H100).

Compiled modules land in Warp's kernel cache, so only the first run on a machine (or after a kernel changes) pays
for the compile: about 3 minutes on 2 cores. See horde.sim.cuda_aot for what a pass does and does not prove."""

import importlib.util
import sys

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


def test_every_loaded_module_compiles_for_orin_and_hopper(tmp_path):
    """Each module once, for sm_87 and sm_90 in turn (``spread=true``): every module and both architectures in half
    the time of both for every module (11 minutes with an empty kernel cache beside a second pytest worker);
    ``horde compile-cuda archs=87,90`` does the full product."""
    proc = run_cli("compile-cuda", "archs=87,90", "spread=true", cwd=tmp_path, timeout=1800)
    assert proc.returncode == 0, proc.stderr[-4000:]
    summary = next(ln for ln in proc.stdout.splitlines() if ln.startswith("compiled "))
    count = int(summary.split()[1])
    assert "for sm_87, sm_90 in turn: 0 failure(s)" in summary, summary
    assert count >= 80, f"too few modules loaded ({count}): did the tasks build? {proc.stdout[-2000:]}"
    built = [ln for ln in proc.stdout.splitlines() if ln.startswith("built ")]
    from horde.envs import task_names

    assert {ln.split()[1] for ln in built} == set(task_names()), built


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
