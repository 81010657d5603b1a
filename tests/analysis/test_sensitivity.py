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
                 "--no-images", "--bootstrap", "0"], cwd=tmp_path)
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


def test_existing_or_unusable_outputs_are_refused_before_any_work(tmp_path: Path, a_file: Path, capsys) -> None:
    """A user's file is never replaced by the dashboard, and its figures folder is checked first."""
    from analysis import sensitivity
    from tests.fixtures.experiments import write_edge_tpe

    results = tmp_path / "results"
    trials = write_edge_tpe(results / "exp" / "A2D") / "trials.csv"
    before = trials.read_bytes()
    assert sensitivity.main([str(results), "--no-images", "--out", str(trials)]) == 2
    assert trials.read_bytes() == before and "is one of the command's inputs" in capsys.readouterr().err
    for figures in (a_file / "figs", a_file):  # under a regular file; a regular file
        assert sensitivity.main([str(results), "--out", str(tmp_path / "d.html"), "--figures-dir", str(figures)]) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: --figures-dir") and len(err.splitlines()) == 1, err
    assert not (tmp_path / "d.html").exists() and a_file.read_text() == "in the way"
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep")
    assert sensitivity.main([str(results), "--out", str(tmp_path / "d.html"), "--figures-dir", str(mine)]) == 2
    assert "already holds files" in capsys.readouterr().err and not (tmp_path / "d.html").exists()
    assert sensitivity.main([str(results), "--no-images"]) == 0  # the default results/dashboard.html
    assert sensitivity.main([str(results), "--no-images"]) == 2 and "pass --overwrite" in capsys.readouterr().err
    assert sensitivity.main([str(results), "--no-images", "--overwrite"]) == 0


def test_an_output_is_never_one_of_the_inputs_even_with_overwrite(tmp_path: Path, capsys) -> None:
    """The second audit: ``--overwrite --out <experiment>/trials.csv`` replaced the search's
    trials.csv with the HTML page. Whatever path leads to an input (itself, a symlink, ``..``, a
    hard link, the paper's CSV, a run record), the command refuses it before any work."""
    from analysis import sensitivity
    from tests.fixtures.experiments import write_edge_tpe

    results = tmp_path / "results"
    experiment = write_edge_tpe(results / "exp" / "A2D")
    (results / "runs").mkdir()
    record = results / "runs" / "digits_seed0.json"
    record.write_text("{}")
    paper_csv = tmp_path / "paper.csv"
    paper_csv.write_text("task,acc\n")
    (tmp_path / "link.html").symlink_to(experiment / "trials.csv")
    os.link(experiment / "experiment.json", tmp_path / "hard.html")
    before = {p: p.read_bytes() for p in (*experiment.iterdir(), record, paper_csv)}
    outs = {
        experiment / "trials.csv": experiment / "trials.csv",
        results / "exp" / ".." / "exp" / "A2D" / "best_config.json": experiment / "best_config.json",
        tmp_path / "link.html": experiment / "trials.csv",
        tmp_path / "hard.html": experiment / "experiment.json",
        record: record,
        paper_csv: paper_csv,
    }
    for out, source in outs.items():
        assert sensitivity.main([str(results), "--no-images", "--overwrite", "--out", str(out), "--paper-csv", str(paper_csv)]) == 2
        err = capsys.readouterr().err
        assert err == (f"error: --out {out} is one of the command's inputs ({source}): an output never replaces what the "
                       "command reads. Choose another --out.\n"), err
    assert {p: p.read_bytes() for p in before} == before
    # the figures folder may not hold an input either, once --overwrite lets it replace files there
    assert sensitivity.main([str(results), "--overwrite", "--out", str(tmp_path / "d.html"), "--figures-dir", str(experiment)]) == 2
    assert f"error: --figures-dir {experiment} holds {experiment}/" in capsys.readouterr().err
    assert {p: p.read_bytes() for p in before} == before and not (tmp_path / "d.html").exists()


def test_out_places_the_page_and_its_figures_together(tmp_path: Path, capsys) -> None:
    """Figures go beside the page, named after it: a second dashboard of the same results with
    another --out is not refused, and --figures-dir still puts them elsewhere."""
    from analysis import sensitivity
    from analysis.dashboard import figures_folder
    from tests.fixtures.experiments import write_edge_tpe

    results = tmp_path / "results"
    write_edge_tpe(results / "exp" / "A2D")
    quick = ["--format", "png", "--bootstrap", "0"]
    assert sensitivity.main([str(results), *quick]) == 0  # the default: results/dashboard.html + results/figures
    assert (results / "dashboard.html").is_file() and any((results / "figures").glob("A2D__tpe-exp__*.png"))
    reports = tmp_path / "reports"
    assert sensitivity.main([str(results), "--out", str(reports / "first.html"), *quick]) == 0
    assert sensitivity.main([str(results), "--out", str(reports / "second.html"), *quick]) == 0
    first, second = sorted(p.name for p in (reports / "first_figures").iterdir()), sorted(p.name for p in (reports / "second_figures").iterdir())
    assert first == second and "A2D__tpe-exp__curves.png" in first
    assert (reports / "first.html").is_file() and (reports / "second.html").is_file()
    assert sorted(p.name for p in reports.iterdir()) == ["first.html", "first_figures", "second.html", "second_figures"]
    # the same page again is refused (it exists), whatever its figures
    assert sensitivity.main([str(results), "--out", str(reports / "first.html"), *quick]) == 2
    assert "pass --overwrite" in capsys.readouterr().err
    assert sensitivity.main([str(results), "--out", str(reports / "third.html"), "--figures-dir", str(tmp_path / "figs"),
                             *quick]) == 0
    assert any((tmp_path / "figs").glob("*.png")) and not (reports / "third_figures").exists()
    assert figures_folder(tmp_path / "x" / "dashboard.html") == tmp_path / "x" / "figures"
    assert figures_folder("p2h.html") == Path("p2h_figures")


def test_bootstrap_takes_a_count(tmp_path: Path, capsys) -> None:
    import pytest

    from analysis import sensitivity

    for bad in ("-1", "many"):
        with pytest.raises(SystemExit) as exited:  # argparse's refusal, before any work
            sensitivity.main([str(tmp_path), "--bootstrap", bad])
        err = capsys.readouterr().err
        assert exited.value.code == 2 and "argument --bootstrap" in err and "0 or more" in err, err


def test_ctrl_c_while_the_dashboard_modules_load_is_one_line_and_130(tmp_path: Path) -> None:
    """Ctrl-C while the dashboard's modules load (an import hook says when their import starts and
    holds it until the signal comes)."""
    import signal
    import time

    from tests.fixtures.experiments import write_edge_tpe

    write_edge_tpe(tmp_path / "exp" / "A2D")
    code = ("import sys, runpy, time\n"
            "class Hook:\n"
            "    def find_spec(self, name, path=None, target=None):\n"
            "        if name == 'analysis.dashboard':\n"
            "            print('ready', flush=True)\n"
            "            time.sleep(60)  # the import waits here for the Ctrl-C (a busy machine delays it)\n"
            "sys.meta_path.insert(0, Hook())\n"
            f"sys.argv = ['sensitivity.py', {str(tmp_path)!r}, '--no-images']\n"
            "runpy.run_path('analysis/sensitivity.py', run_name='__main__')\n")
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.stdout is not None
    ready = proc.stdout.readline()
    assert ready.startswith("ready"), ready
    start = time.monotonic()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    seconds = time.monotonic() - start
    assert proc.returncode == 130 and "Traceback" not in err and err.strip() == "interrupted", (ready, seconds, out[-500:], err[-2000:])
