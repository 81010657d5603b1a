"""The index page of a study (``index.html``): every output of ``python tune/study.py`` one click away.

The page links the final table beside the paper (and shows it), each task's sensitivity dashboard,
the atlas across tasks, each task's screen, confirmation and feature cache; it shows how each
screen agreed with its confirmation (:func:`analysis.data.study.agreement_table`, a task where they
disagree is flagged in red) and what each stage was predicted to cost beside what it cost
(:func:`analysis.data.study.cost_table`). Links are relative: the folder can be moved or served as
it is. Plain HTML, no script: it opens offline.
"""
from __future__ import annotations

import html
import math
import os
from pathlib import Path
from string import Template
from typing import Any

import pandas as pd

from analysis.dashboard.template import HEAD
from analysis.data.study import DISAGREE, agreement_table, cost_table
from ssot.results.study import STUDY_FILE, StudyPaths, StudyRecord

__all__ = ["study_page", "agreement_markdown"]

_PAGE = Template(HEAD + """  main { padding: 12px 24px 40px; max-width: 1100px; }
  h1 { font-size: 22px; } h2 { font-size: 17px; margin-top: 28px; border-bottom: 1px solid #ddd; }
  table { border-collapse: collapse; font-size: 13px; margin: 8px 0; }
  th, td { border: 1px solid #ccc; padding: 3px 8px; text-align: right; }
  th { background: #eee; } td.l, th.l { text-align: left; }
  tr.disagree td { background: #fde2e2; } .flag { color: #b00020; font-weight: bold; }
  .meta { color: #555; font-size: 13px; } .missing { color: #888; }
</style>
</head>
<body>
<main>
<h1>$title</h1>
$body
</main>
</body>
</html>
""")


def _e(value: Any) -> str:
    return html.escape(str(value))


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


def _link(root: Path, target: Path, text: str) -> str:
    if not target.exists():
        return f'<span class="missing">{_e(text)} (not written yet)</span>'
    return f'<a href="{_e(os.path.relpath(target, root))}">{_e(text)}</a>'


def _table(header: list[str], rows: list[list[str]], left: int = 1, classes: list[str] | None = None) -> str:
    head = "".join(f'<th class="l">{h}</th>' if i < left else f"<th>{h}</th>" for i, h in enumerate(header))
    body = []
    for k, row in enumerate(rows):
        cls = f' class="{classes[k]}"' if classes and classes[k] else ""
        body.append(f"<tr{cls}>" + "".join(f'<td class="l">{c}</td>' if i < left else f"<td>{c}</td>" for i, c in enumerate(row)) + "</tr>")
    return f"<table><tr>{head}</tr>{''.join(body)}</table>"


def _final_table(paths: StudyPaths) -> str:
    csv = paths.final / "results.csv"
    links = f"{_link(paths.root, paths.final / 'results.md', 'results.md')} · {_link(paths.root, csv, 'results.csv')}"
    if not csv.exists():
        return f"<p>{links}</p>"
    table = pd.read_csv(csv)
    rows = [[_e(r["task"]), _e(r["dataset"]), _e(r["seeds"]), f"{_num(r['ssot_acc_mean'], 1)} ± {_num(r['ssot_acc_std'], 1)}",
             f"{_num(r['source_only_acc_mean'], 1)} ± {_num(r['source_only_acc_std'], 1)}", _num(r["paper_ssot_acc"], 1),
             _num(r["delta_vs_paper"], 1), _e(r["statuses"])] for r in table.to_dict("records")]
    header = ["task", "dataset", "seeds", "SSOT (ours, %)", "source-only (ours, %)", "SSOT (paper, %)", "ours - paper", "statuses"]
    return f"<p>{links}</p>" + _table(header, rows, left=3)


def _tasks(paths: StudyPaths, record: StudyRecord) -> str:
    rows = []
    for task in record.tasks:
        rows.append([_e(task), _link(paths.root, paths.dashboard(task), "dashboard"),
                     _link(paths.root, paths.screen(task) / "trials.csv", "screen"),
                     _link(paths.root, paths.confirm(task) / "confirmation.md", "confirmation"),
                     _link(paths.root, paths.confirm(task) / f"{task}.json", "confirmed config"),
                     _link(paths.root, paths.features(task), "feature cache"),
                     ", ".join(s for s in ("features", "screen", "confirm", "final") if record.done(task, s)) or "none"])
    return _table(["task", "sensitivity", "screen", "confirmation", "config", "cache", "stages done"], rows, left=7)


def agreement_markdown(table: pd.DataFrame) -> str:
    """The agreement table as GitHub Markdown (one row per task)."""
    from ssot.results.markdown import markdown_table

    rows = [[r["task"], str(r["n"]), _num(r["spearman"]), _num(r["kendall"]), f"{r['screen_best']} (#{r['screen_best_position']})",
             f"{r['pick']} (screen #{r['pick_screen_rank']})", _num(r["regret"], 1), _num(r["noise"], 1), r["verdict"]]
            for r in table.to_dict("records")]
    return markdown_table(["task", "configs", "Spearman", "Kendall", "screen's best (its place confirmed)", "confirmed pick",
                           "regret", "noise", "verdict"], rows, "lrrrllrrl")


