"""`ssot/results/paper.py`: the paper's reported accuracies."""
from __future__ import annotations

from pathlib import Path

from ssot.results import paper as paper_numbers


def test_paper_accuracy_comes_from_the_installed_package():
    import ssot

    assert paper_numbers.paper_accuracy_path() == Path(ssot.__file__).parent / "paper_accuracy.csv"
    paper = paper_numbers.read_paper_accuracy()
    assert len(paper) == 26 and paper.loc["A2W", "ssot_acc"] == 97.3
