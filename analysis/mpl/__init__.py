"""Matplotlib figure builders (for papers: PDF/PNG, no browser needed), over the same info objects
as :mod:`analysis.charts`: :mod:`~analysis.mpl.figures` (heatmaps, learning curves) and
:mod:`~analysis.mpl.paper` (OT solvers, class weights, feature maps), :mod:`~analysis.mpl.atlas` (the atlas)."""
