"""Results folders shared by the analysis's test modules (written by :mod:`tests.fixtures`)."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.fixtures.experiments import write_dashboard_results, write_edge_results, write_views_results
from tests.fixtures.paper import write_paper_results


@pytest.fixture()
def edge_results(tmp_path: Path) -> Path:
    """A grid, a TPE, a truncated, a running and a corrupt experiment (:func:`write_edge_results`)."""
    return write_edge_results(tmp_path)


@pytest.fixture(scope="module")
def views_results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An ASHA search, a grid and a running search (:func:`write_views_results`)."""
    return write_views_results(tmp_path_factory.mktemp("views"))


@pytest.fixture(scope="module")
def dashboard_results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two tasks, one truncated file, and the digest of every file (:func:`write_dashboard_results`)."""
    return write_dashboard_results(tmp_path_factory.mktemp("results"))


@pytest.fixture(scope="module")
def paper_results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Run records and t-SNE files of the paper's other analyses (:func:`write_paper_results`)."""
    return write_paper_results(tmp_path_factory.mktemp("paper-results"))
