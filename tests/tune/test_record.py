"""`tune/record.py`: the search's record (its Optuna study and the units' files) and what `--resume`
makes of it, driven here as a driver and its trainables would, without Ray: a driver "killed" at a
point is a record dropped there, the next driver is a new record that repairs it."""
from __future__ import annotations

import json
import re
import sys
import urllib.request
from pathlib import Path

import optuna
import pytest

from ssot.results.experiment import EXPERIMENT_FILE
from ssot.results.trials import COMPLETED, EARLY_STOPPED, RUNNING
from tests.fixtures.browser import chromium, open_url, page_text
from tests.fixtures.servers import free_port, serve
from tests.fixtures.study import check_study_agrees
from tune import members, search
from tune.experiment import early_stopping, open_record, search_meta
from tune.options import SearchOptions, base_config
from tune.record import ATTEMPT_ATTR, INTERRUPTED, REASON_ATTR, STATUS_ATTR, Record, UnitFiles, disagreements, public_url
from tune.searcher import StudySearcher

State = optuna.trial.TrialState
SCREEN = {"epochs": 4, "backbone": "features", "features_path": "/nowhere/p2h.pt"}  # no trial runs here


def entry(epoch: int, acc: float, **extra) -> dict:
    return {"epoch": epoch, "target_acc": acc, "diverged": 0, "reason": "", "early_stopped": 0, **extra}


def report(entries: dict) -> dict:
    return members.report(entries, "target_acc", "max")


def open_search(path: Path, **kw) -> Record:
    """The record a driver opens for a search of digits (the info a new search writes), repaired."""
    options = SearchOptions(**{"task": "digits", "num_samples": 3, "base": {"epochs": 3}, "grace_period": 1, "reduction_factor": 2,
                               "verbose": 0, **kw})
    base = base_config(options)
    info = search_meta(options, base, str(path.parent), rungs=early_stopping(options, base.epochs)[0])
    if (path / "experiment.json").exists():
        info = json.loads((path / "experiment.json").read_text())
    path.mkdir(parents=True, exist_ok=True)
    (path / "experiment.json").write_text(json.dumps(info))
    record = open_record(options, base, str(path), info)
    setattr(record, "lines", record.repair())  # noqa: B010 - the lines a driver prints
    return record


def epoch(record: Record, unit: str, entries: dict, *, state: bool = True, reported: bool = True, cut: bool = False) -> bool:
    """One epoch of a unit as its trainable records it (its history, then its state, or that it
    ended: ``state`` False), then its report to the driver (``reported``); ``cut``: the driver was
    killed between the history and the state."""
    files = UnitFiles(record.path, unit)
    saved = files.latest()
    history = saved.history if saved else files.history()
    history.append(report(entries))
    if cut:
        files.write_history(history)
        return False
    files.write(max(e["epoch"] for e in entries.values()), history, b"state" if state else None)
    return record.observe(unit, report(entries)) if reported else False


def states(path: Path) -> list[str]:
    return sorted(str(p.relative_to(path)) for p in path.glob("trials/*/epoch-*.pt"))


