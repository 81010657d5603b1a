"""The command-line harness shared by every command: exit statuses, errors and Ctrl-C, flags, outputs.

Commands
--------
Every command is a ``main(argv) -> int`` with an entry point in ``pyproject.toml``
(``[project.scripts]``), and can also be run as a module or a file:

==================  =====================================  ==========================================
entry point         module / file                          what it does
==================  =====================================  ==========================================
``ssot-train``      ``python -m ssot.train``               train once, or several seeds of one config
``ssot-features``   ``python -m ssot.features``            a feature cache of a frozen backbone
``ssot-feature-maps`` ``python -m ssot.feature_maps``      t-SNE of a saved run's two models
``ssot-data``       ``python -m ssot.data``                check the data root, fetch a dataset
``ssot-search``     ``python tune/search.py``              search the hyperparameters with Ray Tune
``ssot-export``     ``python tune/export.py``              the best config of each finished search
``ssot-confirm``    ``python tune/confirm.py``             re-run the top trials over seeds
``ssot-final``      ``python tune/final.py``               multi-seed final runs, table beside the paper
``ssot-ablation``   ``python tune/ablation.py``            the paper's ablations over seeds
``ssot-solvers``    ``python tune/solvers.py``             the OT solvers compared
``ssot-transfer``   ``python tune/transfer.py``            each task's best config replayed on every task
``ssot-study``      ``python tune/study.py``               a whole study: every task screened, confirmed, finalised
``ssot-dashboard``  ``python analysis/sensitivity.py``     the sensitivity dashboard
``ssot-selection``  ``python analysis/selection.py``       regret of label-free selection
``ssot-proxy``      ``python analysis/proxy.py``           how screens rank configs against end-to-end runs
``ssot-paper-figures`` ``python analysis/paper_figures.py`` the paper's figures from run records
``ssot-atlas``      ``python analysis/atlas.py``           the atlas across tasks: importance, tunability, transfer
``ssot-study-page`` ``python analysis/study.py``           a study's index page: its outputs, agreement, cost
==================  =====================================  ==========================================

Exit statuses (the same for every command)
------------------------------------------
=====  ======================================================================================
 0     done.
 1     finished and wrote its results, but some runs failed: a run diverged (train, final,
       confirm, ablation, solvers), a trial errored (search: fix the cause, ``--resume``), a
       checked task cannot run (``ssot-data check``). A diverged *trial* is a result of a
       search, not a failure.
 2     bad input, the user's to fix: an argument (an ``--name`` that is not one folder name,
       ``--num-cpus 0``, more GPUs than the cluster has), a missing or unreadable file or folder,
       an unknown task or a missing dataset (also for runs on Ray), an output that exists
       already (the dashboard without ``--overwrite`` too), cannot be written or is one of the
       command's inputs (also with ``--overwrite``), a storage location that cannot be used; a
       feature or decoded-image cache whose checksum or contents do not match (damaged: rebuild
       it), a decoded-image cache to prepare that does not fit in the free disk or whose folder
       cannot be written; a search whose experiment another driver runs (its lock), a ``--resume`` whose flags
       differ from the experiment's, whose ``experiment.json`` is missing or not JSON, or that an
       earlier version started (its record was Ray's saved state); a torch file (checkpoint, shared pretrained
       model, ``--save-model`` file, cache) that does not load as tensors (never unpickled). All
       refused before any work starts, in one line naming the problem and the fix
       (docs/reliability.md).
 3     no usable result: the command ran but nothing counts (search: every trial errored or
       diverged).
 4     an external service failed while the command worked: a download or its verification
       (``ssot-data fetch``), the object store, or the storage of a search failing mid-search
       (read-only, full: results written meanwhile are kept, ``--resume`` once it is fixed).
 130   interrupted (Ctrl-C, also while a command's modules load; or a search that did not end:
       ``--resume`` continues). Commands that keep their runs continue when run again.
=====  ======================================================================================

Every ``main`` is :func:`command`: it parses the arguments and runs the work through :func:`run`, which prints a user error
(:class:`ssot.errors.SSOTError`) as one line ``error: ...`` without a traceback and returns its
status (:func:`exit_status`), and turns Ctrl-C into ``interrupted`` and 130.

Scripts
-------
``python tune/search.py`` runs a file of the installed project (``pip install -e .``): Python puts
the file's folder first on ``sys.path``, and no folder of the project is named after a package it
imports (the Plotly figures are ``analysis/charts``, not ``analysis/plotly``), so the file finds
the project and its dependencies as an entry point does, and no module edits ``sys.path``
(``tests/ssot/test_cli.py`` runs every command both ways).

Flags
-----
Every command's parser is a :class:`Parser`: a flag is never abbreviated (``--epoch`` is refused,
naming ``--epochs``), a mistyped choice or sub-command gets the closest valid one, each default is
shown once as ``(default: X)`` (:class:`HelpFormatter`), and the usage names the command as it was
run (:func:`invoked_as`). The same thing has the same flag and default everywhere: a config field's
flag comes from its metadata (:func:`add_config_flag`, :func:`add_config_flags` for all of them;
an invalid value is refused naming the flag typed, :func:`flag_errors`), and the shared flags
come from one function each: :func:`add_seeds` (``0 1 2``), :func:`add_quiet` (``--quiet``,
the search's ``--verbose``), :func:`add_config_file` (``--config``). The flags of one layer live
in it: the Ray commands' ``--num-cpus``, ``--address``, ``--cpus-per-trial`` and
``--gpus-per-trial`` in :mod:`tune.flags`, the figure commands' ``--format`` and ``--no-images``
in :mod:`analysis.dashboard.static`. Outputs are checked before any work by
:func:`ssot.results.outputs.check_output`; a command that reads a task's data finds it first
without loading torch or Ray (:func:`ssot.data.check_task`).
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import typing
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from ssot.errors import ConfigError, ExternalError, ResultsError, SSOTError, closest, one_line

__all__ = ["EXIT_OK", "EXIT_FAILED", "EXIT_USAGE", "EXIT_NO_RESULT", "EXIT_EXTERNAL", "EXIT_INTERRUPTED", "exit_status",
           "run", "command", "runs_status", "parse_set", "Parser", "HelpFormatter", "shown", "invoked_as", "config_flag",
           "config_default", "add_config_flag", "add_config_flags", "flag_errors", "config_from_args", "add_quiet", "add_seeds",
           "check_seeds", "add_config_file"]

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_NO_RESULT, EXIT_EXTERNAL, EXIT_INTERRUPTED = 0, 1, 2, 3, 4, 130


def exit_status(exc: BaseException) -> int:
    """The status of a command that stopped on ``exc``: 4 for an external service
    (:class:`ssot.errors.ExternalError`), 130 for Ctrl-C, 2 for any other user error."""
    if isinstance(exc, KeyboardInterrupt):
        return EXIT_INTERRUPTED
    return EXIT_EXTERNAL if isinstance(exc, ExternalError) else EXIT_USAGE


def run(body: Callable[[], int], *, interrupted: str | Callable[[], str] = "") -> int:
    """Run a command's work: its status, or the status of the error that stopped it.

    A :class:`ssot.errors.SSOTError` is printed as one line ``error: <message>`` on stderr (no
    traceback); Ctrl-C prints ``interrupted`` (then ``; <interrupted>`` when given, e.g. what is
    kept and how to continue; a function giving it when the work learnt it).
    """
    try:
        return body()
    except SSOTError as exc:
        print(f"error: {one_line(exc)}", file=sys.stderr)
        return exit_status(exc)
    except KeyboardInterrupt:
        said = interrupted() if callable(interrupted) else interrupted
        print("interrupted" + (f"; {said}" if said else ""), file=sys.stderr)
        return EXIT_INTERRUPTED


def runs_status(records: Iterable[Any]) -> int:
    """0 when every run record completed, else 1 (some runs failed: :data:`EXIT_FAILED`)."""
    return EXIT_OK if all(getattr(r, "completed", None) or (isinstance(r, dict) and r.get("status") == "completed")
                          for r in records) else EXIT_FAILED


def command(parser: argparse.ArgumentParser | Callable[[], argparse.ArgumentParser], work: Callable[[argparse.Namespace], int],
            argv: Sequence[str] | None = None, *, interrupted: str = "", kept: Callable[[argparse.Namespace], Any] | None = None) -> int:
    """A command's ``main``: parse ``argv`` with ``parser``, then :func:`run` ``work(args)``.

    ``parser`` may be a function that builds it: a command whose imports are slow (the dashboard's
    figures) imports them there and in ``work``, so that Ctrl-C during those imports is
    ``interrupted`` too, not a traceback. ``interrupted`` is what Ctrl-C adds to ``interrupted``;
    a command that keeps its finished runs where ``kept(args)`` says (and continues there when run
    again) says so instead.
    """
    said = [interrupted]

    def body() -> int:
        built = parser if isinstance(parser, argparse.ArgumentParser) else parser()
        if argv is None:  # the command line of this process: the usage names the command as it was run
            _rename(built, invoked_as(built.prog))
        args = built.parse_args(argv)
        if kept is not None:
            said[0] = f"finished runs are kept in {kept(args)}, rerun the same command to continue"
        return work(args)

    return run(body, interrupted=lambda: said[0])


# ------------------------------------------------------------------------------------ parsers
class HelpFormatter(argparse.HelpFormatter):
    """The one help style of every command: each option's default shown once, as
    ``(default: X)`` at the end of its help, added here from the option's default; a help that
    states its default itself (one that is not a value, ``(default: all)``) or an option without one
    to show (``None``, ``False``, an empty list) gets none added."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        default = action.default
        if (not action.option_strings or "(default" in text or default is None or default is False
                or default is argparse.SUPPRESS or (isinstance(default, (list, tuple, dict)) and not default)):
            return text
        return f"{text} (default: {shown(default).replace('%', '%%')})"  # the help is %-formatted: the default is text


