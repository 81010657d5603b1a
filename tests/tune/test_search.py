"""`python tune/search.py`: flags, datasets, exit statuses, resume after Ctrl-C."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pandas as pd
import pytest

from ssot.errors import ConfigError
from tests.fixtures import REPO
from tests.fixtures.experiments import last_rows as final_results
from tests.fixtures.study import check_study_agrees
from tune import space as spaces

SEARCH = [sys.executable, str(REPO / "tune" / "search.py")]


def _run_cli(args: list[str], **kw) -> subprocess.CompletedProcess:
    return subprocess.run([*SEARCH, *args], capture_output=True, text=True, cwd=kw.pop("cwd", None), timeout=kw.pop("timeout", 300), **kw)


def test_missing_dataset_exits_at_once_with_where_to_get_it(tmp_path):
    start = time.monotonic()
    env = {k: v for k, v in os.environ.items() if k != "SSOT_DATA_ROOT"}
    proc = _run_cli(["--task", "P2I", "--num-samples", "50", "--data-root", str(tmp_path)], env=env)
    assert proc.returncode == 2 and time.monotonic() - start < 60
    assert "imageclef" in proc.stderr and "imageclef.org" in proc.stderr and "Traceback" not in proc.stderr
    proc = _run_cli(["--task", "P2I"], env=env)
    assert proc.returncode == 2 and "no data root" in proc.stderr


def test_more_gpus_than_the_cluster_has_is_refused_within_seconds(tmp_path):
    start = time.monotonic()
    proc = _run_cli(["--task", "digits", "--gpus-per-trial", "2", "--num-cpus", "2", "--storage-path", str(tmp_path)])
    if "the Ray cluster has (0)" not in proc.stderr:
        pytest.skip("this machine has a GPU")
    assert proc.returncode == 2 and "asks for more GPUs than the Ray cluster has (0)" in proc.stderr
    assert "Use --gpus-per-trial 0: the cluster has no GPU" in proc.stderr and "<= 0" not in proc.stderr
    assert time.monotonic() - start < 90 and "Traceback" not in proc.stderr


def test_no_cpus_are_refused_naming_num_cpus_before_ray_starts(tmp_path, capsys):
    from tune import search

    assert search.main(["--task", "digits", "--num-cpus", "0", "--storage-path", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "'--num-cpus' argument must be an int in [1, inf). Got 0" in err and "--cpus-per-trial" not in err
    assert list(tmp_path.iterdir()) == []


def test_command_line_ranges_and_grid_options():
    from tune.search import build_parser, options_for

    args = build_parser().parse_args(["--task", "digits", "--eps-range", "0.1", "1", "--widths", "64", "128",
                                      "--epochs", "4", "--set", "lr=3e-4", "--set", "use_mask=false"])
    options = options_for(args, "digits", "my-exp")
    assert options.name == "my-exp"
    assert options.space["eps"] == {"type": "loguniform", "low": 0.1, "high": 1.0}
    assert options.space["lambda_ot"] == spaces.default_space()["lambda_ot"]
    assert options.space["potential_width"]["values"] == [64, 128]
    assert options.base == {"epochs": 4, "lr": 3e-4, "use_mask": False, "seed": 0} and options.num_samples == 20
    grid = options_for(build_parser().parse_args(["--task", "digits", "--search", "grid", "--eps", "0.5"]), "digits", None)
    assert grid.num_samples == 1 and grid.space["eps"] == {"type": "fixed", "value": 0.5}
    with pytest.raises(ConfigError, match="--lambda-ot-range set the sampled space; --search grid"):
        options_for(build_parser().parse_args(["--task", "digits", "--search", "grid", "--lambda-ot-range", "1", "2"]), "digits", None)


def _fake_searches(monkeypatch, fake_run_search) -> None:
    """Replace the searches ``tune/search.py`` runs (it imports them once its flags and data are checked)."""
    from tune import experiment, outputs

    monkeypatch.setattr(experiment, "run_search", fake_run_search)
    monkeypatch.setattr(outputs, "summary_lines", lambda frame, info: [info["task"]])


def test_search_cli_expands_the_embedded_dataset(monkeypatch, capsys):
    import pandas as pd

    from tune import search
    from tune.outputs import SearchOutcome

    seen = []

    def fake_run_search(options, *, address=None, num_cpus=None):
        seen.append((options.task, options.name))
        return SearchOutcome(path=f"x/{options.name}/{options.task}", trials=pd.DataFrame(), best_config=None, finished=True)

    _fake_searches(monkeypatch, fake_run_search)
    from ssot.cli import EXIT_NO_RESULT as EXIT_NOTHING_USABLE

    # the fake searches return no trial, hence "nothing usable"; what is checked is the expansion
    assert search.main(["--task", "embedded", "--num-samples", "1"]) == EXIT_NOTHING_USABLE
    assert seen == [("digits", "ssot-embedded"), ("P2H", "ssot-embedded"), ("H2P", "ssot-embedded")]


def test_the_summary_of_a_finished_search_names_the_next_commands_with_its_folder(monkeypatch, capsys):
    """Issue 32: the summary ends with the commands that use the search (dashboard, confirm, export,
    optuna-dashboard), the experiment's folder filled in."""
    import pandas as pd

    from ssot.config import SSOTConfig
    from tune import search
    from tune.outputs import SearchOutcome

    def fake_run_search(options, *, address=None, num_cpus=None):
        info = {"task": options.task, "status": "finished", "optuna_storage": "sqlite:////tmp/o.db", "optuna_study": "exp/digits"}
        return SearchOutcome(path=f"/runs/exp/{options.task}", trials=pd.DataFrame(), best_config=SSOTConfig(), finished=True, info=info)

    _fake_searches(monkeypatch, fake_run_search)
    assert search.main(["--task", "digits", "--name", "exp", "--storage-path", "/runs"]) == 0
    out = capsys.readouterr().out
    for command in ("python analysis/sensitivity.py /runs/exp ", "python tune/confirm.py /runs/exp --top 3 --seeds 1 2 3",
                    "python tune/export.py /runs/exp --out configs", "optuna-dashboard sqlite:////tmp/o.db"):
        assert command in out, out


