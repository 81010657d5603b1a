"""Confirmation over seeds (tune/confirm.py) and the live views of a search (tune/live.py), on
one real tiny digits search (3 trials x 2 epochs, local Ray with 2 CPUs)."""
from __future__ import annotations

import json
import statistics
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest
from ray import tune as ray_tune

from ssot.config import SSOTConfig
from ssot.results.experiment import BEST_CONFIG_FILE, EXPERIMENT_FILE, FINISHED, TRIALS_FILE, parse_trials
from ssot.results.trials import COMPLETED, RUNNING, best_trial, ranked_trials, trial_table
from tune import confirm, confirmation, search
from tune.experiment import SearchOptions, run_search
from tune.final import collect_configs
from tune.live import LiveOutputs, public_url

TINY = {"epochs": 2, "pretrain_epochs": 1, "iters_per_epoch": 3}


class Snapshots(ray_tune.Callback):
    """Reads the experiment's files each time a trial ends (after tune.live.LiveOutputs wrote them)."""

    def __init__(self, folder: Path):
        self.folder, self.seen = folder, []

    def on_trial_complete(self, iteration, trials, trial, **info):
        frame = pd.read_csv(self.folder / TRIALS_FILE, dtype={"trial_id": str})
        last = frame.groupby("trial_id").tail(1)
        meta = json.loads((self.folder / EXPERIMENT_FILE).read_text())
        best = json.loads((self.folder / BEST_CONFIG_FILE).read_text())
        self.seen.append({"ended": int((last["status"] != RUNNING).sum()), "status": meta["status"],
                          "frame": frame, "best": best, "trial": trial.trial_id})


@pytest.fixture(scope="module")
def ray_local():
    ray = pytest.importorskip("ray")
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)  # never a cluster of another test
    yield ray
    ray.shutdown()


@pytest.fixture(scope="module")
def searched(ray_local, tmp_path_factory):
    """A finished 4-trial TPE search, its Optuna study in sqlite, and what it looked like live."""
    root = tmp_path_factory.mktemp("confirm")
    snapshots = Snapshots(root / "runs" / "live" / "digits")
    options = SearchOptions(task="digits", num_samples=3, base=TINY, storage_path=str(root / "runs"), name="live",
                            early_stop=False, max_concurrent=2, verbose=0, optuna_storage=f"sqlite:///{root}/optuna.db",
                            callbacks=[snapshots])
    outcome = run_search(options)
    return SimpleNamespace(root=root, results=root / "runs", folder=Path(outcome.path), outcome=outcome,
                           snapshots=snapshots.seen, storage=options.optuna_storage)


# ------------------------------------------------------------------------------------ live views
def test_trials_csv_grows_after_each_finished_trial_while_the_search_says_running(searched):
    seen = searched.snapshots
    assert [s["ended"] for s in seen] == [1, 2, 3]  # after the k-th trial ended, k trials are in the file as ended
    assert {s["status"] for s in seen} == {RUNNING}
    assert json.loads((searched.folder / EXPERIMENT_FILE).read_text())["status"] == FINISHED
    final = pd.read_csv(searched.folder / TRIALS_FILE, dtype={"trial_id": str})
    live = seen[-1]["frame"]  # the last live file already holds every epoch of every trial
    key = ["trial_id", "epoch"]
    assert live.sort_values(key)[[*key, "target_acc", "lambda_ot", "status"]].reset_index(drop=True).equals(
        final.sort_values(key)[[*key, "target_acc", "lambda_ot", "status"]].reset_index(drop=True))
    assert seen[-1]["best"] == json.loads((searched.folder / BEST_CONFIG_FILE).read_text())
    for snap in seen:  # the best config so far is the best of the trials ended so far
        table = trial_table(parse_trials(snap["frame"].to_csv(index=False), searched.folder, []), TINY["epochs"])
        best = best_trial(table)
        assert snap["best"]["lambda_ot"] == pytest.approx(best["lambda_ot"])
    assert not list(searched.folder.glob(".*.tmp"))  # atomic writes leave no temporary file


