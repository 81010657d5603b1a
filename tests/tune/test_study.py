"""`tune/study.py`: the Optuna study of a search in a database, refused in one line when it cannot be used."""
from __future__ import annotations

import json

import pytest

from ssot.results.experiment import EXPERIMENT_FILE
from tune import search
from tune.study import public_url


def test_the_optuna_study_holds_every_trial_with_its_value(finished_search):
    import optuna

    info = json.loads((finished_search.folder / EXPERIMENT_FILE).read_text())
    assert info["optuna_storage"] == finished_search.storage and info["optuna_study"] == "live/digits"
    study = optuna.load_study(study_name=info["optuna_study"], storage=finished_search.storage)
    last = finished_search.outcome.trials.sort_values("epoch").groupby("trial_id").tail(1)
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


def test_a_new_search_refuses_a_study_of_its_name_already_in_the_storage(finished_search, tmp_path, capsys):
    code = search.main(["--task", "digits", "--name", "live", "--storage-path", str(tmp_path), "--optuna-storage", finished_search.storage])
    err = capsys.readouterr().err
    assert code == 2 and "already holds a study 'live/digits'" in err and len(err.strip().splitlines()) == 1


def test_experiment_json_records_the_storage_url_without_its_password():
    assert public_url("postgresql://user:secret@db.example:5432/optuna") == "postgresql://user:***@db.example:5432/optuna"
    assert public_url("sqlite:////tmp/o.db") == "sqlite:////tmp/o.db"
