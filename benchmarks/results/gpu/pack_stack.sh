#!/bin/bash
# Pack horde's stack for the GPU machine (Python 3.12, torch 2.11 preinstalled, no registry) into .whl/ (git-ignored):
# site.part.aa/ab/ac (py3.12 wheels unpacked, xz, split under the 64 MiB a call may carry), extra.tar.xz (pure-Python
# packages without a wheel or not in the image, from .venv) and wcache90.tar.xz (the sm_90 CUBINs that
# `horde compile-cuda archs=90` builds here, with no GPU). Takes ~5 min on 2 cores. Then, with the machine kept warm
# (30 s idle release: make the calls back to back):
#   run carry=[.whl/site.part.aa]  "mkdir -p /tmp/w && cp .whl/site.part.aa /tmp/w/"
#   run carry=[.whl/site.part.ab]  "mkdir -p /tmp/w && cp .whl/site.part.ab /tmp/w/"
#   run carry=[.whl/site.part.ac, .whl/wcache90.tar.xz, .whl/extra.tar.xz]  (unpack, then learning_gpu.sh; see README.md)
set -e
cd "$(dirname "$0")/../../.."
V=.venv/bin/python; SP=.venv/lib/python3.11/site-packages
mkdir -p .whl/w; grep -qx '/.whl/' .git/info/exclude 2>/dev/null || echo '/.whl/' >> .git/info/exclude
ver() { $V -c "import importlib.metadata as m; print(m.version('$1'))"; }
PKGS=""; for p in warp-lang newton mujoco mujoco-warp rsl-rl-lib tensordict gymnasium farama-notifications hydra-core \
  omegaconf mjlab warp-nn trimesh glfw etils; do PKGS="$PKGS $p==$(ver $p)"; done
$V -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp -d .whl/w \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
  --platform manylinux2014_x86_64 --platform any $PKGS
S=$(mktemp -d); (cd $S && for w in $OLDPWD/.whl/w/*.whl; do unzip -q -o $w; done
  rm -rf warp/examples warp/tests mjlab/asset_zoo/robots/unitree_go1 mjlab/asset_zoo/robots/i2rt_yam
  find . -name __pycache__ -type d -prune -exec rm -rf {} +; tar -c . | xz -7 -T2) > .whl/site.tar.xz; rm -rf $S
(cd .whl && rm -f site.part.* && split -b 44M site.tar.xz site.part. && rm site.tar.xz)
(cd $SP && tar -c --exclude=__pycache__ antlr4 antlr4_python3_runtime-*.dist-info pyvers pyvers-*.dist-info git \
  gitpython-*.dist-info gitdb gitdb-*.dist-info smmap smmap-*.dist-info websockets websockets-*.dist-info OpenGL \
  pyopengl-*.dist-info | xz -6 -T2) > .whl/extra.tar.xz
.venv/bin/horde compile-cuda archs=90 > /dev/null
(cd ~/.cache/warp/$(ver warp-lang) && for f in $(find . -name "*.sm90.cubin"); do echo $f; m=${f%.sm90.cubin}.meta
  [ -f $m ] && echo $m; done | tar -c -T - | xz -6 -T2) > .whl/wcache90.tar.xz
ls -la .whl
