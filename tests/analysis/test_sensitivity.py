"""`python analysis/sensitivity.py`: the dashboard command."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.fixtures import REPO


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": ""}
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120)


def test_cli_script_writes_the_dashboard_and_names_bad_files(dashboard_results: Path, tmp_path: Path) -> None:
    out = tmp_path / "cli.html"
    proc = _run([str(REPO / "analysis" / "sensitivity.py"), str(dashboard_results), "--out", str(out),
                 "--no-images"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert out.is_file() and "wrote" in proc.stdout
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and str(dashboard_results / "tpe-exp" / "P2I" / "trials.csv") in lines[0]


def test_cli_without_experiments_is_one_line_and_exit_2(tmp_path: Path) -> None:
    proc = _run(["-m", "analysis.sensitivity", str(tmp_path)], cwd=REPO)
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0 and proc.stderr.startswith("error: ")
    assert "Traceback" not in proc.stderr and str(tmp_path) in proc.stderr


def test_help_needs_no_matplotlib() -> None:
    code = ("import sys, analysis, analysis.sensitivity;"
            "loaded = [m for m in ('matplotlib', 'torch', 'ray', 'tune') if m in sys.modules];"
            "assert not loaded, loaded;"  # matplotlib is imported only when figures are drawn
            "sys.modules['matplotlib'] = None; sys.argv = ['sensitivity.py', '--help'];"
            "import runpy; runpy.run_path('analysis/sensitivity.py', run_name='__main__')")
    proc = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True,
                          timeout=120, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 0, proc.stderr
    assert "--image-backend" in proc.stdout and "pdf" in proc.stdout


def test_cli_on_a_folder_of_run_records(paper_results: Path, tmp_path: Path) -> None:
    out = tmp_path / "d.html"
    done = subprocess.run([sys.executable, "analysis/sensitivity.py", str(paper_results), "--out", str(out), "--no-images"],
                          cwd=REPO, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "(0 experiment(s), 6 plots)" in done.stdout and "toy_seed1.json" in done.stderr
    assert 'id="paper-class-weights"' in out.read_text()
    loaded = subprocess.run([sys.executable, "-c", "import sys, analysis.dashboard; print(' '.join(sys.modules))"],
                            cwd=REPO, capture_output=True, text=True).stdout.split()
    assert "analysis.dashboard.paper_section" in loaded and not {"torch", "ray", "tune"} & set(loaded)
