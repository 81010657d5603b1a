"""The index page of a study (``index.html``): every output of ``python tune/study.py`` one click away.

The page links the final table beside the paper (and shows it), each task's sensitivity dashboard,
the atlas across tasks, each task's screen, confirmation and feature cache; it shows how each
screen agreed with its confirmation (:func:`analysis.data.study.agreement_table`, a task where they
disagree is flagged in red) and what each stage was predicted to cost beside what it cost
(:func:`analysis.data.study.cost_table`). Links are relative: the folder can be moved or served as
it is. The values are computed here; the template ``templates/study.html`` lays them out (with
the pages' one environment, :mod:`analysis.dashboard.templates`: every value escaped). No script:
it opens offline.
"""
from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

import pandas as pd

from analysis.dashboard.templates import render
from analysis.data.study import DISAGREE, agreement_table, cost_table
from ssot.results.markdown import markdown_table
from ssot.results.study import STUDY_FILE, TASK_STAGES, StudyPaths, StudyRecord

__all__ = ["study_page", "agreement_markdown"]


def _num(value: Any, digits: int = 2) -> str:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return ""
    return "" if math.isnan(number) else f"{number:.{digits}f}"


def _seconds(value: Any) -> str:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return ""
    if math.isnan(number):
        return ""
    return f"{number:.0f} s" if number < 90 else f"{number / 60:.1f} min" if number < 5400 else f"{number / 3600:.2f} h"


def _link(root: Path, target: Path, text: str) -> dict[str, str | None]:
    """A link relative to the study folder, or none when the file is not written yet."""
    return {"text": text, "href": os.path.relpath(target, root) if target.exists() else None}


def _final(paths: StudyPaths) -> dict[str, Any]:
    csv = paths.final / "results.csv"
    out: dict[str, Any] = {"links": [_link(paths.root, paths.final / "results.md", "results.md"), _link(paths.root, csv, "results.csv")],
                           "header": ["task", "dataset", "seeds", "SSOT (ours, %)", "source-only (ours, %)", "SSOT (paper, %)",
                                      "ours - paper", "statuses"], "rows": []}
    if csv.exists():
        out["rows"] = [[r["task"], r["dataset"], r["seeds"], f"{_num(r['ssot_acc_mean'], 1)} ± {_num(r['ssot_acc_std'], 1)}",
                        f"{_num(r['source_only_acc_mean'], 1)} ± {_num(r['source_only_acc_std'], 1)}", _num(r["paper_ssot_acc"], 1),
                        _num(r["delta_vs_paper"], 1), r["statuses"]] for r in pd.read_csv(csv).to_dict("records")]
    return out


def _tasks(paths: StudyPaths, record: StudyRecord) -> dict[str, Any]:
    rows = [{"task": task, "stages": ", ".join(s for s in TASK_STAGES if record.done(task, s)) or "none",
             "links": [_link(paths.root, paths.dashboard(task), "dashboard"),
                       _link(paths.root, paths.screen(task) / "trials.csv", "screen"),
                       _link(paths.root, paths.confirm(task) / "confirmation.md", "confirmation"),
                       _link(paths.root, paths.confirm(task) / f"{task}.json", "confirmed config"),
                       _link(paths.root, paths.features(task), "feature cache")]}
            for task in record.tasks]
    return {"header": ["task", "sensitivity", "screen", "confirmation", "config", "cache", "stages done"], "rows": rows}


def _agreement_cells(r: dict[str, Any]) -> list[str]:
    return [r["task"], str(r["n"]), _num(r["spearman"]), _num(r["kendall"]), f"{r['screen_best']} (#{r['screen_best_position']})",
            f"{r['pick']} (screen #{r['pick_screen_rank']})", _num(r["regret"], 1), _num(r["noise"], 1)]


AGREEMENT_HEADER = ["task", "configs", "Spearman", "Kendall τb", "screen's best (its place confirmed)", "confirmed pick", "regret",
                    "noise", "verdict"]


def agreement_markdown(table: pd.DataFrame) -> str:
    """The agreement table as GitHub Markdown (one row per task)."""
    rows = [[*_agreement_cells(r), r["verdict"]] for r in table.to_dict("records")]
    return markdown_table(AGREEMENT_HEADER, rows, "lrrrllrrl")


def _agreement(paths: StudyPaths, table: pd.DataFrame) -> dict[str, Any]:
    csv, md = paths.agreement
    records = table.to_dict("records")
    return {"links": [_link(paths.root, md, "agreement.md"), _link(paths.root, csv, "agreement.csv")],
            "header": AGREEMENT_HEADER, "flagged": [r["task"] for r in records if r["verdict"] == DISAGREE],
            "rows": [{"cells": _agreement_cells(r), "verdict": r["verdict"], "disagree": r["verdict"] == DISAGREE} for r in records]}


def _cost(record: StudyRecord) -> dict[str, Any]:
    plan = record.plan or {}
    loads = [float(step["load"]) for step in record.steps.values() if step.get("load") is not None]
    return {"machine": plan.get("machine") or record.machine.get("label") or "this machine",
            "rates": plan.get("rates") or "no plan recorded", "gave_up": list(plan.get("gave_up", [])),
            "load": (f"Load average at the steps' ends: {min(loads):.1f} to {max(loads):.1f} (the machine's other work slows "
                     "every step alike)." if loads else ""),
            "header": ["stage", "predicted", "measured", "measured / predicted"],
            "rows": [[r["stage"], _seconds(r["predicted_s"]), _seconds(r["measured_s"]), _num(r["ratio"])]
                     for r in cost_table(record).to_dict("records")]}


def study_page(paths: StudyPaths, record: StudyRecord) -> str:
    """The HTML of the study's index page."""
    settings = record.settings
    summary = (f"{len(record.tasks)} task(s): {', '.join(record.tasks)}; screen of {settings.get('num_samples')} configs "
               f"(populations of {settings.get('population')}, {settings.get('search')}, selecting on {settings.get('metric')}); "
               f"top {settings.get('top')} confirmed on images over seeds {' '.join(map(str, settings.get('seeds', [])))}; "
               f"final runs over seeds {' '.join(map(str, settings.get('final_seeds', [])))}.")
    if settings.get("base"):
        summary += " Config overrides: " + ", ".join(f"{k}={v}" for k, v in settings["base"].items()) + "."
    for dataset, changes in (settings.get("shrunk") or {}).items():
        summary += f" The budget shrank {dataset}'s confirmation: " + ", ".join(f"{k}={v}" for k, v in changes.items()) + "."
    atlas = _link(paths.root, paths.atlas / "atlas.html", "the atlas across tasks") if len(record.tasks) >= 2 else None
    return str(render("study.html", title=f"Study {paths.root.name}", summary=summary, status=record.status,
                      record=_link(paths.root, paths.record, STUDY_FILE), created=record.created, updated=record.updated,
                      final=_final(paths), atlas=atlas, tasks=_tasks(paths, record),
                      agreement=_agreement(paths, agreement_table(record)), cost=_cost(record)))