def test_a_search_killed_at_every_point_continues_from_its_record_with_each_epoch_once(tmp_path):
    """A completed trial, an ASHA stop, a trial cut off after its epoch-2 state (its report lost with
    the driver): the next driver keeps the first two ended, records the lost epoch from the trial's
    history, and continues the third from its state; every epoch once, the study agrees."""
    path = tmp_path / "exp" / "digits"
    first = open_search(path)
    a = first.next()
    assert a.id == "t0000" and a.members == {"t0000": {"lambda_ot": 1.0, "lambda_ent": 1.0, "eps": 1.0, "potential_width": 256}}
    for e, acc in ((1, 0.5), (2, 0.6)):
        assert not epoch(first, "t0000", {"t0000": entry(e, acc)})
    epoch(first, "t0000", {"t0000": entry(3, 0.7)}, state=False)  # completed: nothing left to train
    first.ended("t0000", None)
    assert states(path) == []  # an ended unit's states are removed
    b = first.next()
    assert epoch(first, b.id, {b.id: entry(1, 0.2)})  # below t0000 at rung 1: ASHA stops it (1 of 2 goes on)
    first.ended(b.id, None)
    c = first.next()
    assert not epoch(first, c.id, {c.id: entry(1, 0.9)})
    epoch(first, c.id, {c.id: entry(2, 0.8)}, reported=False)  # its state written, the driver killed before the report
    assert first.next() is None and states(path) == ["trials/t0002/epoch-2.pt"]

    second = open_search(path, resume=True)
    assert second.lines == ["1 config(s) cut off by the stop of the last driver continue from their last state (1 trial(s))"]
    unit = second.next()
    assert unit.id == "t0002" and second.next() is None  # the completed and the stopped trial are not run again
    assert UnitFiles(second.path, unit.id).latest().epoch == 2  # it continues from its state
    epoch(second, unit.id, {unit.id: entry(3, 0.85)}, state=False)
    second.ended(unit.id, None)
    assert second.finished() and states(path) == [] and second.configs_ended() == 3
    frame = second.frame()
    assert frame.groupby("trial_id")["epoch"].apply(list).to_dict() == {"t0000": [1, 2, 3], "t0001": [1], "t0002": [1, 2, 3]}
    assert frame.groupby("trial_id")["status"].last().to_dict() == {"t0000": COMPLETED, "t0001": EARLY_STOPPED, "t0002": COMPLETED}
    study = second.study.get_trials(deepcopy=False)
    assert [(t.user_attrs["member_id"], t.state, t.user_attrs[ATTEMPT_ATTR]) for t in study] == [
        ("t0000", State.COMPLETE, 1), ("t0001", State.PRUNED, 1), ("t0002", State.FAIL, 1), ("t0002", State.COMPLETE, 2)]
    assert study[3].intermediate_values == {1: 0.9, 2: 0.8, 3: 0.85}  # the lost epoch recorded from the trial's history
    check_study_agrees(second.study, frame)


def test_an_epoch_whose_state_was_not_written_is_trained_again_and_an_unrecorded_end_is_recorded(tmp_path):
    """Killed after a history write but before its state: that epoch is dropped (trained again,
    once). Killed after the last epoch's report but before its end was told: told on resume, not
    run again. A config asked but never given to a trial (the driver killed then) is asked again."""
    path = tmp_path / "exp" / "digits"
    first = open_search(path, early_stop=False, num_samples=3)
    a, b = first.next(), first.next()
    epoch(first, a.id, {a.id: entry(1, 0.5)})
    epoch(first, a.id, {a.id: entry(2, 0.6)}, cut=True)  # its history of epoch 2 written, not its state
    for e in (1, 2):
        epoch(first, b.id, {b.id: entry(e, 0.4)})
    files = UnitFiles(first.path, b.id)
    history = files.history() + [report({b.id: entry(3, 0.45)})]
    files.write(3, history, None)  # its last epoch recorded, the report never reached the driver
    first.next()  # t0002: asked, the driver killed before Ray ran it

    second = open_search(path, resume=True)
    latest = second.latest()
    assert latest[b.id].state == State.COMPLETE and latest[b.id].intermediate_values == {1: 0.4, 2: 0.4, 3: 0.45}
    assert latest[a.id].state == State.RUNNING and latest[a.id].intermediate_values == {1: 0.5}
    pending = [second.next(), second.next()]
    assert [u.id for u in pending] == ["t0000", "t0002"] and second.next() is None
    assert UnitFiles(second.path, "t0000").latest().history == [{"members": {"t0000": entry(1, 0.5)}}]
    assert UnitFiles(second.path, "t0002").latest() is None  # never ran: starts from the beginning
    epoch(second, "t0000", {"t0000": entry(2, 0.65)})
    assert second.frame().query("trial_id == 't0000'")["target_acc"].tolist() == [0.5, 0.65]


def test_an_asha_stop_not_yet_recorded_is_decided_on_resume_and_a_recorded_one_stays(tmp_path):
    path = tmp_path / "exp" / "digits"
    first = open_search(path, num_samples=2, max_concurrent=2)
    a, b = first.next(), first.next()
    epoch(first, a.id, {a.id: entry(1, 0.9)})
    epoch(first, b.id, {b.id: entry(1, 0.1)}, reported=False)  # at rung 1 below t0000: the driver died before deciding
    second = open_search(path, resume=True)
    assert second.latest()[b.id].state == State.PRUNED and second.latest()[b.id].user_attrs[STATUS_ATTR] == EARLY_STOPPED
    assert [second.next().id, second.next()] == [a.id, None]  # only t0000 continues
    third = open_search(path, resume=True)
    assert third.latest()[b.id].state == State.PRUNED and [u.id for u in [third.next()]] == [a.id]


