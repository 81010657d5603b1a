"""`ssot/data/benchmarks.py` and `ssot/data/layouts.py`: the loaders, on tiny image folders."""
from __future__ import annotations

import io
import re
import zipfile

import pytest
import torch
from torch.utils.data import DataLoader

from ssot.data.benchmarks import (
    ImageSampleDataset,
    build_benchmark_task,
    eval_transform,
    find_domain_samples,
    load_image_list,
    resolve_data_root,
    train_transform,
)
from ssot.data.registry import DATASETS
from ssot.errors import ConfigError, DataError
from tests.fixtures.images import OFFICE31, assert_one_line, make_imageclef, make_office31, write_image, write_list


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


@pytest.mark.parametrize("task, present, missing, layout, url", [
    ("Ar2Cl", (), "officehome", "officehome/Art/<class>/*.jpg", "https://www.hemanthdv.org/officeHomeDataset.html"),
    ("A2W", ("amazon",), "office31/webcam/images", "office31/webcam/images/<class>/*.jpg",
     "https://faculty.cc.gatech.edu/~judy/domainadapt/"),
])
def test_missing_dataset_or_domain_folder(tmp_path, task, present, missing, layout, url):
    if present:
        make_office31(tmp_path, domains=present)
    with pytest.raises(DataError) as exc:
        build_benchmark_task(task, tmp_path)
    message = str(exc.value)
    assert f"expected {tmp_path / missing} " in message and layout in message and url in message
    assert_one_line(exc)


def test_missing_imageclef_list_file(tmp_path):
    make_imageclef(tmp_path, domains=("i",))
    with pytest.raises(DataError, match="pList.txt") as exc:
        build_benchmark_task("I2P", tmp_path)
    assert "https://www.imageclef.org/2014/adaptation" in str(exc.value)
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


def test_archive_folder_directly_in_the_data_root_is_accepted(archives, tmp_path):
    with zipfile.ZipFile(io.BytesIO(archives["OfficeHomeDataset_10072016.zip"])) as zf:
        zf.extractall(tmp_path)
    assert (tmp_path / "OfficeHomeDataset_10072016" / "Real World").is_dir()
    data = build_benchmark_task("Rw2Ar", tmp_path, image_size=8, resize_size=8)
    assert len(data.source) == 65 and len(data.target) == 25
    assert all("Real World" in str(p) for p, _ in data.source.samples)


def test_the_paper_transform_is_the_centre_crop_of_a_square_resize_for_training_and_evaluation(tmp_path):
    import numpy as np
    from PIL import Image

    pixels = np.random.default_rng(1).integers(0, 256, (30, 47, 3), dtype=np.uint8)  # not square
    image = Image.fromarray(pixels)
    square = np.asarray(image.resize((16, 16), Image.BILINEAR), dtype=np.float32) / 255  # the paper: 256x256 resized
    mean, std = np.array([0.485, 0.456, 0.406], np.float32), np.array([0.229, 0.224, 0.225], np.float32)
    expected = torch.from_numpy(((square[2:14, 2:14] - mean) / std).transpose(2, 0, 1))  # then the 12x12 centre crop
    for transform in (train_transform(12, "paper", 16), eval_transform(12, 16, "paper")):
        torch.testing.assert_close(transform(image), expected, atol=1e-6, rtol=0)
    assert not torch.allclose(eval_transform(12, 16)(image), expected, atol=1e-3)  # the default keeps the aspect ratio
    make_office31(tmp_path, per_class=1)
    data = build_benchmark_task("A2W", tmp_path, image_size=12, resize_size=16, transform="paper")
    assert all(torch.equal(data.source[i][0], data.source_eval[i][0]) for i in range(3))  # no random augmentation
