"""``python -m horde <command> ...`` is ``horde <command> ...``: the CLI without its console script (handy under
torchrun: ``torchrun --nproc_per_node 2 -m horde train ...``)."""

import sys

from horde.cli import main

if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
