"""`ssot/data/registry.py`: one spec per dataset, the task names, defaults and messages."""
from __future__ import annotations

import re

import pytest

from ssot.config import SSOTConfig
from ssot.data import dataset_of, registry, task_names, tasks_of_dataset
from ssot.data.benchmarks import build_benchmark_task
from ssot.data.registry import BENCHMARKS, DATASETS, TASKS, tasks_of
from ssot.errors import ConfigError
from tests.fixtures import REPO
from tests.fixtures.images import IMAGECLEF, OFFICE31, assert_one_line

PAPER_TASKS = [
    "A2W", "D2W", "W2D", "A2D", "D2A", "W2A",
    "I2P", "P2I", "I2C", "C2I", "C2P", "P2C",
    "Ar2Cl", "Ar2Pr", "Ar2Rw", "Cl2Ar", "Cl2Pr", "Cl2Rw",
    "Pr2Ar", "Pr2Cl", "Pr2Rw", "Rw2Ar", "Rw2Cl", "Rw2Pr",
    "S2R", "R2S",
]


def test_task_names_are_the_papers():
    benchmark_tasks = [t for d in BENCHMARKS for t in tasks_of(d)]
    assert sorted(benchmark_tasks) == sorted(PAPER_TASKS)
    assert [t for t in TASKS if TASKS[t].dataset in BENCHMARKS] == benchmark_tasks
    assert tasks_of("visda2017") == ["S2R", "R2S"]
    assert TASKS["S2R"].source == "train" and TASKS["S2R"].target == "validation"
    assert TASKS["Ar2Rw"].source == "Art" and TASKS["Ar2Rw"].target == "Real_World"


@pytest.mark.parametrize("name,k,n_target", [
    ("office31", 31, 10), ("imageclef", 12, 6), ("officehome", 65, 25), ("visda2017", 12, 6),
])
def test_class_lists_and_partial_targets(name, k, n_target):
    spec = DATASETS[name]
    assert len(spec.classes) == k and list(spec.classes) == sorted(spec.classes)
    assert len(spec.target_classes) == n_target
    assert set(spec.target_class_names) <= set(spec.classes)


def test_partial_class_names():
    assert DATASETS["officehome"].target_class_names[-1] == "Fork"
    assert DATASETS["officehome"].target_classes == list(range(25))
    assert DATASETS["visda2017"].target_class_names[-1] == "knife"
    assert IMAGECLEF.classes[:6] == ("aeroplane", "bike", "bird", "boat", "bottle", "bus")
    assert OFFICE31.target_classes == [0, 1, 5, 10, 11, 12, 15, 16, 17, 22]


def test_unknown_dataset_in_tasks_of():
    with pytest.raises(ConfigError, match="Valid datasets: digits, office31, imageclef, officehome, visda2017, embedded, embedded3, custom"):
        tasks_of("caltech")


def test_unknown_task(tmp_path):
    with pytest.raises(ConfigError, match=r"Unknown task 'X2Y'\. Valid tasks: digits, A2W, "
                                          r"D2W, .*Rw2Pr, S2R, R2S, P2H, H2P, H2H, P2P, P2S, S2P, H2S, S2H, S2S, custom\.") as exc:
        build_benchmark_task("X2Y", tmp_path)
    assert_one_line(exc)


def test_names_dataset_and_defaults():
    assert tasks_of_dataset("embedded") == ["digits", "P2H", "H2P"]
    assert tasks_of_dataset("visda2017") == ["S2R", "R2S"] and tasks_of_dataset("P2H") is None
    paper = {t.lower() for d in registry.BENCHMARKS for t in registry.tasks_of(d)}
    printed_tasks = registry.tasks_of("embedded")
    assert printed_tasks == ["P2H", "H2P", "H2H", "P2P"]
    assert not any(t.lower() in paper for t in printed_tasks)  # no clash, even case-insensitive
    assert set(printed_tasks) <= set(task_names())
    assert dataset_of("P2H") == "embedded" and dataset_of("digits") == "digits" and dataset_of("A2W") == "office31"
    cfg = SSOTConfig.for_task("P2H")
    assert cfg.backbone == "digits_cnn" and cfg.iters_per_epoch == 28
    assert SSOTConfig.for_task("H2P").iters_per_epoch == 0
    from ssot.errors import ConfigError

    with pytest.raises(ConfigError, match="does not fit task 'H2P'"):
        SSOTConfig.for_task("H2P", backbone="resnet50")