def test_live_outputs_keep_earlier_rows_of_a_resumed_search(searched, tmp_path):
    """Unit level, with fake trials: a trial resumed from its checkpoint keeps its earlier epochs,
    trials not seen again keep their rows, a running trial is 'running'."""
    info = json.loads((searched.folder / EXPERIMENT_FILE).read_text())
    old = pd.read_csv(searched.folder / TRIALS_FILE, dtype={"trial_id": str})
    ids = sorted(old["trial_id"].unique())
    (tmp_path / TRIALS_FILE).write_text(old[~((old["trial_id"] == ids[0]) & (old["epoch"] == 2))].to_csv(index=False))
    meta = (searched.folder / EXPERIMENT_FILE).read_text()
    (tmp_path / EXPERIMENT_FILE).write_text(meta)
    live = LiveOutputs(str(tmp_path), info)
    live.setup()
    resumed = SimpleNamespace(trial_id=ids[0], config=old[old["trial_id"] == ids[0]].iloc[0].to_dict(), error_file=None)
    new = SimpleNamespace(trial_id="new00001", config={"lambda_ot": 0.5, "lambda_ent": 0.5, "eps": 1.0, "potential_width": 64}, error_file=None)
    live.on_trial_result(0, [], resumed, {"epoch": 2, "target_acc": 0.99, "trial_id": ids[0], "config": {}})
    live.on_trial_result(0, [], new, {"epoch": 1, "target_acc": 0.5, "trial_id": "new00001"})
    live.on_trial_complete(0, [], resumed)
    frame = pd.read_csv(tmp_path / TRIALS_FILE, dtype={"trial_id": str})
    first = frame[frame["trial_id"] == ids[0]]
    assert first["epoch"].tolist() == [1, 2] and first["target_acc"].iloc[1] == 0.99
    assert set(first["status"]) == {COMPLETED}
    assert frame[frame["trial_id"] == "new00001"]["status"].tolist() == [RUNNING]
    for other in ids[1:]:
        assert frame[frame["trial_id"] == other]["target_acc"].tolist() == old[old["trial_id"] == other]["target_acc"].tolist()
    assert json.loads((tmp_path / BEST_CONFIG_FILE).read_text())["lambda_ot"] == pytest.approx(resumed.config["lambda_ot"])
    assert (tmp_path / EXPERIMENT_FILE).read_text() == meta  # experiment.json is the search's to write


def test_a_failed_live_write_is_one_warning_and_never_ends_the_search(searched, tmp_path, capsys):
    (tmp_path / "file").write_text("")
    live = LiveOutputs(str(tmp_path / "file" / "exp"), json.loads((searched.folder / EXPERIMENT_FILE).read_text()))
    for k in range(2):
        trial = SimpleNamespace(trial_id=f"t{k}", config={"lambda_ot": 1.0}, error_file=None)
        live.on_trial_result(0, [], trial, {"epoch": 1, "target_acc": 0.5})
        live.on_trial_complete(0, [], trial)
    err = capsys.readouterr().err
    assert err.count("warning: live trials.csv not written") == 1 and len(err.strip().splitlines()) == 1


def test_the_optuna_study_holds_every_trial_with_its_value(searched):
    import optuna

    info = json.loads((searched.folder / EXPERIMENT_FILE).read_text())
    assert info["optuna_storage"] == searched.storage and info["optuna_study"] == "live/digits"
    study = optuna.load_study(study_name=info["optuna_study"], storage=searched.storage)
    last = searched.outcome.trials.sort_values("epoch").groupby("trial_id").tail(1)
    assert len(study.trials) == len(last) == 3
    assert {t.state for t in study.trials} == {optuna.trial.TrialState.COMPLETE}
    by_params = {round(t.params["lambda_ot"], 10): t.value for t in study.trials}
    assert by_params == {round(r.lambda_ot, 10): pytest.approx(r.target_acc) for r in last.itertuples()}


@pytest.mark.parametrize("url, message", [
    ("optuna.db", "must be a database URL such as sqlite:///PATH. Got 'optuna.db' instead"),
    ("sqlite:///{tmp}/file/o.db", "cannot be created: {tmp}/file is a file"),
])
def test_a_bad_optuna_storage_is_one_line_and_exit_2_before_ray_starts(tmp_path, capsys, url, message):
    (tmp_path / "file").write_text("")
    code = search.main(["--task", "digits", "--storage-path", str(tmp_path / "rr"), "--optuna-storage", url.format(tmp=tmp_path)])
    err = capsys.readouterr().err
    assert code == 2 and message.format(tmp=tmp_path) in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "rr").exists()


def test_a_new_search_refuses_a_study_of_its_name_already_in_the_storage(searched, tmp_path, capsys):
    code = search.main(["--task", "digits", "--name", "live", "--storage-path", str(tmp_path), "--optuna-storage", searched.storage])
    err = capsys.readouterr().err
    assert code == 2 and "already holds a study 'live/digits'" in err and len(err.strip().splitlines()) == 1


def test_experiment_json_records_the_storage_url_without_its_password():
    assert public_url("postgresql://user:secret@db.example:5432/optuna") == "postgresql://user:***@db.example:5432/optuna"
    assert public_url("sqlite:////tmp/o.db") == "sqlite:////tmp/o.db"


# ------------------------------------------------------------------------------------ confirmation
def _values(records_dir: Path, trial_id: str, seeds) -> list[float]:
    records = [json.loads((records_dir / f"{trial_id}_seed{s}.json").read_text()) for s in seeds]
    assert all(r["status"] == "completed" and r["config"]["seed"] == s for r, s in zip(records, seeds))
    return [r["epochs"][-1]["target_acc"] for r in records]


