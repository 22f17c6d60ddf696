"""``python -m dgsr``: the ``dgsr`` command, for environments without the console script."""

import sys

from dgsr.cli import main

if __name__ == "__main__":
    sys.exit(main())
