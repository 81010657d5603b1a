"""Plotly figure builders (the dashboard's): each draws one info object or frame of :mod:`analysis.data`.

:mod:`~analysis.charts.heatmap`, :mod:`~analysis.charts.curves`, :mod:`~analysis.charts.parallel`,
:mod:`~analysis.charts.importance`, :mod:`~analysis.charts.marginal`, :mod:`~analysis.charts.paper`,
:mod:`~analysis.charts.atlas`;
their shared style is :mod:`~analysis.charts.style`. The matplotlib renderings of the same info
objects are :mod:`analysis.mpl`.
"""