def test_confirm_reruns_the_top_trials_over_seeds_resumes_and_never_overwrites(searched, tmp_path, capsys):
    out = tmp_path / "confirmed"
    args = [str(searched.results), "--top", "2", "--seeds", "0", "1", "--out", str(out)]
    assert confirm.main(args) == 0
    printed = capsys.readouterr().out
    table = pd.read_csv(out / confirmation.CSV_NAME, dtype={"trial_id": str})
    ranked = ranked_trials(trial_table(searched.outcome.trials, TINY["epochs"]))
    assert table["trial_id"].tolist() == ranked["trial_id"].head(2).tolist()  # the best-trial rule's top 2
    assert table["search_value"].tolist() == pytest.approx(ranked["target_acc"].head(2).tolist())
    runs = out / "runs" / "digits"
    for row in table.itertuples():
        values = _values(runs, row.trial_id, [0, 1])
        assert row.mean == pytest.approx(statistics.fmean(values)) and row.std == pytest.approx(statistics.stdev(values))
        assert row.seeds == "0 1" and row.n_completed == 2
    best = table.sort_values(["mean", "search_rank"], ascending=[False, True]).iloc[0]
    assert table["confirmed"].tolist() == [t == best.trial_id for t in table["trial_id"]]
    # the confirmed config is the trial's config, a file tune/final.py takes as an exported one
    [(path, config)] = collect_configs([out])
    assert path == out / "digits.json" and config.seed == 0 and config.epochs == TINY["epochs"]
    row = searched.outcome.trials[searched.outcome.trials["trial_id"] == best.trial_id].iloc[0]
    assert (config.lambda_ot, config.potential_width) == (pytest.approx(row["lambda_ot"]), row["potential_width"])
    assert "**" in (out / confirmation.MARKDOWN_NAME).read_text() and best.trial_id in printed
    # a second run refuses to overwrite the outputs, before any work
    assert confirm.main(args) == 2
    err = capsys.readouterr().err
    assert "confirmation.csv already exists" in err and len(err.strip().splitlines()) == 1
    # interrupted after three runs (tables not written yet): the same command trains only the missing run
    for name in (confirmation.CSV_NAME, confirmation.MARKDOWN_NAME, "digits.json"):
        (out / name).unlink()
    missing = runs / f"{best.trial_id}_seed1.json"
    missing.unlink()
    kept = {p: p.stat().st_mtime_ns for p in runs.glob("*.json")}
    assert confirm.main(args) == 0
    log = capsys.readouterr().out
    assert log.count("[reused ") == 3 and log.count(", wrote ") == 1 and missing.exists()
    assert all(p.stat().st_mtime_ns == t for p, t in kept.items())
    again = pd.read_csv(out / confirmation.CSV_NAME, dtype={"trial_id": str})
    assert again[["trial_id", "mean", "std", "confirmed"]].equals(table[["trial_id", "mean", "std", "confirmed"]])


def test_the_pick_is_the_best_mean_with_ties_to_the_search_rank():
    def cand(rank: int, mode: str = "max") -> confirmation.Candidate:
        return confirmation.Candidate(task="digits", experiment=Path("e"), metric="target_acc" if mode == "max" else "entropy",
                                      mode=mode, search_rank=rank, trial_id=f"t{rank}", params={"lambda_ot": 1.0},
                                      search_value=0.9, config=SSOTConfig.for_task("digits"))

    def rec(value: float, metric: str = "target_acc", status: str = "completed") -> dict:
        return {"status": status, "epochs": [{metric: value}]}

    cands = [cand(1), cand(2), cand(3)]
    records = {("digits #1 trial t1", 0): rec(0.8), ("digits #1 trial t1", 1): rec(0.9),
               ("digits #2 trial t2", 0): rec(0.9), ("digits #2 trial t2", 1): rec(0.8),  # same mean as t1
               ("digits #3 trial t3", 0): rec(0.99), ("digits #3 trial t3", 1): rec(0.5, status="diverged")}
    table = confirmation.confirmation_table(cands, records, [0, 1])
    assert table["confirmed"].tolist() == [True, False, False]  # tie -> rank 1; the diverged seed counts as 0
    assert table["mean"].tolist() == pytest.approx([0.85, 0.85, 0.495])
    low = [cand(1, "min"), cand(2, "min")]
    records = {("digits #1 trial t1", 0): rec(0.3, "entropy"), ("digits #2 trial t2", 0): rec(0.2, "entropy")}
    assert confirmation.confirmation_table(low, records, [0])["confirmed"].tolist() == [False, True]


@pytest.mark.parametrize("args, message", [
    (["{empty}", "--top", "3"], "No experiment (no experiment.json) under"),
    (["{results}", "--top", "0"], "The '--top' argument must be an int in [1, inf). Got 0 instead."),
    (["{results}", "--seeds", "1", "1"], "The '--seeds' argument has repeated seeds"),
    (["{missing}"], "does not exist or is not a folder"),
])
def test_confirm_user_errors_are_one_line_and_exit_2(searched, tmp_path, capsys, args, message):
    (tmp_path / "empty").mkdir()
    paths = {"empty": tmp_path / "empty", "results": searched.results, "missing": tmp_path / "nope"}
    assert confirm.main([a.format(**paths) for a in args]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert not (searched.results / "confirmed").exists()
