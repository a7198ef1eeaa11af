"""The ``onyx`` console script: runs the command-line tool bundled in the package."""
import os
import sys


def main() -> None:
    tool = os.path.join(os.path.dirname(__file__), "bin", "onyx")
    if not os.access(tool, os.X_OK):
        sys.exit(f"onyx: the command-line tool is missing from the package ({tool})")
    os.execv(tool, [tool] + sys.argv[1:])
