"""A paper task end to end: check its data, search, export, final runs beside the paper's accuracy.

    python examples/paper_task.py --task P2I --data-root DIR      # ImageCLEF P -> I, on a GPU when there is one
    python examples/paper_task.py --task A2W --data-root DIR --smoke-test

Exits 2 and says what is missing when the task's dataset is not under the data root
(``python -m ssot.data check``); otherwise runs ``tune/search.py`` (50 trials), ``tune/export.py``
and ``tune/final.py --seeds 0 1 2``, and prints ``results.md`` (mean +- std beside the paper).
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402


def body(example: common.Example) -> int:
    example.check_data()
    results, configs, final = example.out / "ray_results", example.out / "configs", example.out / "final"
    example.run("tune/search.py", "--task", example.task, *example.search_flags(50), *example.data_flags(),
                "--storage-path", results, "--verbose", "0")
    example.run("tune/export.py", results, "--out", configs)
    example.run("tune/final.py", configs, *example.seeds(0, 1, 2), "--out", final,
                *(["--epochs", "1"] if example.smoke else []))
    example.show(final / "results.md")
    return 0


if __name__ == "__main__":
    sys.exit(common.main(body, common.parser(__doc__, default_task="P2I").parse_args(), "paper_task"))
