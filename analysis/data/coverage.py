"""Coverage: where the sampler searched the space of one task.

Every trial a search proposed is a point of its space, whatever became of it (early-stopped,
diverged and errored trials were proposed too). Per searched hyperparameter, this module gives
the values proposed, each with its accuracy in the view the atlas reads (NaN for a trial outside
it), and how many proposals fell in each cell of the hyperparameter's heatmap axis
(:func:`analysis.data.bins.axis_bins`: one cell per decade of a log axis, per choice or grid
value): the share of cells holding at least one proposal says how much of the range the search
looked at, the counts say where it insisted (a TPE search concentrates around its good trials;
a random search spreads evenly).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis.data.bins import AxisBins, axis_bins
from analysis.data.experiments import ParamSpec

__all__ = ["CoverageInfo", "coverage_infos"]


@dataclass(frozen=True)
class CoverageInfo:
    """Where one hyperparameter was searched.

    Attributes
    ----------
    param : str
    bins : AxisBins
        Its cells.
    counts : numpy.ndarray
        Proposals per cell.
    values : numpy.ndarray
        The value of every proposal (one per trial).
    acc : numpy.ndarray
        Each proposal's accuracy in the view (NaN for a trial outside it).
    n : int
        Proposals (trials).
    """

    param: str
    bins: AxisBins
    counts: np.ndarray
    values: np.ndarray
    acc: np.ndarray
    n: int

    @property
    def n_covered(self) -> int:
        """The cells holding at least one proposal (of ``len(counts)``)."""
        return int((self.counts > 0).sum())


def coverage_infos(table: pd.DataFrame, results: pd.DataFrame, space: Mapping[str, ParamSpec]) -> list[CoverageInfo]:
    """The coverage of every searched hyperparameter of ``space``.

    Parameters
    ----------
    table : pandas.DataFrame
        Every trial proposed (:func:`analysis.data.frames.trial_table`).
    results : pandas.DataFrame
        The trials of the view, with ``acc`` (:func:`analysis.data.views.view_results`).
    space : Mapping of str to ParamSpec
    """
    acc = table["trial_id"].map(results.set_index("trial_id")["acc"]).to_numpy(dtype=float)
    infos = []
    for param, spec in space.items():
        if not spec.searched or param not in table:
            continue
        values = table[param]
        bins = axis_bins(spec, values)
        cells = bins.assign(values)
        counts = np.bincount(cells[cells >= 0], minlength=len(bins))
        infos.append(CoverageInfo(param, bins, counts, values.to_numpy(), acc, len(table)))
    return infos
