"""`tune/flags.py`: the Ray commands' flags, with the same defaults and checks everywhere."""
from __future__ import annotations

import pytest

from ssot import cli
from ssot.errors import ResultsError
from tune import flags


def _parser() -> cli.Parser:
    parser = cli.Parser()
    flags.add_ray_flags(parser)
    flags.add_trial_resources(parser)
    return parser


def test_the_ray_flags_and_their_defaults():
    args = _parser().parse_args([])
    assert (args.num_cpus, args.address, args.cpus_per_trial, args.gpus_per_trial) == (None, None, 1.0, None)
    args = _parser().parse_args(["--num-cpus", "3", "--address", "auto", "--cpus-per-trial", "0.5", "--gpus-per-trial", "0.25"])
    assert (args.num_cpus, args.address, args.cpus_per_trial, args.gpus_per_trial) == (3, "auto", 0.5, 0.25)
    flags.check_resources_args(args)  # valid: no error


@pytest.mark.parametrize(("argv", "message"), [
    (["--num-cpus", "0"], "The '--num-cpus' argument must be an int in \\[1, inf\\). Got 0 instead."),
    (["--cpus-per-trial", "0"], "The '--cpus-per-trial' argument must be a number > 0. Got 0 instead."),
    (["--cpus-per-trial", "nan"], "The '--cpus-per-trial' argument must be a number > 0. Got nan instead."),
    (["--gpus-per-trial", "-1"], "The '--gpus-per-trial' argument must be a number >= 0 .* Got -1 instead."),
    (["--gpus-per-trial", "inf"], "The '--gpus-per-trial' argument must be a number >= 0 .* Got inf instead."),
])
def test_bad_resources_are_refused_naming_the_flag(argv, message):
    with pytest.raises(ResultsError, match=message):
        flags.check_resources_args(_parser().parse_args(argv))


def test_a_command_decides_its_cpus_when_it_says_how():
    parser = cli.Parser()
    flags.add_trial_resources(parser, "run", cpus_default=None, cpus_auto="one per run")
    assert parser.parse_args([]).cpus_per_trial is None
    assert "CPUs per run (default: one per run)" in " ".join(parser.format_help().split())
    assert parser.parse_args(["--cpus-per-trial", "2"]).cpus_per_trial == 2.0