@pytest.mark.parametrize("name", ["../../escape", "a/b", ".hidden", "x" * 300])
def test_a_name_that_is_not_one_folder_is_refused_before_any_work(tmp_path, capsys, name):
    from tune import search

    storage = tmp_path / "in" / "sp"
    assert search.main(["--task", "digits", "--num-samples", "1", "--storage-path", str(storage), "--name", name]) == 2
    err = capsys.readouterr().err
    assert "'--name' argument must be one folder name" in err and "Traceback" not in err and len(err.splitlines()) == 1
    assert list(tmp_path.iterdir()) == []  # nothing written, inside or outside --storage-path


def test_a_second_driver_of_a_running_search_is_refused_in_one_line(tmp_path, capsys):
    """The lock is taken before any work: a second search, or --resume, with the same --name and
    task is refused while the first driver (here this process) holds it."""
    from ssot.results.lock import ExperimentLock
    from tune import search

    folder = tmp_path / "runs" / "same" / "digits"
    args = ["--task", "digits", "--num-samples", "1", "--storage-path", str(tmp_path / "runs"), "--name", "same"]
    with ExperimentLock(str(folder)):
        (folder / "experiment.json").write_text("{}")  # what the first driver wrote meanwhile
        for extra in ([], ["--resume"]):
            assert search.main([*args, *extra]) == 2
            err = capsys.readouterr().err
            assert len(err.splitlines()) == 1 and f"is in use by another search (pid {os.getpid()} on" in err, err
    assert sorted(p.name for p in folder.iterdir()) == ["experiment.json"]


@pytest.mark.slow
def test_a_search_interrupted_or_killed_at_every_point_resumes_to_the_asked_trials_with_each_epoch_once(tmp_path):
    """Ctrl-C at a trial's first result, kill -9 of the driver during a checkpoint write, after the
    first completed trial and after an ASHA stop (tests/fixtures/killed_search.py: each point stops
    one driver), each followed by the same command with --resume: the asked number of trials, each
    epoch once, no checkpoint left behind, and the same Optuna study, which agrees with trials.csv
    trial by trial (configs, states, values; none left RUNNING). Whether ASHA stops a trial at all
    depends on the order in which the restored trials reach their rungs (3 configs, one at a time):
    that point is checked when it comes (1 of 2 runs here); the other three come every time."""
    from tests.fixtures.killed_search import POINTS

    log = tmp_path / "kills.log"
    args = ["--task", "digits", "--num-samples", "3", "--epochs", "3", "--set", "pretrain_epochs=1", "--set", "iters_per_epoch=5",
            "--grace-period", "1", "--reduction-factor", "2", "--max-concurrent", "1", "--num-cpus", "2",
            "--storage-path", str(tmp_path), "--name", "crash", "--quiet", "--optuna-storage", f"sqlite:///{tmp_path}/optuna.db"]
    run = subprocess.run([sys.executable, "-m", "tests.fixtures.killed_search", str(log), ",".join(POINTS), *args], cwd=REPO,
                         capture_output=True, text=True, timeout=300)
    exp = tmp_path / "crash" / "digits"
    assert json.loads((exp / "experiment.json").read_text())["status"] == "running"
    refused = _run_cli(args)
    assert refused.returncode == 2 and "already exists. Pass --resume" in refused.stderr
    statuses = [run.returncode]
    while run.returncode != 0 and len(statuses) <= len(POINTS):
        run = _run_cli([*args, "--resume"])
        statuses.append(run.returncode)
    fired = [line.split()[0] for line in log.read_text().splitlines()]
    assert {"ctrl-c", "checkpoint", "completed"} <= set(fired) <= set(POINTS) and len(set(fired)) == len(fired), fired
    assert sorted(statuses) == sorted([-signal.SIGKILL] * (len(fired) - 1) + [0, 130]), (statuses, run.stdout[-2000:] + run.stderr[-2000:])
    assert "finished; table" in run.stdout
    frame = pd.read_csv(exp / "trials.csv", dtype={"trial_id": str})
    assert frame["trial_id"].nunique() == 3
    for trial_id, rows in frame.groupby("trial_id"):  # interrupted trials continued from their checkpoint
        assert list(rows["epoch"]) == list(range(1, len(rows) + 1)), (trial_id, rows)
    last = final_results(frame)
    assert set(last["status"]) <= {"completed", "early-stopped"}
    info = json.loads((exp / "experiment.json").read_text())
    assert info["status"] == "finished" and info["best_trial"] in set(frame["trial_id"])
    assert list(exp.glob("trial_*/checkpoint_*")) == [] and not (exp / ".ssot-search.lock").exists()
    import optuna  # the resumed searches kept the same Optuna study, and it agrees with trials.csv

    study = optuna.load_study(study_name="crash/digits", storage=f"sqlite:///{tmp_path}/optuna.db")
    check_study_agrees(study, frame)


