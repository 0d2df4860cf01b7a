"""``python -m eval``: see :mod:`eval.cli`."""

import sys

from eval.cli import dispatch

if __name__ == "__main__":
    sys.exit(dispatch(sys.argv[1:]))
