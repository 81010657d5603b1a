"""A study's folder and its record: what ``python tune/study.py`` has done (one owner).

A *study* runs, per task, four stages, each with one of the project's own commands' library
functions (``tune/stages.py``): the feature cache, the population screen on it, the confirmation
of the screen's top configs on images over seeds, and the final runs of the confirmed config;
then, once for the whole study, the report: the table beside the paper, one sensitivity dashboard
per task, the atlas across tasks and the study's index page (``analysis/study.py``). Everything
lands in one folder, laid out as :class:`StudyPaths` says:

``study.json`` (:data:`STUDY_FILE`)
    the record (:class:`StudyRecord`): the study's settings, the plan (its predicted cost per task
    and stage), every *step* finished (a stage of a task, or a report step) with the wall seconds
    it took, each task's confirmation summary (what the index page compares with the screen) and
    the study's status. It is the only record of what is done: a step is done when the record says
    so, and ``--resume`` never runs a done step again. It is rewritten whole, atomically (written
    beside and renamed, :func:`ssot.results.storage.write_text`), after every step: a kill at any
    moment leaves the previous record or the new one, never half of one.
``features/<task>.pt``, ``screen/<task>/``, ``confirm/<task>/``, ``final/``
    the stages' outputs, in the formats of the commands that write them (a feature cache, a search
    experiment, a confirmation folder, final runs and ``results.csv``/``results.md``);
``dashboards/<task>.html``, ``atlas/atlas.html``, ``index.html``, ``agreement.csv``/``.md``
    the report.

Nothing here trains or draws: ``tune`` writes the record through this module, ``analysis`` reads it.
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ssot.errors import ResultsError
from ssot.results import storage
from ssot.results.experiment import now

__all__ = ["STUDY_FILE", "FORMAT", "STAGES", "TASK_STAGES", "REPORT_STEPS", "RUNNING", "FINISHED", "ALL_TASKS", "StudyPaths",
           "StudyRecord", "step_key", "stage_of", "read_study", "write_study", "is_study"]

STUDY_FILE = "study.json"
#: The record's format version (a record of another version is refused in one line).
FORMAT = 1
#: The stages of one task, in the order they run.
TASK_STAGES: tuple[str, ...] = ("features", "screen", "confirm", "final")
#: The steps of the report, run once all tasks are done: the table beside the paper, each task's
#: dashboard, the atlas across tasks and the index page.
REPORT_STEPS: tuple[str, ...] = ("table", "dashboard", "atlas", "index")
#: The stages a study's cost is planned and measured by (the report counts as one).
STAGES: tuple[str, ...] = (*TASK_STAGES, "report")
RUNNING, FINISHED = "running", "finished"
#: The task of the study-wide steps in step keys (``*/atlas``).
ALL_TASKS = "*"


def step_key(task: str, step: str) -> str:
    """``<task>/<step>``: a stage of a task (``P2H/screen``), a task's dashboard (``P2H/dashboard``)
    or a study-wide step (``*/atlas``)."""
    return f"{task}/{step}"


def stage_of(step: str) -> str:
    """The stage a step's cost counts in: a task stage itself, any report step ``report``."""
    return step if step in TASK_STAGES else "report"


@dataclass(frozen=True)
class StudyPaths:
    """Where each output of the study in ``root`` lies (one layout, read by tune and analysis)."""

    root: Path

    @property
    def record(self) -> Path:
        return self.root / STUDY_FILE

    def features(self, task: str) -> Path:
        return self.root / "features" / f"{task}.pt"

    @property
    def screens(self) -> Path:
        """The screens' storage path: ``tune/search.py --storage-path``; the experiment name is :attr:`SCREEN_NAME`."""
        return self.root

    SCREEN_NAME = "screen"

    @property
    def screen_root(self) -> Path:
        """The folder holding one search experiment per task (what the atlas reads)."""
        return self.root / self.SCREEN_NAME

    def screen(self, task: str) -> Path:
        return self.screen_root / task

    def confirm(self, task: str) -> Path:
        return self.root / "confirm" / task

    @property
    def final(self) -> Path:
        return self.root / "final"

    @property
    def dashboards(self) -> Path:
        return self.root / "dashboards"

    def dashboard(self, task: str) -> Path:
        return self.dashboards / f"{task}.html"

    @property
    def atlas(self) -> Path:
        return self.root / "atlas"

    @property
    def index(self) -> Path:
        return self.root / "index.html"

    @property
    def agreement(self) -> tuple[Path, Path]:
        """The screen-vs-confirmation agreement table: CSV and Markdown."""
        return self.root / "agreement.csv", self.root / "agreement.md"

    @property
    def partial(self) -> Path:
        """Where a report step writes before its output is moved into place (removed when it is)."""
        return self.root / ".partial"