def shown(value: Any) -> str:
    """A default as help and errors show it: ``0 1 2`` for a list, ``0.0001`` for a float."""
    if isinstance(value, (list, tuple)):
        return " ".join(shown(v) for v in value)
    return f"{value:g}" if isinstance(value, float) else str(value)


class Parser(argparse.ArgumentParser):
    """Every command's parser: no abbreviated flags (``--epoch`` is refused with ``did you mean
    --epochs?``), the closest valid value for a mistyped choice or sub-command, the help style of
    :class:`HelpFormatter`. Its usage names the command as it was run (:func:`command` sets it)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)

    def parse_args(self, args: Sequence[str] | None = None, namespace: Any = None) -> Any:  # type: ignore[override]
        parsed, extra = self.parse_known_args(args, namespace)
        if extra:
            self.error(f"unrecognized arguments: {' '.join(extra)}{self._suggestion(extra)}")
        return parsed

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        if action.choices is not None and value not in action.choices:
            close = closest(value, action.choices)
            raise argparse.ArgumentError(action, f"invalid choice: {value!r} (choose from "
                                         f"{', '.join(map(repr, action.choices))})"
                                         + (f"; did you mean {close!r}?" if close is not None else ""))

    def _suggestion(self, extra: Sequence[str]) -> str:
        """``(did you mean --epochs? ...)`` for the first unknown flag among ``extra``."""
        known = _option_strings(self)
        for token in extra:
            if not token.startswith("--"):
                continue
            name = token.split("=", 1)[0]
            longer = [flag for flag in known if flag.startswith(name)]
            if longer:
                return f" (did you mean {' or '.join(longer[:3])}? flags are never abbreviated)"
            close = closest(name, known)
            if close is not None:
                return f" (did you mean {close}?)"
        return ""


def _option_strings(parser: argparse.ArgumentParser) -> list[str]:
    """Every long flag of ``parser`` and of its sub-commands."""
    flags = [flag for flag in parser._option_string_actions if flag.startswith("--")]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                flags += [flag for flag in _option_strings(sub) if flag not in flags]
    return flags


def invoked_as(default: str) -> str:
    """How the running program was invoked, for its usage line: ``python -m ssot.train`` (a module),
    ``python tune/search.py`` (a file, as typed), ``ssot-search`` (an entry point); ``default``
    when none of these (``python -c``)."""
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    if spec is not None and spec.name:
        return "python -m " + spec.name.removesuffix(".__main__")
    argv0 = sys.argv[0] if sys.argv else ""
    if argv0.endswith(".py"):
        return f"python {argv0}"
    return os.path.basename(argv0) if argv0 and not argv0.startswith("-") else default


def _rename(parser: argparse.ArgumentParser, prog: str) -> None:
    """Set ``parser``'s program name, its sub-commands' too (argparse copied it into theirs)."""
    old, parser.prog = parser.prog, prog
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            action._prog_prefix = action._prog_prefix.replace(old, prog, 1)
            for sub in action.choices.values():
                if sub.prog.startswith(old):
                    _rename(sub, prog + sub.prog[len(old):])


# ------------------------------------------------------------------------------------ flags
def config_flag(field: str) -> str:
    """The command-line flag of config field ``field``: its declared ``flag`` (``--features`` for
    ``features_path``), else ``--`` and its name with dashes (``--lambda-ot``)."""
    from ssot.config import SSOTConfig

    meta = typing.cast(Any, SSOTConfig).__dataclass_fields__[field].metadata
    return meta["flag"] or "--" + field.replace("_", "-")


def config_default(field: str) -> str:
    """A config field's default as its flag's help shows it: the config's, then the values
    datasets and tasks give it (``15; 20 for image tasks``); ``""`` for none (an optional path)."""
    from ssot.config import SSOTConfig
    from ssot.data.registry import default_variants

    value = typing.cast(Any, SSOTConfig).__dataclass_fields__[field].default
    variants = "".join(f"; {shown(v)} for {who}" for v, who in default_variants(field))
    return "" if value is None else shown(value) + variants


def add_config_flag(parser: argparse.ArgumentParser | Any, field: str, note: str = "", *, default: Any = None,
                    default_text: str | None = None, **kwargs: Any) -> argparse.Action:
    """The flag of config field ``field`` (:func:`config_flag`), typed and explained by the field's
    metadata; ``note`` adds what this command does with it. Its value is ``None`` unless given
    (the config's default applies: the help shows it), or the command's ``default`` (shown as
    ``default_text``, or the value; ``""``: no default shown); ``kwargs`` go to ``add_argument``
    (``required``, ``nargs``). A required flag shows no default."""
    from ssot.config import SSOTConfig

    meta = typing.cast(Any, SSOTConfig).__dataclass_fields__[field].metadata
    shown_default = default_text if default_text is not None else shown(default) if default is not None \
        else config_default(field)
    text = meta["help"] + (f"; {note}" if note else "") + ("" if kwargs.get("required") or not shown_default
                                                            else f" (default: {shown_default})")
    return parser.add_argument(config_flag(field), dest=field, default=default, help=text.replace("%", "%%"),
                               **{**meta["constraint"].flag(), **kwargs})


def add_config_flags(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """One flag per field of :class:`ssot.config.SSOTConfig` (``--lambda-ot``, ``--no-use-mask``,
    ...), in a group of their own (:func:`add_config_flag`); read back by :func:`config_from_args`."""
    from ssot.config import CONFIG_FIELDS

    group = parser.add_argument_group("config fields (ssot.config.SSOTConfig; a task may set its own default)")
    for field in CONFIG_FIELDS:
        add_config_flag(group, field)
    return parser


@contextlib.contextmanager
def flag_errors(fields: Iterable[str]) -> Iterator[None]:
    """Name the flags a user typed in a config error: inside, a :class:`ssot.errors.ConfigError`
    about a field of ``fields`` (``The 'eps' parameter must be ...``) is raised again naming its
    flag (``--eps must be ...``)."""
    try:
        yield
    except ConfigError as exc:
        text = str(exc)
        for field in fields:
            text = text.replace(f"The '{field}' parameter", config_flag(field))
        if text == str(exc):
            raise
        raise ConfigError(text) from None


def config_from_args(args: argparse.Namespace) -> Any:
    """The :class:`ssot.config.SSOTConfig` of parsed flags: the task's defaults <- ``--config``
    file (when the parser has it) <- explicit flags; ``--features PATH`` (a feature cache) implies
    ``--backbone features``. An invalid value given as a flag is refused naming the flag
    (:func:`flag_errors`)."""
    from ssot.config import CONFIG_FIELDS, SSOTConfig

    overrides = {name: getattr(args, name) for name in CONFIG_FIELDS if getattr(args, name, None) is not None}
    with flag_errors(overrides):
        if overrides.get("features_path") and "backbone" not in overrides:
            overrides["backbone"] = "features"  # --features PATH: train on the cache
        config_file = getattr(args, "config", None)
        if config_file is not None:
            base = SSOTConfig.from_json(config_file).to_dict()
            return SSOTConfig.from_dict({**base, **overrides}, source=f"config file {config_file} with flags")
        task = overrides.pop("task", "digits")
        return SSOTConfig.for_task(task, **overrides)


def parse_set(items: Sequence[str]) -> dict[str, object]:
    """The config fields of ``--set FIELD=VALUE`` flags (each value JSON-parsed, else kept as text);
    one that is not ``FIELD=VALUE`` is refused in one line. The fields themselves are checked where
    the config is built (:meth:`ssot.config.SSOTConfig.from_dict`)."""
    out: dict[str, object] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        if not sep:
            raise ConfigError(f"--set expects FIELD=VALUE. Got {item!r} instead.")
        try:
            out[key.strip()] = json.loads(raw)
        except json.JSONDecodeError:
            out[key.strip()] = raw
    return out


def add_quiet(parser: argparse.ArgumentParser | Any, verbose: str = "") -> None:
    """``--quiet``: print only problems and the summary (no progress bars or lines); with
    ``verbose`` (what it adds), also ``--verbose``, the other way (they exclude each other)."""
    group = parser.add_mutually_exclusive_group() if verbose else parser
    group.add_argument("--quiet", action="store_true", help="print only problems and the summary (no progress bars or lines)")
    if verbose:
        group.add_argument("--verbose", action="store_true", help=f"print more: {verbose}")


def add_no_images(parser: argparse.ArgumentParser | Any) -> None:
    """``--no-images``: the HTML pages only, no static figures (the dashboard, the atlas, a study's report)."""
    parser.add_argument("--no-images", action="store_true", help="write the HTML pages only, no static figures (PDF/PNG)")


def add_seeds(parser: argparse.ArgumentParser, default: Sequence[int] | None = (0, 1, 2), help: str = "",
              default_text: str = "") -> None:
    """``--seeds S [S ...]``: one run per seed (checked by :func:`check_seeds`); ``0 1 2`` unless a
    command says why not (``default_text``)."""
    parser.add_argument("--seeds", type=int, nargs="+", metavar="S", default=None if default is None else list(default),
                        help=(help or "seeds, one run each") + (f" (default: {default_text})" if default_text else ""))


def check_seeds(seeds: Sequence[int] | None) -> None:
    """Refuse repeated seeds (each seed is one run record)."""
    if seeds is not None and len(set(seeds)) != len(seeds):
        raise ResultsError(f"The '--seeds' argument has repeated seeds. Got {' '.join(map(str, seeds))} instead.")


def add_config_file(parser: argparse.ArgumentParser | Any, what: str) -> None:
    """``--config PATH``: a config file (JSON: an exported best config, a run record), ``what`` it is for."""
    parser.add_argument("--config", type=Path, metavar="PATH", help=f"a config file (JSON, e.g. tune/export.py's); {what}")


def add_config_source(parser: argparse.ArgumentParser, task_use: str, config_use: str) -> None:
    """The config a command runs, given one way: ``--task`` (its default config, ``task_use``) or
    ``--config PATH`` (a config file, ``config_use``); then ``--seeds``."""
    source = parser.add_mutually_exclusive_group(required=True)
    add_config_flag(source, "task", task_use, default_text="")
    add_config_file(source, config_use)
    add_seeds(parser)
