"""`python -m ssot.data check/fetch`: released layouts served by a loopback HTTP server.

Every archive is generated here (tiny images, each dataset's released layout); the server is
Python's ``http.server`` on 127.0.0.1, with HTTP ``Range`` support and a switch that cuts a
response short, so that resuming is exercised against a real socket.
"""
from __future__ import annotations

import hashlib
import io
import json
import tarfile
import threading
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from ssot.data.__main__ import main as data_main
from ssot.cli import EXIT_EXTERNAL
from ssot.data.benchmarks import build_benchmark_task
from ssot.data.registry import BENCHMARKS, DATASETS, tasks_of
from ssot.data.check import check_data
from ssot.data.fetch import CHECKSUMS_FILE, FetchError, download
from test_benchmarks import write_image

# One step of pretraining and one of adaptation: ResNet-50 steps dominate the cost on a CPU.
QUICK = ["--epochs", "1", "--pretrain-epochs", "1", "--iters-per-epoch", "1", "--quiet"]


# --- archives in the released layouts ----------------------------------------------------------

def _tree(base: Path, dataset: str, per_class: int = 1) -> list[str]:
    """Write one dataset's released tree under ``base``; return the archive file names."""
    spec = DATASETS[dataset]
    if dataset == "office31":
        for domain in ("amazon", "dslr", "webcam"):
            for k, name in enumerate(spec.classes):
                for i in range(per_class):
                    write_image(base / "domain_adaptation_images" / domain / "images" / name
                                / f"frame_{i:04d}.jpg", k + i)
        return ["domain_adaptation_images.tar.gz"]
    if dataset == "officehome":
        for domain in ("Art", "Clipart", "Product", "Real World"):
            for k, name in enumerate(spec.classes):
                write_image(base / "OfficeHomeDataset_10072016" / domain / name / "00001.jpg", k)
        return ["OfficeHomeDataset_10072016.zip"]
    if dataset == "imageclef":
        for domain in "bcip":
            lines = []
            for k in range(spec.num_classes):
                write_image(base / "image_CLEF" / domain / f"{k}_0001.jpg", k)
                lines.append(f"/home/someone/data/imageclef/{domain}/{k}_0001.jpg {k}")
            (base / "image_CLEF" / "list").mkdir(parents=True, exist_ok=True)
            (base / "image_CLEF" / "list" / f"{domain}List.txt").write_text("\n".join(lines) + "\n")
        return ["image_CLEF.zip"]
    for split, suffix in (("train", ".png"), ("validation", ".jpg")):
        lines = []
        for k, name in enumerate(spec.classes):
            write_image(base / split / split / name / f"{name}_{k}{suffix}", k)
            lines.append(f"{name}/{name}_{k}{suffix} {k}")
        (base / split / split / "image_list.txt").write_text("\n".join(lines) + "\n")
    return ["train.tar", "validation.tar"]


def _pack(src: Path, name: str) -> bytes:
    buf = io.BytesIO()
    if name.endswith(".zip"):
        with zipfile.ZipFile(buf, "w") as zf:
            for path in sorted(src.rglob("*")):
                zf.write(path, path.relative_to(src).as_posix())
    else:
        with tarfile.open(fileobj=buf, mode="w:gz" if name.endswith(".gz") else "w") as tf:
            for path in sorted(src.iterdir()):
                tf.add(path, arcname=path.name)
    return buf.getvalue()


@pytest.fixture(scope="module")
def archives(tmp_path_factory) -> dict[str, bytes]:
    """File name -> bytes of every dataset's generated official archive(s)."""
    out: dict[str, bytes] = {}
    for dataset in BENCHMARKS:
        base = tmp_path_factory.mktemp(dataset)
        names = _tree(base, dataset, per_class=2 if dataset == "office31" else 1)
        for name in names:
            src = base / name.split(".")[0] if dataset == "visda2017" else base
            out[name] = _pack(src, name)
    return out


# --- loopback server -----------------------------------------------------------------------------

class _Server:
    """Files served from memory on 127.0.0.1 with Range support; ``cut[name]`` bytes then close."""

    def __init__(self, files: dict[str, bytes]):
        self.files, self.cut, self.log = dict(files), {}, []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output clean
                pass

            def do_GET(self):
                name = self.path.lstrip("/")
                outer.log.append((name, self.headers.get("Range")))
                if name not in outer.files:
                    self.send_error(404)
                    return
                data, start = outer.files[name], 0
                rng = self.headers.get("Range")
                if rng:
                    start = int(rng.split("=")[1].split("-")[0])
                    self.send_response(206)
                    self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
                else:
                    self.send_response(200)
                self.send_header("Content-Length", str(len(data) - start))
                self.end_headers()
                body = data[start:]
                limit = outer.cut.pop(name, None)
                self.wfile.write(body if limit is None else body[:limit])
                if limit is not None:
                    self.close_connection = True

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join(timeout=5)


