# Sourced by the GPU scripts beside it: puts horde's stack on the path. Python: the one on PATH when it imports
# horde's stack; otherwise the py3.12 stack that the three carry calls left in /tmp/w/site.part.* (pack_stack.sh),
# with the sm_90 CUBINs of .whl/wcache90.tar.xz when carried, and the repository as the package `horde`.
if ! python -c "import torch, warp, newton, mujoco_warp, rsl_rl" 2>/dev/null; then
  if ls /tmp/w/site.part.* >/dev/null 2>&1 && [ ! -d /tmp/site/warp ]; then
    mkdir -p /tmp/site /tmp/wc/1.19.0
    cat /tmp/w/site.part.* | xz -dc -T0 | tar -x -C /tmp/site || echo "UNPACK site FAILED"
    [ -f .whl/wcache90.tar.xz ] && { xz -dc .whl/wcache90.tar.xz | tar -x -C /tmp/wc/1.19.0 || echo "UNPACK cache FAILED"; }
    [ -f .whl/extra.tar.xz ] && { xz -dc .whl/extra.tar.xz | tar -x -C /tmp/site || echo "UNPACK extra FAILED"; }
  fi
  export PYTHONPATH=/tmp/hp:/tmp/site:$PYTHONPATH WARP_CACHE_PATH=${WARP_CACHE_PATH:-/tmp/wc}
fi
if ! python -c "import horde" 2>/dev/null; then  # the repository root is the package
  mkdir -p /tmp/hp && ln -sfn "$PWD" /tmp/hp/horde && export PYTHONPATH=/tmp/hp:$PYTHONPATH
fi
export PYTHONFAULTHANDLER=1 PYTHONUNBUFFERED=1
if ! python -c "import torch, warp, newton, mujoco_warp, rsl_rl, horde" 2>/dev/null; then
  echo "horde's stack is not on this machine (a fresh one after 30 s idle?): carry .whl/site.part.aa, .ab, then .ac with" \
       "wcache90.tar.xz and extra.tar.xz (README.md here), back to back"
  return 1 2>/dev/null || exit 1
fi
