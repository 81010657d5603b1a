"""What every example shares: its flags, running the project's commands, checking a paper task's data.

An example is a thin script: it runs the project's commands (printed first, as a person would
type them) or calls its library, then prints the table or writes the figure the manual reports.
Every example takes

``--out DIR``
    where the commands write (default ``examples-out/<example>``; results are never overwritten:
    rerun with another ``--out``, or the same one where the commands continue, e.g. run records);
``--smoke-test``
    a quick mode (tiny epochs, two trials, one seed) that runs the same commands in seconds to
    minutes, to check the example, not to reproduce its numbers;
``--dry-run``
    print the commands without running them (``tests/test_examples.py`` parses each with its
    command's own parser).

Exit statuses: 0 done; 2 bad input, or a paper task whose data is missing (the lines before say
what is missing and how to bring it in); otherwise the status of the command that failed.
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # the examples run as files: import the project from its checkout
    sys.path.insert(0, str(ROOT))

from ssot import cli  # noqa: E402  (after the project's folder is on the path)

#: Flags of a quick training run (``--smoke-test``) and of a quick search.
QUICK_TRAIN = ["--epochs", "1", "--pretrain-epochs", "1", "--iters-per-epoch", "3"]
QUICK_SEARCH = ["--num-samples", "2", "--epochs", "2", "--set", "pretrain_epochs=1", "--set", "iters_per_epoch=3",
                "--grace-period", "1"]
#: The embedded tasks (no data needed).
EMBEDDED = ("digits", "P2H", "H2P")
#: Every task that needs no data: digits and the six tasks of embedded3.
EMBEDDED_TASKS = ("digits", "P2H", "H2P", "P2S", "S2P", "H2S", "S2H")


class Failed(Exception):
    """A command of the example failed (its exit status is the example's)."""

    def __init__(self, status: int):
        super().__init__(status)
        self.status = status


def parser(doc: str, *, tasks: tuple[str, ...] | None = EMBEDDED, default_task: str = "digits") -> argparse.ArgumentParser:
    """The example's flags: ``--out``, ``--smoke-test``, ``--dry-run`` (and ``--task``, ``--data-root`` when it takes a task)."""
    p = cli.Parser(description=doc.split("\n\n")[0], formatter_class=_Formatter, epilog="\n\n".join(doc.split("\n\n")[1:]))
    if tasks is not None:
        p.add_argument("--task", default=default_task, help=f"the task (embedded: {', '.join(tasks)}; a paper task such as "
                                                              "P2I needs --data-root)")
        cli.add_config_flag(p, "data_root")
    p.add_argument("--out", type=Path, metavar="FOLDER", help="output folder (default: examples-out/<example>)")
    p.add_argument("--smoke-test", action="store_true", help="quick mode: tiny runs that check the example, not its numbers")
    p.add_argument("--dry-run", action="store_true", help="print the commands, run nothing")
    return p


class _Formatter(cli.HelpFormatter, argparse.RawDescriptionHelpFormatter):
    """The commands' help style, the example's docstring kept as it is written."""


class Example:
    """One run of an example: its arguments, its output folder, the commands it ran."""

    def __init__(self, args: argparse.Namespace, name: str):
        self.args = args
        self.out = args.out or Path("examples-out") / name
        self.dry = args.dry_run
        self.smoke = args.smoke_test
        self.commands: list[list[str]] = []
        self.prefix: list[str] = []  # a command each run goes through (e.g. ["flock", LOCK])
        if getattr(args, "data_root", None):  # the commands without --data-root read it from the environment
            from ssot.data.layouts import DATA_ROOT_ENV

            os.environ[DATA_ROOT_ENV] = str(Path(args.data_root).resolve())
            print(f"# {DATA_ROOT_ENV}={os.environ[DATA_ROOT_ENV]}", flush=True)

    @property
    def task(self) -> str:
        return self.args.task

    def data_flags(self) -> list[str]:
        return ["--data-root", self.args.data_root] if getattr(self.args, "data_root", None) else []

    def train_flags(self) -> list[str]:
        """The quick-mode flags of a training run (none in full mode)."""
        return QUICK_TRAIN if self.smoke else []

    def search_flags(self, num_samples: int = 20) -> list[str]:
        """The size of a search: ``num_samples`` trials, or the quick mode's two."""
        return [*QUICK_SEARCH, "--num-cpus", "2"] if self.smoke else ["--num-samples", str(num_samples)]

    def seeds(self, *seeds: int) -> list[str]:
        return ["--seeds", *(map(str, seeds[:1] if self.smoke else seeds))]

    def run(self, command: str, *args: Any, ok: tuple[int, ...] = (0,)) -> int:
        """Run one of the project's commands, ``python -m ssot.train ...`` or ``python tune/search.py ...``
        (``command`` is ``ssot.train`` or ``tune/search.py``): print it, run it unless ``--dry-run``."""
        words = [str(a) for a in args]
        shown = ["python", *(["-m", command] if not command.endswith(".py") else [command]), *words]
        self.commands.append(shown)
        print("$ " + shlex.join(shown), flush=True)
        if self.dry:
            return 0
        target = ["-m", command] if not command.endswith(".py") else [str(ROOT / command)]
        status = subprocess.run([*self.prefix, sys.executable, *target, *words]).returncode
        if status not in ok:
            raise Failed(status)
        return status

    def check_data(self) -> None:
        """A paper task's data must be under the data root: else say what is missing and exit 2."""
        from ssot.data.registry import dataset_of

        if self.task in EMBEDDED_TASKS or self.dry:
            return
        dataset = dataset_of(self.task)
        try:
            self.run("ssot.data", "check", *self.data_flags(), "--dataset", dataset, "--quiet")
        except Failed as failed:
            print(f"example: task {self.task} cannot run: the data of {dataset} is missing or incomplete (the lines above "
                  f"say what). Bring it in with `python -m ssot.data fetch {dataset} --data-root DIR` "
                  "(see the manual, Data), then pass --data-root DIR.", file=sys.stderr)
            raise Failed(2) from failed

    def show(self, path: Path) -> None:
        """Print a table a command wrote (nothing in a dry run)."""
        if not self.dry:
            print(f"\n{path}:\n\n{Path(path).read_text().rstrip()}\n")


def read_json(path: Path) -> dict[str, Any]:
    return json.loads(Path(path).read_text())


def percent(stats: dict[str, float] | None) -> str:
    """``mean +- std`` in percent of a ``summary`` entry of ``python -m ssot.train --seeds ... --out``."""
    return "n/a" if not stats else f"{100 * stats['mean']:.1f} ± {100 * stats['std']:.1f} %"


def main(body: Any, args: argparse.Namespace, name: str) -> int:
    """Run ``body(example)``; a failed command's status, or 2 for a paper task without its data."""
    from ssot import cli

    example = Example(args, name)
    try:
        return cli.run(lambda: body(example) or 0)
    except Failed as failed:
        return failed.status