@pytest.mark.slow
def test_a_driver_killed_long_after_rays_last_save_leaves_a_study_that_agrees_with_trials_csv(tmp_path):
    """The cause of the study/trials.csv mismatch after kill -9: the killed driver had told the
    study (in its database) of trials and ends that Ray had not saved yet, so --resume ran those
    trials again, asked for new ones, and their new ends could not be told to trials that were
    already complete. Here Ray saves its state only at the start (TUNE_GLOBAL_CHECKPOINT_S), the
    driver is killed after the first trial completed, and resumed: the study holds exactly the
    trials of trials.csv."""
    log = tmp_path / "kills.log"
    args = ["--task", "digits", "--num-samples", "3", "--epochs", "2", "--set", "pretrain_epochs=1", "--set", "iters_per_epoch=5",
            "--grace-period", "1", "--reduction-factor", "2", "--max-concurrent", "1", "--num-cpus", "2",
            "--storage-path", str(tmp_path), "--name", "late", "--quiet", "--optuna-storage", f"sqlite:///{tmp_path}/optuna.db"]
    env = {**os.environ, "TUNE_GLOBAL_CHECKPOINT_S": "3600"}
    run = subprocess.run([sys.executable, "-m", "tests.fixtures.killed_search", str(log), "completed", *args], cwd=REPO,
                         capture_output=True, text=True, timeout=300, env=env)
    assert run.returncode == -signal.SIGKILL and log.read_text().startswith("completed"), run.stdout[-2000:] + run.stderr[-2000:]
    resumed = _run_cli([*args, "--resume"], env=env)
    assert resumed.returncode == 0, resumed.stdout[-2000:] + resumed.stderr[-2000:]
    frame = pd.read_csv(tmp_path / "late" / "digits" / "trials.csv", dtype={"trial_id": str})
    assert frame["trial_id"].nunique() == 3
    import optuna

    check_study_agrees(optuna.load_study(study_name="late/digits", storage=f"sqlite:///{tmp_path}/optuna.db"), frame)


def _mount_tmpfs(folder, size: str) -> None:
    """Mount a tmpfs of ``size`` at ``folder``, or skip the test where this machine cannot."""
    import shutil

    if os.geteuid() != 0 or not shutil.which("mount"):
        pytest.skip("mounting a tmpfs needs root and mount(8)")
    folder.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")