# ------------------------------------------------------------------------------------ one spec per dataset
def test_every_task_is_described_by_its_datasets_spec():
    for name, spec_task in registry.TASKS.items():
        spec = registry.DATASETS[spec_task.dataset]
        assert name in spec.tasks and registry.task(name.lower()) is spec_task
        if spec.domains:
            assert {spec_task.source, spec_task.target} <= set(spec.domains.values()), name
        if spec_task.reference_of is not None:
            assert registry.task(spec_task.reference_of).target == spec_task.target  # the ceiling of that task
    for spec in registry.DATASETS.values():
        assert set(spec.target_class_names) <= set(spec.classes) and list(spec.classes) == sorted(spec.classes)
        assert set(spec.published_counts) <= set(spec.domains.values()) | set(spec.released_folders)
        assert set(spec.task_defaults) <= set(spec.tasks) and set(spec.references) <= set(spec.tasks)
        assert callable(registry.build_function(spec.tasks[0]))  # its builder exists


def test_datasets_searched_defaults_and_the_embedded_tasks():
    assert registry.searched_tasks("embedded") == ["digits", "P2H", "H2P"]
    assert registry.searched_tasks("embedded3") == ["P2H", "H2P", "P2S", "S2P", "H2S", "S2H"]
    assert {t: registry.reference_task(t) for t in ("P2H", "S2P", "H2S", "S2H", "I2P", "H2H")} == {
        "P2H": "H2H", "S2P": "P2P", "H2S": "S2S", "S2H": "H2H", "I2P": None, "H2H": None}
    assert registry.searched_tasks("office31") == ["A2W", "D2W", "W2D", "A2D", "D2A", "W2A"]
    assert registry.searched_tasks("digits") is None and registry.searched_tasks("P2H") is None
    assert registry.dataset_of("h2h") == "embedded" and registry.dataset_of("custom") == "custom"
    assert registry.dataset_of("nothing") == ""
    assert registry.task_defaults("P2H") == {"iters_per_epoch": 28} and registry.task_defaults("digits") == {}
    assert registry.task_defaults("S2R")["backbone"] == "resnet50"
    assert registry.BENCHMARKS == ("office31", "imageclef", "officehome", "visda2017")


def test_the_unknown_task_message_names_every_task():
    with pytest.raises(ConfigError) as exc:
        registry.task("X2Y")
    assert str(exc.value) == f"Unknown task 'X2Y'. Valid tasks: {', '.join(registry.TASKS)}."
    assert all(name in str(exc.value) for name in ("P2H", "H2P", "H2H", "P2P", "custom", "digits", "R2S"))


def test_no_code_branches_on_a_tasks_or_a_datasets_name():
    """Task and dataset names are data of the registry: the code looks specs up instead."""
    pattern = re.compile(r"""(task|dataset|name)\s*(==|!=|in)\s*\(?["'](digits|embedded|custom|office31|imageclef|"""
                         r"""officehome|visda2017|[A-Z][a-z]?2[A-Z][a-z]?)["']""")
    found = [f"{path.relative_to(REPO)}:{n}: {line.strip()}" for package in ("ssot", "tune", "analysis")
             for path in sorted((REPO / package).rglob("*.py")) if path.name != "registry.py"
             for n, line in enumerate(path.read_text().splitlines(), 1) if pattern.search(line)]
    assert found == []