@dataclass
class StudyRecord:
    """The content of ``study.json`` (module docstring).

    Attributes
    ----------
    settings : what defines the study's results (tasks, sizes, seeds, config overrides, ...): a
        ``--resume`` with other settings is refused.
    machine : the machine the study runs on (``label``, ``device``, ``cpus``, ``gpus``).
    plan : the plan printed before the work: ``machine`` (what an hour is an hour of), ``rates``
        (where the rates came from), ``steps`` (one per step: ``task``, ``step``, ``seconds``),
        ``gave_up`` (what ``--budget`` gave up, one line each).
    steps : step key (:func:`step_key`) -> ``{"seconds", "finished", ...}`` for every finished step.
    confirmations : task -> its confirmed candidates, best of the screen first: ``trial_id``,
        ``search_rank``, ``search_value``, ``mean``, ``std``, ``seeds``, ``confirmed``.
    status : ``running`` or ``finished``.
    """

    settings: dict[str, Any]
    machine: dict[str, Any] = field(default_factory=dict)
    plan: dict[str, Any] = field(default_factory=dict)
    steps: dict[str, dict[str, Any]] = field(default_factory=dict)
    confirmations: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    status: str = RUNNING
    created: str = field(default_factory=now)
    updated: str = field(default_factory=now)

    # ------------------------------------------------------------------ steps
    @property
    def tasks(self) -> list[str]:
        return list(self.settings.get("tasks", []))

    def done(self, task: str, step: str) -> bool:
        """Whether the step is recorded as finished."""
        return step_key(task, step) in self.steps

    def finish(self, task: str, step: str, seconds: float, **details: Any) -> None:
        """Record a step as finished after ``seconds`` of wall time (with ``details``, e.g. its outputs)."""
        self.steps[step_key(task, step)] = {"seconds": round(float(seconds), 2), "finished": now(), **details}

    def measured(self) -> dict[tuple[str, str], float]:
        """``(task, stage) -> seconds`` of the finished steps (report steps summed into ``(task, "report")``,
        the study-wide ones under the task ``*``)."""
        out: dict[tuple[str, str], float] = {}
        for key, step in self.steps.items():
            task, _, name = key.partition("/")
            where = (task, stage_of(name))
            out[where] = out.get(where, 0.0) + float(step.get("seconds", 0.0))
        return out

    def predicted(self) -> dict[tuple[str, str], float]:
        """``(task, stage) -> seconds`` of the plan (its report steps summed as :func:`measured` sums them)."""
        out: dict[tuple[str, str], float] = {}
        for row in self.plan.get("steps", []):
            where = (str(row["task"]), stage_of(str(row["step"])))
            out[where] = out.get(where, 0.0) + float(row["seconds"])
        return out

    # ------------------------------------------------------------------ (de)serialisation
    def to_dict(self) -> dict[str, Any]:
        return {"format": FORMAT, "kind": "ssot-study", "status": self.status, "created": self.created,
                "updated": self.updated, "settings": self.settings, "machine": self.machine, "plan": self.plan,
                "steps": self.steps, "confirmations": self.confirmations}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str = STUDY_FILE) -> StudyRecord:
        """The record of ``data`` (a parsed ``study.json``), checked: one line naming the problem."""
        if not isinstance(data, Mapping) or data.get("kind") != "ssot-study":
            raise ResultsError(f"{where} is not the record of a study (written by tune/study.py).")
        if data.get("format") != FORMAT:
            raise ResultsError(f"{where} has format {data.get('format')!r}; this version reads format {FORMAT}. "
                               "Finish it with the version that started it, or start a new study.")
        settings, steps = data.get("settings"), data.get("steps")
        if not isinstance(settings, Mapping) or not isinstance(steps, Mapping) or data.get("status") not in (RUNNING, FINISHED):
            raise ResultsError(f"{where} lacks its settings, steps or status: it was not written by tune/study.py.")
        return cls(settings=dict(settings), machine=dict(data.get("machine") or {}), plan=dict(data.get("plan") or {}),
                   steps={str(k): dict(v) for k, v in steps.items()},
                   confirmations={str(k): list(v) for k, v in (data.get("confirmations") or {}).items()},
                   status=str(data["status"]), created=str(data.get("created", "")), updated=str(data.get("updated", "")))

    def differences(self, settings: Mapping[str, Any]) -> list[str]:
        """The settings in which ``settings`` differ from the recorded ones, ``name: recorded -> given``."""
        keys = sorted(set(self.settings) | set(settings))
        return [f"{k}: {self.settings.get(k)!r} -> {settings.get(k)!r}" for k in keys
                if _normal(self.settings.get(k)) != _normal(settings.get(k))]


def _normal(value: Any) -> Any:
    """A setting as JSON writes and reads it back (tuples become lists, floats stay floats)."""
    return json.loads(json.dumps(value))


def is_study(folder: str | Path) -> bool:
    """Whether ``folder`` holds a study's record."""
    return (Path(folder) / STUDY_FILE).is_file()


def read_study(folder: str | Path) -> StudyRecord:
    """The record of the study in ``folder``.

    Raises
    ------
    ResultsError
        If there is none, or it is not valid JSON or not a study's record (one line naming the file).
    """
    path = Path(folder) / STUDY_FILE
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise ResultsError(f"No study in {folder}: {STUDY_FILE} is missing. Start one with python tune/study.py.") from None
    except OSError as exc:
        raise ResultsError(f"{path} cannot be read ({exc.strerror or exc}).") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ResultsError(f"{path} is not valid JSON ({exc.msg} at line {exc.lineno}); it was not written by tune/study.py.") from None
    return StudyRecord.from_dict(data, str(path))


def write_study(folder: str | Path, record: StudyRecord) -> Path:
    """Write the record into ``folder`` at once (atomically: the previous record or this one, never
    half of one); returns its path."""
    record.updated = now()
    path = Path(folder) / STUDY_FILE
    storage.write_text(str(path), json.dumps(record.to_dict(), indent=2, allow_nan=False, default=_json_default) + "\n")
    return path


def _json_default(value: Any) -> Any:
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")
