"""`python -m ssot.data fetch` (`ssot/data/fetch.py`): download, resume, verify, unpack."""
from __future__ import annotations

import hashlib
import json

import pytest

from ssot.cli import EXIT_EXTERNAL
from ssot.data.__main__ import main as data_main
from ssot.data.benchmarks import build_benchmark_task
from ssot.data.fetch import CHECKSUMS_FILE, FetchError, download
from ssot.data.registry import BENCHMARKS, tasks_of
from tests.fixtures.archives import fetch_command

# One step of pretraining and one of adaptation: ResNet-50 steps dominate the cost on a CPU.
QUICK = ["--epochs", "1", "--pretrain-epochs", "1", "--iters-per-epoch", "1", "--quiet"]


RELEASED_PATHS = {
    "office31": "office31/domain_adaptation_images/webcam/images/mug",
    "officehome": "officehome/OfficeHomeDataset_10072016/Real World/Webcam",
    "imageclef": "imageclef/image_CLEF/list/pList.txt",
    "visda2017": "visda2017/validation/image_list.txt",
}


@pytest.mark.parametrize("dataset", list(BENCHMARKS))
def test_fetch_from_loopback_verifies_unpacks_and_checks(dataset, server, archives, tmp_path,
                                                         capsys):
    root = tmp_path / "data"
    assert fetch_command(dataset, root, "--mirror", server.url) == 0
    printed = capsys.readouterr().out
    assert (root / RELEASED_PATHS[dataset]).exists()
    assert f"tasks: {len(tasks_of(dataset))} of {len(tasks_of(dataset))} can run" in printed
    records = json.loads((root / CHECKSUMS_FILE).read_text())
    for name in {n for n, _ in server.log}:
        assert records[name]["sha256"] == hashlib.sha256(archives[name]).hexdigest()
        assert records[name]["size"] == len(archives[name])
        assert (root / dataset / f".ssot-unpacked-{name}.json").is_file()
    leftovers = [p for p in root.rglob("*") if ".part" in p.name or ".ssot-unpack-" in p.name]
    assert leftovers == [] and not any((root / ".ssot-downloads").iterdir())
    # The loaders read the released layout as it is (no renaming).
    task = tasks_of(dataset)[0]
    data = build_benchmark_task(task, root, image_size=8, resize_size=8)
    assert len(data.source) > 0 and set(t for _, t in data.target.samples) <= set(data.target_classes)
    # A second fetch finds everything in place and downloads nothing.
    requests = len(server.log)
    assert fetch_command(dataset, root, "--mirror", server.url) == 0
    assert len(server.log) == requests and "already unpacked" in capsys.readouterr().out


def test_interrupted_download_is_resumed_with_a_range_request(server, archives, tmp_path):
    name = "OfficeHomeDataset_10072016.zip"
    data, half = archives[name], len(archives[name]) // 2
    dest = tmp_path / name
    server.cut[name] = half
    with pytest.raises(FetchError, match="run the same command again to resume") as exc:
        download(f"{server.url}/{name}", dest, progress=False, retries=0)
    assert "\n" not in str(exc.value) and not dest.exists()
    assert (tmp_path / f"{name}.part").stat().st_size == half
    download(f"{server.url}/{name}", dest, progress=False, retries=0)
    assert server.log[-1] == (name, f"bytes={half}-")
    assert dest.read_bytes() == data and not (tmp_path / f"{name}.part").exists()
    # Within one call, a cut connection is retried from where it stopped.
    server.cut[name] = 1000
    download(f"{server.url}/{name}", tmp_path / "again.zip", progress=False, retries=2)
    assert server.log[-2:] == [(name, None), (name, "bytes=1000-")]


def test_corrupted_archive_is_refused_naming_file_and_checksum(server, archives, tmp_path,
                                                               capsys):
    name = "domain_adaptation_images.tar.gz"
    good = hashlib.sha256(archives[name]).hexdigest()
    first = tmp_path / "first"
    assert fetch_command("office31", first, "--mirror", server.url) == 0
    bad = bytearray(archives[name])
    bad[len(bad) // 2] ^= 0xFF
    corrupt = tmp_path / name
    corrupt.write_bytes(bytes(bad))
    # The checksum recorded at the first verified download is enforced on another data root.
    second = tmp_path / "second"
    second.mkdir()
    (second / CHECKSUMS_FILE).write_text((first / CHECKSUMS_FILE).read_text())
    capsys.readouterr()
    assert fetch_command("office31", second, "--archive", str(corrupt)) == EXIT_EXTERNAL
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert f"checksum mismatch for {corrupt}" in err and f"expected sha256 {good}" in err
    assert not (second / "office31").exists()
    # Given by hand (--sha256), the same refusal, from the first use.
    assert fetch_command("office31", tmp_path / "third", "--archive", str(corrupt), "--sha256", good) == EXIT_EXTERNAL
    assert f"expected sha256 {good} (--sha256)" in capsys.readouterr().err
    # With nothing to compare against, a damaged archive is refused and nothing is recorded.
    assert fetch_command("office31", tmp_path / "fourth", "--archive", str(corrupt)) == EXIT_EXTERNAL
    assert "is damaged" in capsys.readouterr().err
    assert not (tmp_path / "fourth" / CHECKSUMS_FILE).exists()


@pytest.mark.parametrize("args, code, message", [
    (["fetch", "officehome"], 2, "has no direct download link: download "
                                 "OfficeHomeDataset_10072016.zip from https://www.hemanthdv.org"),
    (["fetch", "visda2017", "--archive", "NAME:x.tar"], 2, "The '--archive' parameter must be one "
                                                           "of the files train.tar, validation.tar"),
    (["fetch", "office31", "--archive", "NAME:missing.tar.gz"], 2, "does not exist"),
    (["check", "--sample", "-1"], 2, "The 'sample' parameter must be an int >= 0"),
])
def test_user_mistakes_are_one_line(args, code, message, tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("SSOT_DATA_MIRROR", raising=False)
    (tmp_path / "x.tar").write_bytes(b"")
    args = [a.replace("NAME:", f"{tmp_path}/") for a in args]
    assert data_main([*args, "--data-root", str(tmp_path)]) == code
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and "Traceback" not in err


def test_missing_file_on_the_mirror_and_existing_destination(server, archives, tmp_path, capsys):
    assert fetch_command("visda2017", tmp_path, "--mirror", server.url + "/nowhere") == EXIT_EXTERNAL
    assert "HTTP 404" in capsys.readouterr().err
    (tmp_path / "visda2017" / "train").mkdir(parents=True)
    assert fetch_command("visda2017", tmp_path, "--mirror", server.url) == 2
    err = capsys.readouterr().err
    assert f"{tmp_path / 'visda2017' / 'train'} already exists and fetch never overwrites" in err


def test_visda_fetched_from_loopback_trains_s2r(server, tmp_path):
    """The direct-link dataset end to end: download -> verify -> unpack -> check -> train."""
    from ssot.train import main as train_main

    root = tmp_path / "data"
    assert fetch_command("visda2017", root, "--mirror", server.url) == 0
    out = tmp_path / "s2r.json"
    code = train_main(["--task", "S2R", "--data-root", str(root), "--no-pretrained",
                       "--image-size", "16", "--resize-size", "16", "--batch-size", "4",
                       "--num-workers", "0", "--device", "cpu", "--eval-batch-size", "16",
                       *QUICK, "--out", str(out)])
    assert code == 0
    record = json.loads(out.read_text())
    assert record["task"]["n_source"] == 12 and record["task"]["n_target"] == 6
    assert record["status"] == "completed" and len(record["epochs"]) == 1
