"""`python -m ssot.data check` (`ssot/data/check.py`): counts, missing classes, runnable tasks."""
from __future__ import annotations

from ssot.data.__main__ import main as data_main
from ssot.data.check import check_data
from ssot.data.registry import DATASETS
from tests.fixtures.archives import fetch_command
from tests.fixtures.images import write_image


def test_check_reports_missing_and_empty_classes_and_unreadable_images(archives, tmp_path,
                                                                       capsys):
    archive = tmp_path / "OfficeHomeDataset_10072016.zip"
    archive.write_bytes(archives[archive.name])
    root = tmp_path / "data"
    assert fetch_command("officehome", root, "--archive", str(archive), "--no-check") == 0
    assert archive.exists()  # a file given by hand is never deleted
    released = root / "officehome" / "OfficeHomeDataset_10072016"
    for f in (released / "Real World" / "Alarm_Clock").iterdir():
        f.unlink()
    (released / "Real World" / "Alarm_Clock").rmdir()
    for f in (released / "Art" / "Bed").iterdir():
        f.unlink()
    (released / "Clipart" / "Mug" / "00001.jpg").write_bytes(b"not an image")
    capsys.readouterr()
    code = data_main(["check", "--data-root", str(root), "--dataset", "officehome",
                      "--all-images", "--quiet"])
    lines = capsys.readouterr().out.splitlines()
    assert code == 1
    assert "PROBLEM officehome/Real World: missing class Alarm_Clock (no images)" in lines
    assert "PROBLEM officehome/Art: empty class folder Bed (no images)" in lines
    assert any(line.startswith("PROBLEM officehome/Clipart: cannot read image") for line in lines)
    report = check_data(root, ["officehome"], sample=None)
    assert report.runnable == ["Pr2Ar", "Pr2Rw"]
    assert "lacks 1 of 65 classes (Alarm_Clock)" in report.blocked["Rw2Pr"]
    assert "unreadable" in report.blocked["Pr2Cl"]
    # Without --all-images only a sample is opened: 1 of 65 images here, not the broken one.
    assert check_data(root, ["officehome"], sample=1).blocked.get("Pr2Cl") is None


def test_check_accepts_our_layout_and_counts_against_published(tmp_path, capsys):
    for k, name in enumerate(DATASETS["office31"].classes):
        write_image(tmp_path / "office31" / "amazon" / "images" / name / "0.jpg", k)
        write_image(tmp_path / "office31" / "webcam" / "images" / name / "0.jpg", k)
    assert data_main(["check", "--data-root", str(tmp_path), "--dataset", "office31"]) == 1
    out = capsys.readouterr().out
    assert "PROBLEM office31/amazon: 31 images found, 2817 published (2786 missing)" in out
    assert "tasks: 2 of 6 can run: A2W W2A" in out
    assert "cannot run D2W D2A: source office31/dslr cannot be loaded" in out
    assert "cannot run W2D A2D: target office31/dslr cannot be loaded" in out


def test_counts_equal_to_the_published_ones_are_ok(archives, tmp_path, capsys, monkeypatch):
    import ssot.data.check as check

    archive = tmp_path / "image_CLEF.zip"
    archive.write_bytes(archives[archive.name])
    assert fetch_command("imageclef", tmp_path / "data", "--archive", str(archive), "--no-check") == 0
    import dataclasses

    from ssot.data import registry

    spec = registry.DATASETS["imageclef"]
    monkeypatch.setitem(registry.DATASETS, "imageclef", dataclasses.replace(
        spec, published_per_class=1, published_counts={**spec.published_counts, "c": 12}))
    report = check.check_data(tmp_path / "data", ["imageclef"])
    assert "ok imageclef/c: 12 images (published 12)" in report.lines
    assert report.problems == ["imageclef/i: 12 images found, 600 published (588 missing)",
                               "imageclef/p: 12 images found, 600 published (588 missing)"]
    assert report.exit_code == 0 and len(report.runnable) == 6
