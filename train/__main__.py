"""``python -m horde.train <overrides>`` is ``horde train <overrides>`` (handy under torchrun)."""

import sys

from horde.train.cli import main

if __name__ == "__main__":
    raise SystemExit(main(["train", *sys.argv[1:]]))
