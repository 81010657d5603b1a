"""Tests of the benchmark loaders, on tiny image folders written into ``tmp_path``."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image
from torch.utils.data import DataLoader

from ssot.data.benchmarks import (
    ImageSampleDataset,
    build_benchmark_task,
    eval_transform,
    find_domain_samples,
    load_image_list,
    resolve_data_root,
)
from ssot.data.registry import BENCHMARKS, DATASETS, TASKS, tasks_of
from ssot.errors import ConfigError, DataError

PAPER_TASKS = [
    "A2W", "D2W", "W2D", "A2D", "D2A", "W2A",
    "I2P", "P2I", "I2C", "C2I", "C2P", "P2C",
    "Ar2Cl", "Ar2Pr", "Ar2Rw", "Cl2Ar", "Cl2Pr", "Cl2Rw",
    "Pr2Ar", "Pr2Cl", "Pr2Rw", "Rw2Ar", "Rw2Cl", "Rw2Pr",
    "S2R", "R2S",
]
OFFICE31 = DATASETS["office31"]
IMAGECLEF = DATASETS["imageclef"]


def write_image(path: Path, seed: int = 0) -> Path:
    """Write an 8x8 random RGB image (format from the suffix)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    pixels = np.random.default_rng(seed).integers(0, 256, (8, 8, 3), dtype=np.uint8)
    Image.fromarray(pixels).save(path)
    return path


def make_office31(root: Path, domains: tuple[str, ...] = ("amazon", "webcam"),
                  per_class: int = 1) -> Path:
    for domain in domains:
        for k, name in enumerate(OFFICE31.classes):
            for i in range(per_class):
                suffix = ".png" if i % 2 else ".jpg"
                write_image(root / "office31" / domain / "images" / name / f"{i}{suffix}", k)
    return root


def make_imageclef(root: Path, domains: tuple[str, ...] = ("i", "p")) -> Path:
    for domain in domains:
        lines = []
        for k in range(IMAGECLEF.num_classes):
            write_image(root / "imageclef" / domain / f"{k}.jpg", k)
            lines.append(f"{domain}/{k}.jpg {k}")
        write_list(root / "imageclef" / "list" / f"{domain}List.txt", lines)
    return root


