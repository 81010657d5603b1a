"""The sensitivity dashboard: one self-contained HTML page and static figures for papers.

:func:`build_dashboard` (:mod:`analysis.dashboard.page`) assembles the page from the sections of
each experiment (:mod:`analysis.dashboard.sections`, :mod:`analysis.dashboard.rungs`,
:mod:`analysis.dashboard.trials_table`, :mod:`analysis.dashboard.regret`), the paper's other
analyses (:mod:`analysis.dashboard.paper_section`), the atlas across tasks
(:mod:`analysis.dashboard.atlas`, also the page of ``analysis/atlas.py``) and the page template
(:mod:`analysis.dashboard.templates`: Jinja2, autoescaped); :mod:`analysis.dashboard.static` and
:mod:`analysis.dashboard.images` write the static figures. ``python analysis/sensitivity.py``
is its command.
"""

from analysis.dashboard.images import export_images
from analysis.dashboard.page import (
    DASHBOARD_FILE,
    FIGURES_DIR,
    DashboardResult,
    build_dashboard,
    figures_folder,
    input_paths,
    output_paths,
)

__all__ = ["DASHBOARD_FILE", "FIGURES_DIR", "DashboardResult", "build_dashboard", "export_images", "figures_folder", "input_paths",
           "output_paths"]
