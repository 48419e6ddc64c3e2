"""Pools the release-gap runs (alternate.sh) side by side."""
import os
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(here))
import alternated  # noqa: E402

for run, builds in [("r1", ["head", "relgap"]), ("r2", ["head", "relprobe", "relgap"]),
                    ("r3", ["head", "relnow", "relcur"]), ("r4", ["head", "nofair"])]:
    print(f"== {run}")
    alternated.table(alternated.from_dir(os.path.join(here, run)), builds)
