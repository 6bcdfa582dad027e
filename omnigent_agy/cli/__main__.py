"""``python -m omnigent_agy.cli``: the `omnigent-agy` command run by this interpreter."""

import sys

from omnigent_agy.cli import main

if __name__ == "__main__":  # importing it (tests that load every module) runs nothing
    sys.exit(main())
