"""`python -m jitflow ...`: the `jitflow` command (jitflow/cli.py) without its script."""
import sys

from jitflow.cli import main

if __name__ == "__main__":
    sys.exit(main())
