"""`tune/state.py`: Ray's saved state checked before --resume (corrupt, other settings), repaired
when a checkpoint it needs is gone; all on a copy of a real finished search."""
from __future__ import annotations

import json
import pickle
import shutil

import pytest

from ssot.errors import SSOTError
from ssot.results import storage
from tests.fixtures import QUICK
from tests.fixtures.experiments import digest
from tune import state
from tune.experiment import run_search
from tune.options import SearchOptions


@pytest.fixture
def stopped(finished_search, tmp_path):
    """A copy of the finished search (3 trials x 2 epochs) whose experiment.json says running, as
    after a driver that died, and the options that resume it."""
    root = tmp_path / "runs"
    shutil.copytree(finished_search.results, root)
    folder = root / "live" / "digits"
    meta = json.loads((folder / "experiment.json").read_text())
    (folder / "experiment.json").write_text(json.dumps({**meta, "status": "running"}))
    options = SearchOptions(task="digits", num_samples=3, base={**QUICK, "epochs": finished_search.epochs}, storage_path=str(root),
                            name="live", early_stop=False, max_concurrent=2, verbose=0, resume=True)
    return folder, options


def _cut(path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def test_resume_with_other_settings_is_refused_naming_them(stopped):
    import dataclasses

    import ray

    folder, options = stopped
    before = digest(folder)
    other = dataclasses.replace(options, num_samples=5, base={**options.base, "epochs": 3, "lr": 0.01})
    with pytest.raises(SSOTError, match=r"--resume continues experiment .* but this command asks for --epochs 3 "
                                              r"\(the experiment's: 2\); --num-samples 5 \(the experiment's: 3\); config field "
                                              r"lr 0.01 \(the experiment's: 0.0001\)\. Rerun with the flags"):
        run_search(other)
    assert digest(folder) == before and not ray.is_initialized()


@pytest.mark.parametrize("pattern", ["experiment_state-*.json", "tuner.pkl", "searcher-state-*.pkl", "search_gen_state-*.json"])
def test_a_truncated_ray_state_without_a_last_good_copy_is_refused_before_anything_runs(stopped, pattern):
    """An experiment without the last good copy (started by an earlier version, or whose copy is gone)."""
    import ray

    folder, options = stopped
    shutil.rmtree(folder / state.LAST_GOOD_DIR)
    target = sorted(folder.glob(pattern))[-1]
    _cut(target)
    before = digest(folder)
    with pytest.raises(state.CorruptStateError, match=rf"cannot be resumed: {target.name}.*truncated.*a full disk, or a copy cut short\?\)\. Nothing was run"):
        run_search(options)
    assert digest(folder) == before and not ray.is_initialized()


def test_saved_trials_that_do_not_match_experiment_json_are_refused(stopped):
    folder, options = stopped
    meta = json.loads((folder / "experiment.json").read_text())
    meta["num_samples"] = 2  # the saved state holds 3 trials
    (folder / "experiment.json").write_text(json.dumps(meta))
    import dataclasses

    with pytest.raises(state.CorruptStateError, match="cannot be resumed: it holds 3 trials but experiment.json asks for 2 trials of 2 epochs"):
        run_search(dataclasses.replace(options, num_samples=2))


def _saved_as_running(folder) -> dict:
    """Rewrite the newest saved state of ``folder`` as if its first trial were still running (a
    driver killed before that trial's end was saved); returns that trial's saved data."""
    state_file = sorted(folder.glob("experiment_state-*.json"))[-1]
    saved = json.loads(state_file.read_text())
    trial = json.loads(saved["trial_data"][0][0])
    trial["status"] = "RUNNING"
    saved["trial_data"][0][0] = json.dumps(trial)
    state_file.write_text(json.dumps(saved))
    return trial


def test_a_finished_trial_whose_checkpoint_is_gone_gets_an_ended_marker(stopped):
    """The saved state of a driver killed after a trial ended (its end not saved) and after the
    trial's checkpoints were removed: --resume would error it for good."""
    folder, _ = stopped
    fs, path = storage.filesystem(str(folder))
    trial = _saved_as_running(folder)
    trials = state.saved_trials(fs, path)
    assert [t.status for t in trials] == ["RUNNING", "TERMINATED", "TERMINATED"] and trials[0].checkpoint is not None
    assert not list(folder.glob("trial_*/checkpoint_*"))  # the finished search removed every checkpoint
    assert state.check_resumable(fs, path, str(folder), max_epochs=2, expected_trials=3)
    assert state.repair_checkpoints(fs, path, {}, max_epochs=2) == [f"{trial['trial_id']}: it had ended (its checkpoint was removed)"]
    marker = folder / trial["relative_logdir"] / f"checkpoint_{trials[0].checkpoint:06d}" / state.ENDED_FILE
    assert json.loads(marker.read_text())["trial_id"] == trial["trial_id"]
    assert state.repair_checkpoints(fs, path, {}, max_epochs=2) == []  # once


def test_a_running_trial_whose_checkpoint_is_gone_continues_from_its_newest_complete_one(stopped):
    """A trial's checkpoints hold its members' state (tune.state.STATE_FILE): the repair copies the newest complete one."""
    folder, _ = stopped
    fs, path = storage.filesystem(str(folder))
    trial = _saved_as_running(folder)
    wanted = state.saved_trials(fs, path)[0].checkpoint
    assert wanted >= 1
    older = folder / trial["relative_logdir"] / f"checkpoint_{wanted - 1:06d}"
    older.mkdir(parents=True)
    (older / state.STATE_FILE).write_bytes(b"members")
    # max_epochs beyond the last result: the trial had not ended, it continues
    assert state.repair_checkpoints(fs, path, {}, max_epochs=99) == [
        f"{trial['trial_id']}: continues from its checkpoint of epoch-index {wanted - 1}"]
    copied = folder / trial["relative_logdir"] / f"checkpoint_{wanted:06d}" / state.STATE_FILE
    assert copied.read_bytes() == b"members"


def test_a_search_started_by_the_previous_trial_shape_is_refused_on_resume_in_one_line(stopped):
    """Experiments written before the one trial shape (two trainables, members as JSON in a result
    column) cannot be restored by the one trainable: --resume says so before Ray starts."""
    import ray

    folder, options = stopped
    meta = json.loads((folder / "experiment.json").read_text())
    del meta["trial_format"]
    (folder / "experiment.json").write_text(json.dumps(meta))
    before = digest(folder)
    with pytest.raises(SSOTError, match=r"^--resume: experiment .* was started by an earlier version of the search, whose Ray "
                                        r"state holds trials of another shape, so it cannot be continued; .* Start a new search"):
        run_search(options)
    assert digest(folder) == before and not ray.is_initialized()


def test_a_finished_search_keeps_a_last_good_copy_of_rays_last_save(finished_search):
    """The copy (tune.live.KeepLastGood) is Ray's last save: the newest file of each kind, whole, named by its SHA-256."""
    folder = finished_search.folder
    index = json.loads((folder / state.LAST_GOOD_DIR / state.LAST_GOOD_INDEX).read_text())["files"]
    newest = {sorted(folder.glob(pattern))[-1].name for pattern in state.SAVE_PATTERNS if list(folder.glob(pattern))}
    assert set(index) == newest and {"searcher-state", "search_gen_state", "experiment_state"} <= {n.split("-2")[0] for n in index}
    for name, digest_ in index.items():
        assert (folder / state.LAST_GOOD_DIR / digest_).read_bytes() == (folder / name).read_bytes()
    assert sorted(p.name for p in (folder / state.LAST_GOOD_DIR).iterdir()) == sorted([*index.values(), state.LAST_GOOD_INDEX])


@pytest.mark.parametrize("damage", ["cut", "empty", "mixed", "newer"])
def test_rays_state_cut_short_by_a_killed_copy_is_restored_from_its_last_good_copy_and_resumed(stopped, damage):
    """Ray copies its state files into the experiment folder in place (open, truncate, write): a
    driver killed during the copy left an experiment state cut short (the CI failure of the killed
    population search: "experiment_state-....json is truncated or not Ray's") or of two saves, and
    the search could never be resumed. --resume now puts Ray's last save back from its copy and
    goes on; nothing of trials.csv is lost."""
    import ray

    folder, options = stopped
    before = (folder / "trials.csv").read_text()
    target = sorted(folder.glob("experiment_state-*.json"))[-1]
    good = target.read_bytes()
    searcher = sorted(folder.glob("searcher-state-*.pkl"))[-1]
    good_searcher = searcher.read_bytes()
    if damage == "cut":  # the kill fell in the middle of the copy: both files cut short
        _cut(target)
        _cut(searcher)
    elif damage == "empty":  # right after the copy truncated the file
        target.write_bytes(b"")
    elif damage == "mixed":  # whole files, but the searcher's of another save than the trials'
        searcher.write_bytes(pickle.dumps({"an older save": True}))
    else:  # a later driver's first copy, cut short
        (folder / "experiment_state-2999-01-01_00-00-00.json").write_bytes(good[:100])
    lines = state.restore_last_good(str(folder))
    assert lines and all("restored from the last good copy" in line or "set aside" in line for line in lines), lines
    assert target.read_bytes() == good and searcher.read_bytes() == good_searcher and not (folder / "experiment_state-2999-01-01_00-00-00.json").exists()
    assert state.restore_last_good(str(folder)) == []  # once
    outcome = run_search(options)
    assert outcome.status == "finished" and (folder / "trials.csv").read_text() == before and not ray.is_initialized()


def test_a_damaged_last_good_copy_is_not_used(stopped):
    folder, options = stopped
    index = json.loads((folder / state.LAST_GOOD_DIR / state.LAST_GOOD_INDEX).read_text())["files"]
    name = next(n for n in index if n.startswith("experiment_state"))
    _cut(folder / state.LAST_GOOD_DIR / index[name])
    _cut(folder / name)
    assert state.restore_last_good(str(folder)) == [
        f"the last good copy of Ray's saved state ({state.LAST_GOOD_DIR}/) is damaged at {name}: not used"]
    with pytest.raises(state.CorruptStateError, match=f"cannot be resumed: {name} is truncated"):
        run_search(options)


def test_the_last_good_copy_is_whole_at_every_moment_of_its_writing(tmp_path, monkeypatch):
    """Each copy is written before the index that names it, and removed only once no index names it:
    a driver killed at any write leaves an index whose copies are all there."""
    staging, exp = tmp_path / "staging", tmp_path / "exp"
    staging.mkdir()
    exp.mkdir()
    saves = [{"experiment_state-A.json": json.dumps({"trial_data": []}).encode(), "searcher-state-A.pkl": pickle.dumps({"n": n})}
             for n in range(3)]
    keeper = state.LastGood(str(exp))
    written = []
    real = storage.write_bytes
    monkeypatch.setattr(storage, "write_bytes", lambda uri, data: (written.append(uri), real(uri, data)))
    for files in saves:
        for name, data in files.items():
            (staging / name).write_bytes(data)
        keeper.keep(state.save_files(str(staging)))
        index = json.loads((exp / state.LAST_GOOD_DIR / state.LAST_GOOD_INDEX).read_text())["files"]
        assert {n: (exp / state.LAST_GOOD_DIR / d).read_bytes() for n, d in index.items()} == files
    # the index is the last file written at each save; the unchanged experiment state was stored once
    assert [w.rsplit("/", 1)[-1] == state.LAST_GOOD_INDEX for w in written].count(True) == 3
    assert written[-1].endswith(state.LAST_GOOD_INDEX) and len(written) == (2 + 1) + (1 + 1) + (1 + 1)
    assert len(list((exp / state.LAST_GOOD_DIR).iterdir())) == 3  # the index and the last save's two copies
    with pytest.raises(ValueError, match="searcher-state-A.pkl is truncated or not a pickle"):
        keeper.keep({"experiment_state-A.json": saves[0]["experiment_state-A.json"], "searcher-state-A.pkl": b"\x80\x04"})


def test_a_full_disk_keeps_the_previous_copy_and_a_save_that_cannot_be_checked_drops_it(tmp_path, monkeypatch, capsys):
    """A full disk fails the copy of a save and Ray's own copy of it too (its files cut short: a
    3 MB tmpfs, docs/reliability.md): the previous copy stays, and --resume restores it (before,
    the copy was dropped and the search could not be resumed). A save whose files cannot be checked
    (Ray's own may be whole and newer) drops the copy: --resume reads Ray's files."""
    import errno
    from types import SimpleNamespace

    from tune.live import KeepLastGood

    staging, exp = tmp_path / "staging", tmp_path / "exp"
    staging.mkdir()
    exp.mkdir()
    first = {"experiment_state-A.json": json.dumps({"trial_data": []}).encode(), "searcher-state-A.pkl": pickle.dumps({"n": 0})}
    for name, data in first.items():
        (staging / name).write_bytes(data)
    keeper = KeepLastGood(str(exp))
    keeper.on_step_begin(1, [SimpleNamespace(storage=SimpleNamespace(experiment_driver_staging_path=str(staging)))])
    assert keeper.get_state() is None
    index = exp / state.LAST_GOOD_DIR / state.LAST_GOOD_INDEX
    kept = index.read_text()
    (staging / "searcher-state-A.pkl").write_bytes(pickle.dumps({"n": 1}))  # the next save, on a full disk

    def full(uri: str, data: bytes) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(storage, "write_bytes", full)
    keeper.get_state()
    assert "the last good copy of Ray's saved state was not written (OSError" in capsys.readouterr().err
    assert index.read_text() == kept
    monkeypatch.undo()
    (exp / "experiment_state-A.json").write_bytes(first["experiment_state-A.json"][:5])  # Ray's own copy, cut short
    (exp / "searcher-state-A.pkl").write_bytes(b"")
    lines = state.restore_last_good(str(exp))
    assert len(lines) == 2 and all("restored from the last good copy" in line for line in lines), lines
    assert {name: (exp / name).read_bytes() for name in first} == first
    (staging / "searcher-state-A.pkl").write_bytes(b"\x80\x04")  # a save that is not whole
    keeper.get_state()
    assert not index.exists() and state.restore_last_good(str(exp)) == []


def test_result_json_files_cut_short_by_a_killed_copy_lose_no_epoch(stopped):
    """Ray rewrites every trial's result.json in place at each save of its state: a driver killed
    then leaves them cut short or empty, and trials.csv, built from them, lost those trials' epochs
    on --resume. It is built from the history that each trial's checkpoint holds
    (tune.state.HISTORY_FILE), kept in the trial's folder once it ended."""
    folder, options = stopped
    before = (folder / "trials.csv").read_text()
    kept = sorted(folder.glob(f"trial_*/{state.HISTORY_FILE}"))
    assert len(kept) == 3 and not list(folder.glob("trial_*/checkpoint_*"))  # the checkpoints are gone, the histories kept
    for result in folder.glob("trial_*/result.json"):
        result.write_bytes(b"" if result.parent == kept[0].parent else result.read_bytes()[:100])
    outcome = run_search(options)
    assert outcome.status == "finished" and (folder / "trials.csv").read_text() == before


def test_a_driver_killed_while_ray_wrote_tuner_pkl_leaves_a_search_that_starts_anew(tmp_path):
    """Ray writes tuner.pkl in place when a search starts, before its first save: a driver killed
    then left it cut short, and --resume refused the experiment for good. With no saved state and
    no trials.csv, nothing was recorded: the search starts anew (Ray writes tuner.pkl again)."""
    folder = tmp_path / "exp"
    folder.mkdir()
    (folder / state.TUNER_FILE).write_bytes(pickle.dumps({"tuner": "state"})[:7])
    fs, path = storage.filesystem(str(folder))
    assert state.check_resumable(fs, path, str(folder), max_epochs=2, expected_trials=3) is False
    (folder / "trials.csv").write_text("task,trial_id\n")  # results exist: never started anew over them
    with pytest.raises(state.CorruptStateError, match="cannot be resumed: tuner.pkl is truncated or not a pickle"):
        state.check_resumable(fs, path, str(folder), max_epochs=2, expected_trials=3)