def test_a_population_continues_with_every_member_in_its_order_and_ended_members_stay_ended(tmp_path, monkeypatch):
    monkeypatch.setattr("tune.experiment.cache_provenance", lambda path: None)  # no feature cache: no trial runs here
    path = tmp_path / "exp" / "P2H"
    first = open_search(path, task="P2H", num_samples=5, population=3, base=SCREEN, grace_period=1)
    unit = first.next()
    ids = list(unit.members)
    assert unit.id == "p0000" and ids == ["p0000-m00", "p0000-m01", "p0000-m02"]
    epoch(first, unit.id, {ids[0]: entry(1, 0.5), ids[1]: entry(1, 0.1, early_stopped=1), ids[2]: entry(1, 0.6)})
    assert first.latest()[ids[1]].state == State.PRUNED  # stopped at its population's rung: told at once
    epoch(first, unit.id, {ids[0]: entry(2, 0.0, diverged=1, reason="non-finite"), ids[2]: entry(2, 0.7)})
    second = open_search(path, resume=True, task="P2H", num_samples=5, population=3, base=SCREEN,
                         grace_period=1)
    again = second.next()
    assert again.id == unit.id and again.members == unit.members  # every member, in order: the state holds them all
    assert second.latest()[ids[0]].state == State.COMPLETE and second.latest()[ids[0]].user_attrs[STATUS_ATTR] == "diverged"
    assert second.latest()[ids[2]].state == State.RUNNING
    last = second.next()
    assert last.id == "p0001" and list(last.members) == ["p0001-m00", "p0001-m01"]  # 5 = 3 + 2


def test_a_stopped_driver_fails_its_running_configs_which_resume_continues(tmp_path):
    """Ctrl-C (or an error of the search): the configs still running are failed with a reason,
    shown as running in trials.csv, and continued by --resume; an errored trial is errored until
    --resume runs it again."""
    path = tmp_path / "exp" / "digits"
    first = open_search(path, early_stop=False, num_samples=2, max_concurrent=2)
    a, b = first.next(), first.next()
    epoch(first, a.id, {a.id: entry(1, 0.5)})
    first.ended(b.id, "RuntimeError: boom")
    first.close()
    latest = first.latest()
    assert latest[a.id].state == State.FAIL and latest[a.id].user_attrs[REASON_ATTR] == INTERRUPTED
    assert latest[b.id].user_attrs[REASON_ATTR] == "RuntimeError: boom" and not first.finished()
    statuses = first.frame().groupby("trial_id")["status"].last().to_dict()
    assert statuses == {a.id: RUNNING, b.id: "errored"}
    second = open_search(path, resume=True, early_stop=False, num_samples=2, max_concurrent=2)
    assert sorted(u.id for u in (second.next(), second.next())) == [a.id, b.id] and second.next() is None


def test_a_resumed_random_search_asks_the_configs_an_uninterrupted_one_asks(tmp_path):
    """Each config is sampled with a seed of its own (the search's seed and its index), so a search
    stopped and resumed asks exactly the configs of one that never stopped, none twice."""
    whole = open_search(tmp_path / "a" / "digits", search="random", num_samples=4)
    expected = [whole.next().members for _ in range(4)]
    cut = open_search(tmp_path / "b" / "digits", search="random", num_samples=4)
    asked = [cut.next().members for _ in range(2)]
    again = open_search(tmp_path / "b" / "digits", search="random", num_samples=4, resume=True)
    asked += [again.next().members for _ in range(4)]
    assert asked[:2] + asked[4:] == expected and asked[2:4] == expected[:2]  # the two cut off first, then the rest


def test_the_searcher_proposes_into_free_slots_and_the_check_finds_what_disagrees(tmp_path):
    record = open_search(tmp_path / "exp" / "digits", num_samples=3, early_stop=False)
    searcher = StudySearcher(record, "target_acc", "max", slots=2)
    assert searcher.suggest("r1")["_unit"] == "t0000" and searcher.suggest("r2") is not None
    assert searcher.suggest("r3") is None  # both slots busy: TPE waits for a result
    searcher.on_trial_complete("r1")
    proposal = searcher.suggest("r3")
    assert proposal["_unit"] == "t0002" and list(proposal[members.MEMBERS_KEY]) == ["t0002"]
    assert searcher.suggest("r4") == StudySearcher.FINISHED
    for unit in ("t0000", "t0001", "t0002"):
        for e in (1, 2, 3):
            epoch(record, unit, {unit: entry(e, 0.1 * e)}, state=e < 3)
    frame = record.frame()
    assert disagreements(record.study.get_trials(), frame, "target_acc") == {}
    wrong = frame.copy()
    wrong.loc[0, "target_acc"] = 0.123
    found = disagreements(record.study.get_trials(), wrong.iloc[1:], "target_acc")
    assert "intermediate values" not in found.get("t0000", "") and "epochs" in found["t0000"]
    assert "intermediate values" in disagreements(record.study.get_trials(), wrong, "target_acc")["t0000"]
    record.study.ask()  # a trial a killed driver left running, of no member
    assert any(k.startswith("#") for k in disagreements(record.study.get_trials(), frame, "target_acc"))


