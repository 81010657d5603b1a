"""The winner's curse: a search, then its top 3 trials re-run over seeds and picked by the mean.

    python examples/confirmation.py                  # digits (manual: Measured results, Confirmation over seeds)
    python examples/confirmation.py --task P2H

Runs ``tune/search.py`` (20 TPE trials, ASHA) and ``tune/confirm.py --top 3 --seeds 0 1 2``, then
prints ``confirmation.md`` (rank, hyperparameters, the search's single-seed score, each seed,
mean +- std, the confirmed pick).
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402


def body(example: common.Example) -> int:
    example.check_data()
    results, confirmed = example.out / "ray_results", example.out / "confirmed"
    example.run("tune/search.py", "--task", example.task, *example.search_flags(20), *example.data_flags(),
                "--storage-path", results, "--quiet")
    example.run("tune/confirm.py", results, "--top", "2" if example.smoke else "3", *example.seeds(0, 1, 2),
                "--out", confirmed)
    example.show(confirmed / "confirmation.md")
    return 0


if __name__ == "__main__":
    sys.exit(common.main(body, common.parser(__doc__).parse_args(), "confirmation"))
