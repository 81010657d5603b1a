"""The analysis's data: frames and info objects computed from experiments and run records, no drawing.

:mod:`~analysis.data.experiments` (experiments with their hyperparameter specs),
:mod:`~analysis.data.frames` (per-trial tables, learning curves, the cross-task table),
:mod:`~analysis.data.views` (which trials and which accuracy a figure uses),
:mod:`~analysis.data.bins` (heatmap cells), :mod:`~analysis.data.importance` and
:mod:`~analysis.data.marginal` (hyperparameter importances with their bootstrap intervals, and
marginal effects), :mod:`~analysis.data.history` (the optimisation history),
:mod:`~analysis.data.budget` (a search's budget, and where two searches' budgets differ),
:mod:`~analysis.data.selection` (regret of label-free selection),
:mod:`~analysis.data.paper_runs` (the paper's analyses from run records and t-SNE files);
the atlas across tasks: :mod:`~analysis.data.atlas` (groups of comparable searches, their view),
:mod:`~analysis.data.effects` (signed effects), :mod:`~analysis.data.surrogate` and
:mod:`~analysis.data.tunability`, :mod:`~analysis.data.rungs` (trust in early stopping),
:mod:`~analysis.data.coverage`, :mod:`~analysis.data.transfer`.
"""