@pytest.mark.parametrize("keep", [False, True])
def test_the_states_of_an_ended_unit_are_removed_unless_kept(tmp_path, keep):
    record = open_search(tmp_path / "exp" / "digits", num_samples=1, early_stop=False, keep_checkpoints=keep)
    unit = record.next()
    for e in (1, 2):
        epoch(record, unit.id, {unit.id: entry(e, 0.5)})
    assert states(tmp_path / "exp" / "digits") == ["trials/t0000/epoch-2.pt"]  # older states go as newer ones are written
    epoch(record, unit.id, {unit.id: entry(3, 0.5)}, state=False)
    record.ended(unit.id, None)
    assert states(tmp_path / "exp" / "digits") == (["trials/t0000/epoch-2.pt"] if keep else [])
    assert (tmp_path / "exp" / "digits" / "trials" / "t0000" / "history.json").exists()  # the history stays


# ---------------------------------------------------------------------------- the study of a real search (--optuna-storage)
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
        assert trial.user_attrs["unit"] == trial.user_attrs["member_id"]  # one config per trial: the trial is its unit
        assert (finished_search.folder / "trials" / trial.user_attrs["unit"] / "history.json").is_file()
        assert trial.user_attrs["status"] == row["status"] == "completed" and trial.user_attrs["attempt"] == 1
        for name in ("target_acc", *EPOCH_VALIDATORS):
            assert trial.user_attrs["final"][name] == pytest.approx(row[name], rel=1e-9), name


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
    # the server `optuna-dashboard URL` starts, through its library function (a second environment, as CI's of the
    # lowest versions, has no script of its own)
    server = [sys.executable, "-c", "import sys; from optuna_dashboard import run_server; "
              "run_server(sys.argv[1], host='127.0.0.1', port=int(sys.argv[2]))", finished_search.storage, url.rsplit(":", 1)[1]]
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


def test_a_journal_whose_last_append_was_cut_short_is_mended_and_read(tmp_path):
    """A full disk during an append leaves a last line cut short: the next driver drops it (Optuna
    would glue its next line to it, and the journal could not be read any more)."""
    path = tmp_path / "exp" / "digits"
    first = open_search(path, early_stop=False, num_samples=2)
    unit = first.next()
    epoch(first, unit.id, {unit.id: entry(1, 0.5)})
    journal = path / "study.journal"
    whole = journal.read_bytes()
    journal.write_bytes(whole + b'{"op_code": 7, "worker_id": "x", "trial_id": 0, "step": 2, "interm')  # cut short
    second = open_search(path, resume=True, early_stop=False, num_samples=2)
    assert journal.read_bytes().startswith(whole) and second.latest()[unit.id].intermediate_values == {1: 0.5}
    optuna.load_study(study_name=second.study.study_name, storage=optuna.storages.JournalStorage(
        optuna.storages.journal.JournalFileBackend(str(journal))))  # readable after the second driver's appends


def test_a_config_whose_identity_a_kill_cut_short_is_failed_and_its_place_asked_again(tmp_path):
    """A sampled config gets its user attributes one append at a time: a driver killed after its
    member id but before its place leaves a trial that is no config's. The next driver fails it and
    asks that place again, once (before, it ran the config twice: as the member's retry, and anew)."""
    path = tmp_path / "exp" / "digits"
    first = open_search(path, early_stop=False, num_samples=2)
    first.next()  # t0000, the default config (asked with its attributes at once)
    torn = first.study.ask(first.space)
    torn.set_user_attr("member_id", "t0001")  # the kill: no unit, attempt, place
    second = open_search(path, resume=True, early_stop=False, num_samples=2)
    assert [u.id for u in (second.next(), second.next())] == ["t0000", "t0001"] and second.next() is None
    states = {t.number: t.state for t in second.study.get_trials()}
    assert states[torn.number] == State.FAIL and list(second.latest()) == ["t0000", "t0001"]
    assert second.latest()["t0001"].number > torn.number
