"""Label-free validators against the oracle: three searches, the regret of each validator's pick.

    python examples/selection.py                     # digits (manual: Measured results, Label-free selection on digits)

Runs three TPE searches (seeds 0 1 2, 20 trials each, every trial to its last epoch, 10 % of the
source held out) and ``analysis/selection.py`` (prints ``selection.md``), then a search that
never reads a target label (``--metric mixval``): its ``best_config.json`` is the label-free pick.
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402


def body(example: common.Example) -> int:
    example.check_data()
    results = example.out / "sel_results"
    for seed in (0,) if example.smoke else (0, 1, 2):
        example.run("tune/search.py", "--task", example.task, *example.search_flags(20), "--seed", seed, "--no-early-stop",
                    "--set", "source_holdout=0.1", *example.data_flags(), "--storage-path", results,
                    "--name", f"{example.task}-seed{seed}", "--quiet")
    example.run("analysis/selection.py", results, "--out", example.out / "selection")
    example.show(example.out / "selection" / "selection.md")
    example.run("tune/search.py", "--task", example.task, *example.search_flags(20), "--seed", "0", "--metric", "mixval",
                "--set", "source_holdout=0.1", *example.data_flags(), "--storage-path", example.out / "label_free",
                "--quiet")
    return 0


if __name__ == "__main__":
    sys.exit(common.main(body, common.parser(__doc__).parse_args(), "selection"))
