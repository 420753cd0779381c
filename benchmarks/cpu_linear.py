"""One linear layer on the CPU through torch's default BLAS (MKL on x86 wheels) against torch's oneDNN kernel
(``horde.train.cpu_linear``), the shapes of the quadruped's update, on 1 and 2 threads.

    python benchmarks/cpu_linear.py [--rows 3072] [--repeats 200]

Prints microseconds per call (median of 5 windows), GFLOP/s and the largest difference between the two outputs.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from horde.train import cpu_linear


def _us(f, repeats: int) -> float:
    for _ in range(10):
        f()
    windows = []
    for _ in range(5):
        t = time.perf_counter()
        for _ in range(repeats):
            f()
        windows.append((time.perf_counter() - t) / repeats * 1e6)
    return statistics.median(windows)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=3072)
    ap.add_argument("--repeats", type=int, default=200)
    args = ap.parse_args()
    if not cpu_linear.available("cpu"):
        print("cpu_linear: this torch build has no oneDNN linear kernel")
        return 1
    for threads in (1, 2):
        torch.set_num_threads(threads)
        for fan_in, fan_out in ((48, 128), (128, 128), (128, 64), (64, 32)):
            x, w, b = torch.randn(args.rows, fan_in), torch.randn(fan_out, fan_in), torch.randn(fan_out)
            blas = _us(lambda: torch.nn.functional.linear(x, w, b), args.repeats)
            dnn = _us(lambda: cpu_linear.linear(x, w, b), args.repeats)
            diff = (cpu_linear.linear(x, w, b) - torch.nn.functional.linear(x, w, b)).abs().max().item()
            flop = 2 * args.rows * fan_in * fan_out
            print(f"threads {threads}  [{args.rows}, {fan_in}] x [{fan_in}, {fan_out}]  torch {blas:7.0f} us "
                  f"({flop / blas / 1e3:5.0f} GFLOP/s)  oneDNN {dnn:7.0f} us ({flop / dnn / 1e3:5.0f} GFLOP/s)  "
                  f"max diff {diff:.1e}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
