"""`python tune/search.py`: flags, datasets, exit statuses, resume after Ctrl-C."""
from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time

import pandas as pd
import pytest

from ssot.errors import ConfigError
from ssot.results import space as spaces
from tests.fixtures import REPO
from tests.fixtures.experiments import last_rows as final_results

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
    """On any machine: one GPU more than it has (a GPU machine runs the GPU variant: the request is
    checked against its real GPUs)."""
    import torch

    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    start = time.monotonic()
    proc = _run_cli(["--task", "digits", "--gpus-per-trial", str(gpus + 1), "--num-cpus", "2", "--storage-path", str(tmp_path)])
    assert proc.returncode == 2 and f"asks for more GPUs than the Ray cluster has ({gpus})" in proc.stderr, proc.stderr[-2000:]
    fix = "Use --gpus-per-trial 0: the cluster has no GPU" if gpus == 0 else f"Use --gpus-per-trial a value <= {gpus}"
    assert fix in proc.stderr and ("<= 0" not in proc.stderr or gpus > 0)
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


#: Configs of digits whose first epochs (3 epochs of 5 iterations, 1 of pretraining) rank far apart
#: on any machine: ASHA (grace period 1, reduction factor 2, one trial at a time) stops the second
#: at rung 1 (0.06 against 0.31) and the third at rung 2 (0.35 against 0.38); the first completes.
KILLED_CONFIGS = [(0.01, 0.01, 1.0, 256), (10.0, 10.0, 10.0, 1024), (0.1, 0.1, 1.0, 256)]


@pytest.mark.slow
def test_a_search_in_object_storage_stopped_and_killed_at_every_point_resumes_with_each_epoch_once(s3, tmp_path):
    """A search in object storage (a moto S3 server): Ctrl-C at its first result, then kill -9 of the
    driver right after a trial's state, at the report of a trial's last epoch, and right after an
    ASHA stop (tests/fixtures/killed_search.py: each point stops one driver; a replay of
    KILLED_CONFIGS makes the ASHA stop come every time), each followed by the same command with
    --resume: the asked trials, each epoch once and equal to an uninterrupted run, the stops where
    ASHA put them, no state left in the store, a study that agrees with trials.csv trial by trial
    (benchmarks/soak.py's checks); export, the dashboard and confirm read the search from the store."""
    import pyarrow.fs

    from analysis import sensitivity
    from tests.fixtures.experiments import trial_rows, write_experiment
    from tests.fixtures.killed_search import POINTS
    from tests.fixtures.servers import s3_keys, s3_read
    from tune import confirm, confirmation, export

    reference = tmp_path / "ref" / "digits"
    rows = [row for i, (lo, le, eps, width) in enumerate(KILLED_CONFIGS) for row in trial_rows(
        "digits", "tpe", f"r{i}", {"lambda_ot": lo, "lambda_ent": le, "eps": eps, "potential_width": width}, [0.5], "completed")]
    write_experiment(reference, rows, task="digits", search="tpe", space=spaces.default_space(), max_epochs=1)
    uri, log = f"s3://{s3}/runs", tmp_path / "kills.log"
    args = ["--task", "digits", "--configs-from", str(reference), "--epochs", "3", "--set", "pretrain_epochs=1",
            "--set", "iters_per_epoch=5", "--grace-period", "1", "--reduction-factor", "2", "--max-concurrent", "1",
            "--num-cpus", "2", "--storage-path", uri, "--name", "crash", "--quiet"]
    killed = [sys.executable, "-m", "tests.fixtures.killed_search", str(log), ",".join(POINTS)]
    statuses = []
    for _ in range(len(POINTS) + 1):
        run = subprocess.run([*killed, *args, *(["--resume"] if statuses else [])], cwd=REPO, capture_output=True, text=True,
                             timeout=300)
        statuses.append(run.returncode)
        if run.returncode == 0:
            break
        if len(statuses) == 1:  # Ctrl-C: the experiment exists (refused without --resume), the trial it stopped runs on
            refused = _run_cli(args)
            assert refused.returncode == 2 and "already exists. Pass --resume" in refused.stderr
            assert json.loads(s3_read(s3, "runs/crash/digits/experiment.json"))["status"] == "running"
            stopped = pd.read_csv(io.StringIO(s3_read(s3, "runs/crash/digits/trials.csv")), dtype={"trial_id": str})
            assert set(stopped["status"]) == {"running"}
    fired = [line.split()[0] for line in log.read_text().splitlines()]
    # Ctrl-C first, then each kill once (a trial Ctrl-C stopped may have written its next state before it stopped:
    # the kill after a state then comes at another trial's epoch 2)
    assert fired[0] == "ctrl-c" and sorted(fired) == sorted(POINTS), fired
    assert statuses == [130] + [-signal.SIGKILL] * 3 + [0], (statuses, run.stdout[-2000:] + run.stderr[-2000:])

    keys = s3_keys(s3, "runs/crash")
    assert {"experiment.json", "trials.csv", "best_config.json", "study.journal"} <= {k.rsplit("/", 1)[-1] for k in keys}
    assert [k for k in keys if "/_pretrained/pretrained-" in k]  # the shared source-only model
    assert not [k for k in keys if "/trials/" in k and k.endswith(".pt")]  # each trial's states dropped once it ended
    assert len([k for k in keys if k.endswith("/history.json")]) == 3  # each trial's history
    local = tmp_path / "copy"  # the store's experiment, copied to check it as the soak checks a local one
    fs, path = pyarrow.fs.FileSystem.from_uri(f"{uri}/crash")
    (local / "crash").mkdir(parents=True)
    pyarrow.fs.copy_files(path, str(local / "crash"), source_filesystem=fs, destination_filesystem=pyarrow.fs.LocalFileSystem())
    exp = local / "crash" / "digits"
    last = final_results(pd.read_csv(exp / "trials.csv", dtype={"trial_id": str})).set_index("trial_id")
    assert last["status"].to_dict() == {"t0000": "completed", "t0001": "early-stopped", "t0002": "early-stopped"}
    assert last["epoch"].to_dict() == {"t0000": 3, "t0001": 1, "t0002": 2}
    info = json.loads((exp / "experiment.json").read_text())
    assert info["status"] == "finished" and info["best_trial"] == "t0000"
    found = _soak_checks().check(exp, None, reference=True)  # each epoch once, as an uninterrupted run, the study agrees
    assert (found["lost_epochs"], found["duplicated_epochs"], found["lost_configs"], found["running_in_study"]) == (0, 0, 0, 0)
    assert found["disagreeing"] == {} and found["differing_epochs"] == 0 and found["compared_epochs"] == 6, found

    best = json.loads(s3_read(s3, "runs/crash/digits/best_config.json"))  # the readers, on the store
    assert export.main([uri, "--out", str(tmp_path / "configs")]) == 0
    assert json.loads((tmp_path / "configs" / "digits.json").read_text()) == best
    page = tmp_path / "dashboard.html"
    assert sensitivity.main([uri, "--out", str(page), "--no-images"]) == 0
    text = page.read_text()
    assert 'data-trial="t0000"' in text and f"{uri}/crash/digits" in text and "ssot-experiments-" not in text
    warnings: list[str] = []
    (top,) = confirmation.gather_candidates(uri, 1, warnings.append)
    assert top.experiment == f"{uri}/crash/digits" and top.config.to_dict() == best and not warnings
    assert confirm.main([uri, "--top", "1"]) == 2  # its outputs are local: --out is needed


