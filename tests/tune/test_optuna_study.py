"""`tune/optuna_study.py`: the Optuna study of a search in a database, refused in one line when it cannot be used."""
from __future__ import annotations

import json
import re
import sys
import urllib.request
from pathlib import Path

import pytest

from ssot.results.experiment import EXPERIMENT_FILE
from tests.fixtures.browser import chromium, open_url, page_text
from tests.fixtures.servers import free_port, serve
from tests.fixtures.study import check_study_agrees
from tune import search
from tune.optuna_study import public_url


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
    check_study_agrees(study, finished_search.outcome.trials)


def test_the_study_names_its_objective_and_each_trial_carries_its_ids_and_final_validators(finished_search):
    """Issue 32: optuna-dashboard showed "Objective 0" and trials that could not be matched to the
    search's; read back from the sqlite study."""
    import optuna

    from ssot.results.metrics import EPOCH_VALIDATORS

    study = optuna.load_study(study_name="live/digits", storage=finished_search.storage)
    assert study.metric_names == ["target_acc"]
    last = finished_search.outcome.trials.sort_values("epoch").groupby("trial_id").tail(1).set_index("trial_id")
    assert sorted(t.user_attrs["member_id"] for t in study.trials) == sorted(last.index)
    for trial in study.trials:
        row = last.loc[trial.user_attrs["member_id"]]
        assert trial.user_attrs["ray_trial_id"] == trial.user_attrs["member_id"]  # one config per trial: its Ray trial
        assert (finished_search.folder / f"trial_{trial.user_attrs['ray_trial_id']}").is_dir()
        assert trial.user_attrs["status"] == row["status"] == "completed" and trial.user_attrs["attempt"] == 1
        for name in ("target_acc", *EPOCH_VALIDATORS):
            assert trial.user_attrs[name] == pytest.approx(row[name], rel=1e-9), name


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


@pytest.mark.skipif(chromium() is None, reason="chromium is not installed (apt-get install chromium; .ci/run installs it)")
def test_optuna_dashboard_shows_the_study_and_every_trial_with_its_value(finished_search, tmp_path):
    """The docs' live view: optuna-dashboard on the search's storage, read in headless Chromium."""
    pytest.importorskip("optuna_dashboard")
    url = f"http://127.0.0.1:{free_port()}"
    server = [str(Path(sys.executable).parent / "optuna-dashboard"), finished_search.storage, "--host", "127.0.0.1",
              "--port", url.rsplit(":", 1)[1]]
    with serve(server, f"{url}/api/studies", tmp_path / "dashboard.log"):
        (study,) = json.loads(urllib.request.urlopen(f"{url}/api/studies", timeout=10).read())["study_summaries"]
        assert study["study_name"] == "live/digits"
        listed = page_text(open_url(f"{url}/dashboard", tmp_path / "profile")[0])
        assert "live/digits" in listed and "MAXIMIZE" in listed
        dom, _ = open_url(f"{url}/dashboard/studies/{study['study_id']}/trials?numbers=0,1,2", tmp_path / "profile")
    text = page_text(dom)
    shown = {float(p): float(v) for v, p in re.findall(r"Complete (?:Best Trial )?Note Value (\S+) Intermediate Values .*?"
                                                       r"Parameter .*?lambda_ot (\S+)", text)}
    last = finished_search.outcome.trials.sort_values("epoch").groupby("trial_id").tail(1)
    assert text.count("Complete Note Value") + text.count("Complete Best Trial Note Value") == 3
    assert {round(k, 10): v for k, v in shown.items()} == {round(r.lambda_ot, 10): pytest.approx(r.target_acc)
                                                           for r in last.itertuples()}
