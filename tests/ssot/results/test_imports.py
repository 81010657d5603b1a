"""Reading results, configs and the dataset registry loads neither torch nor Ray, nor do the parsers of the data, feature-cache
and feature-map commands; the analysis loads nothing of tune."""
from __future__ import annotations

import subprocess
import sys

import pytest

from tests.fixtures import REPO


@pytest.mark.parametrize("command", [["tune/export.py", "--help"], ["analysis/sensitivity.py", "--help"],
                                     ["analysis/selection.py", "--help"], ["analysis/paper_figures.py", "--help"],
                                     ["analysis/atlas.py", "--help"], ["-m", "ssot.data", "prepare", "--help"],
                                     ["-m", "ssot.features", "--help"], ["-m", "ssot.feature_maps", "--help"],
                                     ["-c", "import ssot, ssot.results.experiment, ssot.results.storage, ssot.results.atomic, ssot.results.io_errors, "
                                            "ssot.results.names, ssot.results.outputs, ssot.results.discovery, ssot.results.record, "
                                            "ssot.results.final_table, ssot.results.paper, ssot.results.metrics, ssot.results.trials, "
                                            "ssot.results.searches, ssot.results.transfer, "
                                            "ssot.config, ssot.cli, ssot.data, ssot.data.registry, ssot.data.layouts, ssot.data.check, "
                                            "ssot.data.fetch, ssot.data.decoded, ssot.data.encoder_stages, ssot.data.safe_load, "
                                            "ssot.data.__main__, ssot.features, ssot.feature_maps, analysis, analysis.dashboard.atlas"]])
def test_reading_commands_load_neither_torch_nor_ray(command):
    proc = subprocess.run([sys.executable, "-X", "importtime", *command], cwd=REPO, capture_output=True, text=True,
                          timeout=120, env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    modules = [line.split("|")[-1].strip() for line in proc.stderr.splitlines() if line.startswith("import time:")]
    heavy = [m for m in modules if m.split(".")[0] in ("torch", "ray")]
    assert heavy == [], heavy[:5]


def test_the_analysis_imports_nothing_of_tune():
    code = ("import sys, analysis, analysis.dashboard, analysis.data.selection, analysis.data.paper_runs, analysis.mpl.paper, "
            "analysis.charts.paper, analysis.selection, analysis.sensitivity, analysis.paper_figures, analysis.atlas, "
            "analysis.dashboard.atlas, analysis.mpl.atlas; "
            "print(' '.join(sorted(m for m in sys.modules if m.split('.')[0] in ('tune', 'torch', 'ray'))))")
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120,
                          env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 0 and proc.stdout.strip() == "", proc.stderr[-2000:] + proc.stdout