@pytest.fixture
def server(archives):
    with _Server(archives) as srv:
        yield srv


def _fetch(dataset: str, root: Path, *extra: str) -> int:
    return data_main(["fetch", dataset, "--data-root", str(root), "--no-progress", *extra])


# --- tests ---------------------------------------------------------------------------------------

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
    assert _fetch(dataset, root, "--mirror", server.url) == 0
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
    assert _fetch(dataset, root, "--mirror", server.url) == 0
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
    assert _fetch("office31", first, "--mirror", server.url) == 0
    bad = bytearray(archives[name])
    bad[len(bad) // 2] ^= 0xFF
    corrupt = tmp_path / name
    corrupt.write_bytes(bytes(bad))
    # The checksum recorded at the first verified download is enforced on another data root.
    second = tmp_path / "second"
    second.mkdir()
    (second / CHECKSUMS_FILE).write_text((first / CHECKSUMS_FILE).read_text())
    capsys.readouterr()
    assert _fetch("office31", second, "--archive", str(corrupt)) == EXIT_EXTERNAL
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert f"checksum mismatch for {corrupt}" in err and f"expected sha256 {good}" in err
    assert not (second / "office31").exists()
    # Given by hand (--sha256), the same refusal, from the first use.
    assert _fetch("office31", tmp_path / "third", "--archive", str(corrupt), "--sha256", good) == EXIT_EXTERNAL
    assert f"expected sha256 {good} (--sha256)" in capsys.readouterr().err
    # With nothing to compare against, a damaged archive is refused and nothing is recorded.
    assert _fetch("office31", tmp_path / "fourth", "--archive", str(corrupt)) == EXIT_EXTERNAL
    assert "is damaged" in capsys.readouterr().err
    assert not (tmp_path / "fourth" / CHECKSUMS_FILE).exists()


def test_check_reports_missing_and_empty_classes_and_unreadable_images(archives, tmp_path,
                                                                       capsys):
    archive = tmp_path / "OfficeHomeDataset_10072016.zip"
    archive.write_bytes(archives[archive.name])
    root = tmp_path / "data"
    assert _fetch("officehome", root, "--archive", str(archive), "--no-check") == 0
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
    assert _fetch("visda2017", tmp_path, "--mirror", server.url + "/nowhere") == EXIT_EXTERNAL
    assert "HTTP 404" in capsys.readouterr().err
    (tmp_path / "visda2017" / "train").mkdir(parents=True)
    assert _fetch("visda2017", tmp_path, "--mirror", server.url) == 2
    err = capsys.readouterr().err
    assert f"{tmp_path / 'visda2017' / 'train'} already exists and fetch never overwrites" in err


def test_visda_fetched_from_loopback_trains_s2r(server, tmp_path):
    """The direct-link dataset end to end: download -> verify -> unpack -> check -> train."""
    from ssot.train import main as train_main

    root = tmp_path / "data"
    assert _fetch("visda2017", root, "--mirror", server.url) == 0
    out = tmp_path / "s2r.json"
    code = train_main(["--task", "S2R", "--data-root", str(root), "--no-pretrained",
                       "--image-size", "16", "--resize-size", "16", "--batch-size", "4",
                       "--num-workers", "0", "--device", "cpu", "--eval-batch-size", "16",
                       *QUICK, "--out", str(out)])
    assert code == 0
    record = json.loads(out.read_text())
    assert record["task"]["n_source"] == 12 and record["task"]["n_target"] == 6
    assert record["status"] == "completed" and len(record["epochs"]) == 1


def test_archive_folder_directly_in_the_data_root_is_accepted(archives, tmp_path):
    with zipfile.ZipFile(io.BytesIO(archives["OfficeHomeDataset_10072016.zip"])) as zf:
        zf.extractall(tmp_path)
    assert (tmp_path / "OfficeHomeDataset_10072016" / "Real World").is_dir()
    data = build_benchmark_task("Rw2Ar", tmp_path, image_size=8, resize_size=8)
    assert len(data.source) == 65 and len(data.target) == 25
    assert all("Real World" in str(p) for p, _ in data.source.samples)


def test_counts_equal_to_the_published_ones_are_ok(archives, tmp_path, capsys, monkeypatch):
    import ssot.data.check as check

    archive = tmp_path / "image_CLEF.zip"
    archive.write_bytes(archives[archive.name])
    assert _fetch("imageclef", tmp_path / "data", "--archive", str(archive), "--no-check") == 0
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
