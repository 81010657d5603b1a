"""`python analysis/paper_figures.py`: figures written, never overwritten, bad input refused."""
from __future__ import annotations

import json
import subprocess
import sys

from tests.fixtures import REPO
from tests.fixtures.paper import synthetic_record


def test_command_writes_figures_never_overwrites_and_refuses_bad_input(tmp_path):
    rec = tmp_path / "run.json"
    rec.write_text(json.dumps(synthetic_record()))
    cmd = [sys.executable, "analysis/paper_figures.py", "class-weights", str(rec), "--out", str(tmp_path / "cw.png")]
    done = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "final mass on outlier classes: 0.0000 (source-only 0.5000)" in done.stdout
    assert (tmp_path / "cw.png").read_bytes()[:4] == b"\x89PNG"
    again = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
    assert again.returncode == 2 and "already exists" in again.stderr and "Traceback" not in again.stderr
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    worse = subprocess.run(cmd[:3] + [str(bad), "--out", str(tmp_path / "x.png")], cwd=REPO, capture_output=True, text=True)
    assert worse.returncode == 2 and "is not a run record" in worse.stderr
    assert "torch" not in subprocess.run([sys.executable, "-c", "import sys, analysis.paper_figures; print(' '.join(sys.modules))"],
                                         cwd=REPO, capture_output=True, text=True).stdout.split()
