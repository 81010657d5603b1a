"""The newcomer's path on a task: search, export the best config, final runs over seeds, dashboard.

    python examples/newcomer_search.py                   # digits (manual: Measured results, Embedded task)
    python examples/newcomer_search.py --task P2I --data-root DIR   # a paper task, on a GPU when there is one

A paper task whose dataset is not under the data root exits 2 and says what is missing
(``python -m ssot.data check``). Runs ``tune/search.py`` (20 TPE trials, ASHA; 50 on a paper task), ``tune/export.py``, ``tune/final.py`` (seeds 0 1
2 of the best config, a table beside the paper's accuracies) and ``analysis/sensitivity.py`` (the
dashboard and its figures), then prints the final table and the importances the dashboard shows.
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402


def body(example: common.Example) -> int:
    example.check_data()
    results, configs, final = example.out / "ray_results", example.out / "configs", example.out / "final"
    trials = 20 if example.task in common.EMBEDDED else 50
    example.run("tune/search.py", "--task", example.task, *example.search_flags(trials), *example.data_flags(),
                "--storage-path", results, "--quiet")
    example.run("tune/export.py", results, "--out", configs)
    example.run("tune/final.py", configs, *example.seeds(0, 1, 2), "--out", final,
                *(["--epochs", "1"] if example.smoke else []))
    example.run("analysis/sensitivity.py", results, "--no-images")
    example.show(final / "results.md")
    return 0


if __name__ == "__main__":
    sys.exit(common.main(body, common.parser(__doc__).parse_args(), "newcomer_search"))