def write_list(path: Path, lines: list[str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return path


def assert_one_line(exc: pytest.ExceptionInfo) -> None:
    assert "\n" not in str(exc.value)


# --- specs -----------------------------------------------------------------------------------

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
    with pytest.raises(ConfigError, match="Valid datasets: digits, office31, imageclef, officehome, visda2017, embedded, custom"):
        tasks_of("caltech")


# --- end to end ------------------------------------------------------------------------------

def test_office31_folder_layout_end_to_end(tmp_path):
    make_office31(tmp_path, per_class=2)
    data = build_benchmark_task("A2W", tmp_path, image_size=32, resize_size=36)
    assert data.name == "A2W" and data.input_shape == (3, 32, 32)
    assert data.class_names == list(OFFICE31.classes)
    assert len(data.source) == 62 and sorted(set(data.source.targets)) == list(range(31))
    assert len(data.target) == 20 and sorted(set(data.target.targets)) == data.target_classes
    for path, label in data.source.samples + data.target.samples:
        assert path.parent.name == OFFICE31.classes[label]
    assert all("webcam" in str(p) for p, _ in data.target_eval.samples)
    x, y = next(iter(DataLoader(data.target_eval, batch_size=4)))
    assert x.shape == (4, 3, 32, 32) and x.dtype == torch.float32 and y.shape == (4,)
    x, _ = next(iter(DataLoader(data.source, batch_size=3, shuffle=True)))
    assert x.shape == (3, 3, 32, 32)


def test_task_lookup_is_case_insensitive(tmp_path):
    make_office31(tmp_path)
    assert build_benchmark_task("a2w", tmp_path, image_size=8, resize_size=8).name == "A2W"


def test_visda_train_is_synthetic(tmp_path):
    for domain in ("train", "validation"):
        for k, name in enumerate(DATASETS["visda2017"].classes):
            write_image(tmp_path / "visda2017" / domain / name / f"{domain}{k}.PNG", k)
    (tmp_path / "visda2017" / "train" / "image_list.txt").write_text("ignored 0\n")
    data = build_benchmark_task("R2S", tmp_path, image_size=8, resize_size=8)
    assert len(data.source) == 12 and len(data.target) == 6
    assert all(p.name.startswith("train") for p, _ in data.target.samples)


def test_imageclef_list_files_with_path_fallbacks(tmp_path):
    make_imageclef(tmp_path)
    lines = [f"/somewhere/else/imageclef/i/{k}.jpg {k}" for k in range(12)]  # last two parts
    lines[0] = "# a comment"
    lines.insert(1, "")
    lines.append("../i/0.jpg 0")  # relative to the list folder
    write_list(tmp_path / "imageclef" / "list" / "iList.txt", lines)
    data = build_benchmark_task("I2P", tmp_path, image_size=8, resize_size=8)
    assert data.source.targets == list(range(1, 12)) + [0]
    assert [p.name for p, _ in data.source.samples][-1] == "0.jpg"
    assert data.target.targets == list(range(6))
    assert all(p.parent.name == "p" for p, _ in data.target.samples)


def test_image_list_malformed_line(tmp_path):
    write_image(tmp_path / "a.jpg")
    bad = write_list(tmp_path / "list.txt", ["a.jpg 0", "a.jpg", "a.jpg 1"])
    with pytest.raises(DataError, match=r"list.txt, line 2: expected") as exc:
        load_image_list(bad, tmp_path, 12)
    assert_one_line(exc)


def test_image_list_label_out_of_range(tmp_path):
    write_image(tmp_path / "a.jpg")
    bad = write_list(tmp_path / "list.txt", ["a.jpg 12"])
    with pytest.raises(DataError, match=r"line 1: label 12 is outside 0\.\.\.11") as exc:
        load_image_list(bad, tmp_path, 12)
    assert_one_line(exc)


def test_image_list_missing_image(tmp_path):
    bad = write_list(tmp_path / "list.txt", ["# header", "nope/x.jpg 0"])
    with pytest.raises(DataError, match=r"list.txt, line 2: image nope/x.jpg not found") as exc:
        load_image_list(bad, tmp_path, 12)
    assert_one_line(exc)


def test_user_list_file_overrides_folder_scan(tmp_path):
    make_office31(tmp_path)
    chosen = ["webcam/images/mug/0.jpg 17", "webcam/images/bike/0.jpg 1"]
    write_list(tmp_path / "office31" / "list" / "webcam.txt", chosen)
    samples = find_domain_samples(tmp_path, OFFICE31, "webcam")
    assert [(p.parent.name, y) for p, y in samples] == [("mug", 17), ("bike", 1)]
    data = build_benchmark_task("A2W", tmp_path, image_size=8, resize_size=8)
    assert len(data.source) == 31 and data.target.targets == [17, 1]


def test_data_root_from_environment(tmp_path, monkeypatch):
    make_office31(tmp_path, domains=("dslr", "webcam"))
    monkeypatch.setenv("SSOT_DATA_ROOT", str(tmp_path))
    assert resolve_data_root(None) == tmp_path
    assert resolve_data_root(tmp_path / "office31") == tmp_path / "office31"  # argument wins
    assert len(build_benchmark_task("D2W", image_size=8, resize_size=8).source) == 31


# --- errors ----------------------------------------------------------------------------------

def test_no_data_root(monkeypatch):
    monkeypatch.delenv("SSOT_DATA_ROOT", raising=False)
    with pytest.raises(DataError, match="no data root: pass --data-root DIR or set "
                                        "SSOT_DATA_ROOT") as exc:
        build_benchmark_task("A2W")
    assert_one_line(exc)


def test_nonexistent_data_root(tmp_path):
    expected = re.escape(f"data root {tmp_path / 'nope'} does not exist")
    with pytest.raises(DataError, match=expected) as exc:
        resolve_data_root(tmp_path / "nope")
    assert_one_line(exc)


def test_missing_dataset_folder(tmp_path):
    with pytest.raises(DataError) as exc:
        build_benchmark_task("Ar2Cl", tmp_path)
    message = str(exc.value)
    assert f"expected {tmp_path / 'officehome'} " in message
    assert "officehome/Art/<class>/*.jpg" in message
    assert "https://www.hemanthdv.org/officeHomeDataset.html" in message
    assert_one_line(exc)


def test_missing_domain_folder(tmp_path):
    make_office31(tmp_path, domains=("amazon",))
    with pytest.raises(DataError) as exc:
        build_benchmark_task("A2W", tmp_path)
    message = str(exc.value)
    assert f"expected {tmp_path / 'office31' / 'webcam' / 'images'} " in message
    assert "office31/webcam/images/<class>/*.jpg" in message
    assert "https://faculty.cc.gatech.edu/~judy/domainadapt/" in message
    assert_one_line(exc)


def test_missing_imageclef_list_file(tmp_path):
    make_imageclef(tmp_path, domains=("i",))
    with pytest.raises(DataError, match="pList.txt") as exc:
        build_benchmark_task("I2P", tmp_path)
    assert "https://www.imageclef.org/2014/adaptation" in str(exc.value)
    assert_one_line(exc)


def test_unknown_task(tmp_path):
    with pytest.raises(ConfigError, match=r"Unknown task 'X2Y'\. Valid tasks: digits, A2W, "
                                          r"D2W, .*Rw2Pr, S2R, R2S, P2H, H2P, H2H, P2P, custom\.") as exc:
        build_benchmark_task("X2Y", tmp_path)
    assert_one_line(exc)


def test_unknown_class_folder(tmp_path):
    make_office31(tmp_path)
    write_image(tmp_path / "office31" / "amazon" / "images" / "Back_Pack" / "0.jpg")
    with pytest.raises(DataError, match=r"unknown class folder .*Back_Pack.*"
                                        r"DATASETS\['office31'\]\.classes") as exc:
        build_benchmark_task("A2W", tmp_path)
    assert_one_line(exc)


def test_missing_source_class(tmp_path):
    make_office31(tmp_path)
    for name in ("bike", "ruler"):
        for f in (tmp_path / "office31" / "amazon" / "images" / name).iterdir():
            f.unlink()
        (tmp_path / "office31" / "amazon" / "images" / name).rmdir()
    with pytest.raises(DataError, match=r"source domain .*amazon has no images for 2 of the 31 "
                                        r"classes \(bike, ruler\)") as exc:
        build_benchmark_task("A2W", tmp_path)
    assert_one_line(exc)


def test_empty_domain_folder(tmp_path):
    make_office31(tmp_path, domains=("amazon",))
    (tmp_path / "office31" / "webcam" / "images").mkdir(parents=True)
    with pytest.raises(DataError, match=r"no images in .*webcam") as exc:
        build_benchmark_task("A2W", tmp_path)
    assert_one_line(exc)


def test_corrupt_image(tmp_path):
    good = write_image(tmp_path / "good.jpg")
    bad = tmp_path / "broken.jpg"
    bad.write_bytes(b"this is not\na JPEG")
    dataset = ImageSampleDataset([(good, 0), (bad, 1)], eval_transform(8, 8))
    assert dataset[0][0].shape == (3, 8, 8)
    with pytest.raises(DataError, match=r"cannot read image .*broken\.jpg: .*remove or replace "
                                        r"the file") as exc:
        dataset[1]
    assert_one_line(exc)


def test_bad_image_size(tmp_path):
    with pytest.raises(ConfigError, match="'resize_size' parameter"):
        build_benchmark_task("A2W", tmp_path, image_size=32, resize_size=16)
