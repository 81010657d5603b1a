"""Plotly figure builders (the dashboard's): each draws one info object or frame of :mod:`analysis.data`.

:mod:`~analysis.plotly.heatmap`, :mod:`~analysis.plotly.curves`, :mod:`~analysis.plotly.parallel`,
:mod:`~analysis.plotly.importance`, :mod:`~analysis.plotly.marginal`, :mod:`~analysis.plotly.paper`;
their shared style is :mod:`~analysis.plotly.style`. The matplotlib renderings of the same info
objects are :mod:`analysis.mpl`.
"""