def _agreement(paths: StudyPaths, table: pd.DataFrame) -> str:
    csv, md = paths.agreement
    if table.empty:
        return "<p>No task confirmed yet.</p>"
    rows, classes = [], []
    for r in table.to_dict("records"):
        flagged = r["verdict"] == DISAGREE
        verdict = f'<span class="flag">{_e(r["verdict"])}</span>' if flagged else _e(r["verdict"])
        rows.append([_e(r["task"]), str(r["n"]), _num(r["spearman"]), _num(r["kendall"]),
                     f"{_e(r['screen_best'])} (#{r['screen_best_position']})", f"{_e(r['pick'])} (screen #{r['pick_screen_rank']})",
                     _num(r["regret"], 1), _num(r["noise"], 1), verdict])
        classes.append("disagree" if flagged else "")
    flagged = [r["task"] for r in table.to_dict("records") if r["verdict"] == DISAGREE]
    note = (f'<p class="flag">The screen and confirmation disagree on {", ".join(map(_e, flagged))}: the frozen-feature screen '
            "ranked a config first that fine-tuning on images did not confirm; trust the confirmed pick there.</p>" if flagged else
            "<p>No task where the screen's order and confirmation disagree beyond the seeds' noise.</p>")
    header = ["task", "configs", "Spearman", "Kendall τ<sub>b</sub>", "screen's best (its place confirmed)", "confirmed pick",
              "regret", "noise", "verdict"]
    return (f"<p>{_link(paths.root, md, 'agreement.md')} · {_link(paths.root, csv, 'agreement.csv')}. Spearman and Kendall: "
            "the screen's order of its top configs against their confirmed means; regret: the confirmed pick's mean minus the "
            "screen's best's (accuracy points for an accuracy, else the metric's units, signed so that more is worse); noise: "
            "the standard error of the screen's best over its confirmation seeds.</p>"
            + note + _table(header, rows, classes=classes))


def _cost(record: StudyRecord) -> str:
    table = cost_table(record)
    rows = [[_e(r["stage"]), _seconds(r["predicted_s"]), _seconds(r["measured_s"]), _num(r["ratio"])] for r in table.to_dict("records")]
    plan = record.plan or {}
    machine = plan.get("machine") or record.machine.get("label") or "this machine"
    rates = plan.get("rates") or "no plan recorded"
    gave_up = "".join(f"<li>{_e(line)}</li>" for line in plan.get("gave_up", []))
    loads = [float(step["load"]) for step in record.steps.values() if step.get("load") is not None]
    load = (f" Load average at the steps' ends: {min(loads):.1f} to {max(loads):.1f} (the machine's other work slows every step "
            "alike)." if loads else "")
    return (f'<p class="meta">Wall time on {_e(machine)}; predicted from {_e(rates)}.{_e(load)}</p>'
            + _table(["stage", "predicted", "measured", "measured / predicted"], rows)
            + (f"<p>What the budget gave up:</p><ul>{gave_up}</ul>" if gave_up else ""))


def study_page(paths: StudyPaths, record: StudyRecord) -> str:
    """The HTML of the study's index page."""
    settings = record.settings
    summary = (f"{len(record.tasks)} task(s): {', '.join(record.tasks)}; screen of {settings.get('num_samples')} configs "
               f"(populations of {settings.get('population')}, {settings.get('search')}, selecting on {settings.get('metric')}); "
               f"top {settings.get('top')} confirmed on images over seeds {' '.join(map(str, settings.get('seeds', [])))}; "
               f"final runs over seeds {' '.join(map(str, settings.get('final_seeds', [])))}.")
    overrides = settings.get("base") or {}
    if overrides:
        summary += " Config overrides: " + ", ".join(f"{k}={v}" for k, v in overrides.items()) + "."
    atlas = (_link(paths.root, paths.atlas / "atlas.html", "the atlas across tasks") if len(record.tasks) >= 2
             else '<span class="missing">no atlas (one task)</span>')
    body = (f'<p class="meta">{_e(summary)}</p><p class="meta">Status: {_e(record.status)}; record '
            f'{_link(paths.root, paths.record, STUDY_FILE)}; started {_e(record.created)}, updated {_e(record.updated)}.</p>'
            f"<h2>Final results beside the paper</h2>{_final_table(paths)}"
            f"<h2>Dashboards and the atlas</h2><p>{atlas}</p>{_tasks(paths, record)}"
            f"<h2>How far each screen can be trusted</h2>{_agreement(paths, agreement_table(record))}"
            f"<h2>Cost: predicted and measured</h2>{_cost(record)}")
    return _PAGE.substitute(title=_e(f"Study {paths.root.name}"), body=body)