def _soak_checks():
    import importlib.util

    spec = importlib.util.spec_from_file_location("soak", REPO / "benchmarks" / "soak.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


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
        # The experiment folder turns read-only under the driver: a read-only bind mount over it. (A
        # remount of the whole tmpfs is refused while the driver holds the lock file open for writing,
        # as flock on NFS needs; a disk that fails is remounted read-only by force, which mount(8) cannot do.)
        folder = store / "ro" / "digits"
        subprocess.run(["mount", "--bind", str(folder), str(folder)], check=True)
        subprocess.run(["mount", "-o", "remount,bind,ro", str(folder)], check=True)
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 4, out[-2000:] + err[-3000:]
        last = err.strip().splitlines()[-1]
        assert last.startswith(f"error: The storage of experiment {store / 'ro' / 'digits'} failed during the search "
                               "(Read-only file system)") and "--resume" in last, last
        assert "Traceback" not in err, err[-3000:]
        subprocess.run(["umount", str(folder)], check=True)
        resumed = _run_cli([*args, "--resume"])
        assert resumed.returncode == 0, resumed.stdout[-2000:] + resumed.stderr[-2000:]
        frame = pd.read_csv(trials)
        assert frame["trial_id"].nunique() == 2 and set(final_results(frame)["status"]) == {"completed"}
        for _, rows in frame.groupby("trial_id"):
            assert list(rows["epoch"]) == [1, 2]
    finally:
        subprocess.run(["umount", "-l", str(store / "ro" / "digits")], capture_output=True)
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
    while not list(trials.glob("ray/t*_*")) and time.monotonic() < deadline and driver.poll() is None:
        time.sleep(0.5)
    assert list(trials.glob("ray/t*_*")), "no trial started"  # Ray's folder of a trial
    time.sleep(3)  # the trials' workers and Ray's agents are up
    ray = [p for p in descendants(driver.pid) if "tune.reaper" not in " ".join(p.cmdline())]  # pid and start time each
    assert len(ray) >= 3  # GCS, raylet, agents, workers
    driver.kill()
    driver.wait()
    _, left = psutil.wait_procs(ray, timeout=20)
    names = {p.pid: " ".join(p.cmdline())[:80] for p in left if p.is_running()}
    assert not left, f"processes of the killed driver's Ray still run 20 s later: {names}"
