"""`tune/state.py`: Ray's saved state checked before --resume (corrupt, other settings), repaired
when a checkpoint it needs is gone; all on a copy of a real finished search."""
from __future__ import annotations

import json
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


@pytest.mark.parametrize("pattern", ["experiment_state-*.json", "tuner.pkl", "searcher-state-*.pkl"])
def test_a_truncated_ray_state_is_refused_before_anything_runs(stopped, pattern):
    import ray

    folder, options = stopped
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


def test_a_finished_trial_whose_checkpoint_is_gone_gets_an_ended_marker(stopped):
    """The saved state of a driver killed after a trial ended (its end not saved) and after the
    trial's checkpoints were removed: --resume would error it for good."""
    folder, _ = stopped
    fs, path = storage.filesystem(str(folder))
    state_file = sorted(folder.glob("experiment_state-*.json"))[-1]
    saved = json.loads(state_file.read_text())
    trial = json.loads(saved["trial_data"][0][0])
    trial["status"] = "RUNNING"
    saved["trial_data"][0][0] = json.dumps(trial)
    state_file.write_text(json.dumps(saved))
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
    state_file = sorted(folder.glob("experiment_state-*.json"))[-1]
    saved = json.loads(state_file.read_text())
    trial = json.loads(saved["trial_data"][0][0])
    trial["status"] = "RUNNING"
    saved["trial_data"][0][0] = json.dumps(trial)
    state_file.write_text(json.dumps(saved))
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
