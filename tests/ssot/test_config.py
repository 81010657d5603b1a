"""`ssot/config.py`: field metadata, validation, groups, task defaults, config files."""
from __future__ import annotations

import dataclasses
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ssot.config import PATH_FIELDS, PRETRAINING_FIELDS, RUNTIME_FIELDS, SEARCHED_FIELDS, TASK_FIELDS, SSOTConfig, fields_in
from ssot.errors import ConfigError
from tests.fixtures import REPO


def test_unknown_config_field_is_named(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"task": "digits", "lambda_OT": 1.0}))
    with pytest.raises(ConfigError, match="Unknown field\\(s\\) 'lambda_OT'.*Valid fields"):
        SSOTConfig.from_json(bad)


def test_a_binary_config_file_is_a_one_line_error(tmp_path, capsys):
    from ssot.errors import ConfigError

    binary = tmp_path / "weights.pt"
    binary.write_bytes(b"\x80\x02\xff\xfe\x00binary")
    with pytest.raises(ConfigError, match="is not valid JSON .*UnicodeDecodeError"):
        SSOTConfig.from_json(binary)
    proc = subprocess.run([sys.executable, "-m", "ssot.train", "--config", str(binary)], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr


@pytest.mark.parametrize("bad", [-0.1, 0.95, float("nan")])
def test_source_holdout_is_validated(bad):
    with pytest.raises(ConfigError, match="'source_holdout' parameter must be a float"):
        SSOTConfig(source_holdout=bad).validate()


def test_solver_config_is_validated_and_a_cli_flag():
    from ssot.cli import config_from_args
    from ssot.train import build_parser

    with pytest.raises(ConfigError, match="'ot_solver' parameter must be one of 'net', 'vector', 'sinkhorn'"):
        SSOTConfig(ot_solver="lbfgs").validate()
    with pytest.raises(ConfigError, match="ot_solver 'sinkhorn'"):
        SSOTConfig(ot_solver="sinkhorn", eps=0.0).validate()
    assert config_from_args(build_parser().parse_args(["--ot-solver", "vector"])).ot_solver == "vector"


# ------------------------------------------------------------------------------------ field metadata
def test_every_field_declares_its_constraint_help_and_groups():
    from ssot.config import GROUPS

    for f in dataclasses.fields(SSOTConfig):
        meta = f.metadata
        assert meta["help"] and meta["constraint"].describe(), f.name
        assert set(meta["groups"]) <= set(GROUPS), f.name
        assert f"    {f.name} : {meta['constraint'].describe()}" in SSOTConfig.__doc__  # the docstring is derived


def test_the_field_groups_are_the_ones_the_code_used_to_list():
    assert SEARCHED_FIELDS == ("lambda_ot", "lambda_ent", "eps", "potential_width")
    assert set(PRETRAINING_FIELDS) == {"task", "seed", "backbone", "pretrained", "pretrained_path", "bottleneck_dims",
                                       "pretrain_epochs", "lr_pretrain", "backbone_lr_mult", "weight_decay", "batch_size",
                                       "data_root", "features_path", "image_size", "resize_size", "source_eval_samples",
                                       "precision", "source_holdout", "image_cache", "transform"}
    assert set(TASK_FIELDS) == {"task", "data_root", "features_path", "image_size", "resize_size", "source_dir", "target_dir",
                                "image_cache", "transform"}
    assert set(PATH_FIELDS) == {"data_root", "features_path", "pretrained_path", "source_dir", "target_dir", "image_cache"}
    assert set(RUNTIME_FIELDS) == {"device", "num_workers", "data_root", "eval_batch_size", "compile", "channels_last"}
    with pytest.raises(ValueError, match="The 'group' parameter must be one of searched, pretraining"):
        fields_in("other")


def test_the_trainers_pretraining_key_is_the_config_group():
    from ssot.trainer import Trainer

    assert Trainer.PRETRAIN_FIELDS == PRETRAINING_FIELDS


@pytest.mark.parametrize("field, value, message", [
    ("eps", -1, "The 'eps' parameter must be a float in [0, inf). Got -1 instead."),
    ("lr", 0.0, "The 'lr' parameter must be a float in (0, inf). Got 0.0 instead."),
    ("source_holdout", 0.9, "The 'source_holdout' parameter must be a float in [0, 0.9). Got 0.9 instead."),
    ("batch_size", 1, "The 'batch_size' parameter must be an int in [2, inf). Got 1 instead."),
    ("epochs", 1.5, "The 'epochs' parameter must be an int in [0, inf). Got 1.5 instead."),
    ("use_mask", "yes", "The 'use_mask' parameter must be true or false. Got 'yes' instead."),
    ("device", "tpu", "The 'device' parameter must be one of 'auto', 'cpu', 'cuda'. Got 'tpu' instead."),
    ("bottleneck_dims", [8, 0], "The 'bottleneck_dims' parameter must be a list of positive ints. Got (8, 0) instead."),
    ("data_root", 3, "The 'data_root' parameter must be a path or null. Got 3 instead."),
    ("task", "", "The 'task' parameter must be a task name. Got '' instead."),
])
def test_validation_follows_the_constraints(field, value, message):
    with pytest.raises(ConfigError) as exc:
        SSOTConfig().replace(**{field: value})
    assert str(exc.value) == message


def test_validation_converts_numbers_and_paths_to_the_fields_types():
    config = SSOTConfig.from_dict({"epochs": 3.0, "lambda_ot": 1, "bottleneck_dims": [8], "data_root": Path("/data")})
    assert (config.epochs, config.lambda_ot, config.bottleneck_dims, config.data_root) == (3, 1.0, (8,), "/data")
    assert type(config.epochs) is int and type(config.lambda_ot) is float


def test_cross_field_rules_stay_explicit():
    with pytest.raises(ConfigError, match="does not fit task 'P2H' \\(8x8 images\\)"):
        SSOTConfig.for_task("P2H", backbone="resnet50")
    with pytest.raises(ConfigError, match="with ot_solver 'sinkhorn'"):
        SSOTConfig(ot_solver="sinkhorn", eps=0.0).validate()
    with pytest.raises(ConfigError, match="Use backbone 'features'"):
        SSOTConfig(features_path="x.pt").validate()


def test_task_defaults_come_from_the_dataset_registry():
    assert SSOTConfig.for_task("A2W").backbone == "resnet50" and SSOTConfig.for_task("A2W").bottleneck_dims == (1024, 512)
    assert SSOTConfig.for_task("custom").backbone == "resnet50"
    assert SSOTConfig.for_task("H2P").backbone == "digits_cnn" and SSOTConfig.for_task("P2P").iters_per_epoch == 28
    assert SSOTConfig.for_task("digits") == SSOTConfig()
    with pytest.raises(ConfigError, match="Unknown task 'X2Y'. Valid tasks: digits, A2W, .*, P2H, H2P, H2H, P2P, .*, S2S, custom\\."):
        SSOTConfig.for_task("X2Y")


def test_the_image_fields_are_checked_where_they_enter():
    assert SSOTConfig.for_task("A2W", transform="paper", image_cache="a2w.ssotimg", compile=True).transform == "paper"
    with pytest.raises(ConfigError, match="The 'transform' parameter must be one of 'default', 'paper'. Got 'center' instead."):
        SSOTConfig.for_task("A2W", transform="center")
    for task, extra in (("digits", {}), ("P2H", {}), ("A2W", {"backbone": "features", "features_path": "x.pt"})):
        with pytest.raises(ConfigError, match="'image_cache' parameter is set to a cache, but task") as info:
            SSOTConfig.for_task(task, image_cache="a2w.ssotimg", **extra)
        assert "\n" not in str(info.value) and "Use --image-cache auto (or off)" in str(info.value)
        assert SSOTConfig.for_task(task, **extra).image_cache == "auto"  # auto: nothing to do for a task without images
        assert SSOTConfig.for_task(task, image_cache="off", **extra).image_cache == "off"


def test_image_cache_is_auto_off_or_a_path_and_null_is_off():
    """Issue 37: image tasks train on the decoded-image cache by default; configs written before
    (``image_cache: null``) read the image files, and still do."""
    a2w = SSOTConfig.for_task("A2W")
    assert (a2w.image_cache, a2w.image_cache_path) == ("auto", None)
    assert SSOTConfig.from_dict({**a2w.to_dict(), "image_cache": None}).image_cache == "off"
    assert SSOTConfig.for_task("A2W", image_cache="/c/a2w.ssotimg").image_cache_path == "/c/a2w.ssotimg"
    for bad in ("", 3, ["x"]):
        with pytest.raises(ConfigError, match=re.escape(f"The 'image_cache' parameter must be 'auto', 'off' or the path of a "
                                                        f"decoded-image cache. Got {bad!r} instead.")):
            SSOTConfig.for_task("A2W", image_cache=bad)