@pytest.mark.slow
def test_a_storage_that_turns_read_only_mid_search_is_one_line_and_resumed_once_fixed(tmp_path):
    store = tmp_path / "store"
    _mount_tmpfs(store, "64m")
    try:
        args = ["--task", "digits", "--num-samples", "2", "--epochs", "2", "--set", "pretrain_epochs=1", "--set",
                "iters_per_epoch=5", "--no-early-stop", "--max-concurrent", "1", "--num-cpus", "2", "--max-failures", "0",
                "--storage-path", str(store), "--name", "ro"]
        proc = subprocess.Popen([*SEARCH, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        trials = store / "ro" / "digits" / "trials.csv"
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and proc.poll() is None and not (trials.exists() and ",completed," in trials.read_text()):
            time.sleep(0.2)
        subprocess.run(["mount", "-o", "remount,ro", str(store)], check=True)
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 4, out[-2000:] + err[-3000:]
        last = err.strip().splitlines()[-1]
        assert last.startswith(f"error: The storage of experiment {store / 'ro' / 'digits'} failed during the search "
                               "(Read-only file system)") and "--resume" in last, last
        assert "Traceback" not in err, err[-3000:]
        subprocess.run(["mount", "-o", "remount,rw", str(store)], check=True)
        resumed = _run_cli([*args, "--resume"])
        assert resumed.returncode == 0, resumed.stdout[-2000:] + resumed.stderr[-2000:]
        frame = pd.read_csv(trials)
        assert frame["trial_id"].nunique() == 2 and set(final_results(frame)["status"]) == {"completed"}
        for _, rows in frame.groupby("trial_id"):
            assert list(rows["epoch"]) == [1, 2]
    finally:
        subprocess.run(["umount", "-l", str(store)], capture_output=True)


@pytest.mark.parametrize("flag", ["--gpus-per-trial", "--cpus-per-trial"])
@pytest.mark.parametrize("value", ["nan", "inf"])
def test_resources_that_are_not_numbers_are_refused_in_one_line_before_anything_starts(tmp_path, capsys, flag, value):
    """--gpus-per-trial nan passed the resource check and the search hung (Ray asked for nan GPUs);
    --cpus-per-trial nan ended in a ValueError traceback."""
    from tune import search

    assert search.main(["--task", "digits", flag, value, "--storage-path", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert f"'{flag}' argument must be a number" in err and len(err.splitlines()) == 1 and "Traceback" not in err
    assert list(tmp_path.iterdir()) == []


def _stale_lock(folder) -> None:
    """The lock a driver killed in its first seconds leaves (its process no longer runs), alone in its folder."""
    import socket

    from ssot.results.lock import LOCK_FILE

    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    folder.mkdir(parents=True)
    (folder / LOCK_FILE).write_text(json.dumps({"host": socket.gethostname(), "pid": gone.pid, "started": "2026-11-26T10:00:00",
                                                "pid_start": "1", "boot_id": None, "token": "killed"}) + "\n")


def test_a_search_killed_before_it_wrote_experiment_json_leaves_its_name_usable(tmp_path, capsys):
    """A folder holding only the lock of a killed driver is no experiment: a new search starts there,
    and so does --resume (nothing was recorded), instead of each sending the user to the other."""
    from tune import search

    args = ["--task", "digits", "--num-samples", "1", "--epochs", "1", "--set", "pretrain_epochs=1", "--set", "iters_per_epoch=2",
            "--num-cpus", "1", "--storage-path", str(tmp_path / "runs"), "--quiet"]
    _stale_lock(tmp_path / "runs" / "new" / "digits")
    assert search.main([*args, "--name", "new"]) == 0, capsys.readouterr().err
    assert "removed the stale lock" in capsys.readouterr().out
    _stale_lock(tmp_path / "runs" / "again" / "digits")
    assert search.main([*args, "--name", "again", "--resume"]) == 0
    assert "nothing of experiment" in capsys.readouterr().out
    for name in ("new", "again"):
        info = json.loads((tmp_path / "runs" / name / "digits" / "experiment.json").read_text())
        assert info["status"] == "finished" and info["elapsed_s"] > 0


@pytest.mark.slow
def test_a_killed_driver_leaves_no_process_of_its_ray_behind(tmp_path):
    """kill -9 of a driver that started its own Ray: its watchdog (tune/reaper.py) ends every process
    Ray started (Ray's DashboardAgent and RuntimeEnvAgent outlived the driver by over 30 s before)."""
    import psutil

    from tune.reaper import descendants

    driver = subprocess.Popen([*SEARCH, "--task", "digits", "--num-samples", "2", "--epochs", "30", "--set", "pretrain_epochs=1",
                               "--num-cpus", "2", "--storage-path", str(tmp_path), "--quiet"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    trials = tmp_path / "ssot-digits" / "digits"
    deadline = time.monotonic() + 240
    while not list(trials.glob("trial_*")) and time.monotonic() < deadline and driver.poll() is None:
        time.sleep(0.5)
    assert list(trials.glob("trial_*")), "no trial started"
    time.sleep(3)  # the trials' workers and Ray's agents are up
    ray = [p for p in descendants(driver.pid) if "tune.reaper" not in " ".join(p.cmdline())]  # pid and start time each
    assert len(ray) >= 3  # GCS, raylet, agents, workers
    driver.kill()
    driver.wait()
    _, left = psutil.wait_procs(ray, timeout=20)
    names = {p.pid: " ".join(p.cmdline())[:80] for p in left if p.is_running()}
    assert not left, f"processes of the killed driver's Ray still run 20 s later: {names}"
