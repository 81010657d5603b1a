"""`ssot/data/decoded.py` and `python -m ssot.data prepare`: the decoded-image cache."""
from __future__ import annotations

import hashlib
import json
import struct

import numpy as np
import pytest
import torch
from PIL import Image

from ssot.data.__main__ import main
from ssot.data.benchmarks import build_benchmark_task
from ssot.data.decoded import CACHE_DIR_ENV, default_path, header_checksum, open_cache, prepare, read_header
from ssot.data.decoded_images import load_decoded_task
from ssot.errors import DataError, SSOTError
from tests.fixtures.images import assert_one_line, make_office31

SIZE, CROP = 16, 12


@pytest.fixture(scope="module")
def office(tmp_path_factory):
    """A tiny Office-31 folder (1 image per class and domain) and its A2W cache at 16x16."""
    root = make_office31(tmp_path_factory.mktemp("decoded") / "data", per_class=1)
    return root, prepare("A2W", root, root / "a2w.ssotimg", resize_size=SIZE)


def test_each_image_is_stored_once_square_resized_with_its_provenance(office):
    root, path = office
    cache = open_cache(path, "A2W", SIZE)
    h = cache.header
    jpeg = build_benchmark_task("A2W", root, image_size=CROP, resize_size=SIZE)
    assert (h["task"], h["dataset"], h["domains"]) == ("A2W", "office31", {"source": "amazon", "target": "webcam"})
    assert h["count"] == {"source": 31, "target": 10} and h["resize"]["size"] == SIZE
    assert h["labels"] == {"source": jpeg.source.targets, "target": jpeg.target.targets}
    samples = jpeg.source.samples + jpeg.target.samples
    assert h["files"]["source"] + h["files"]["target"] == [p.relative_to(root).as_posix() for p, _ in samples]
    for k, (file, _) in enumerate(samples):  # the square resize of each image, as PIL computes it
        with Image.open(file) as image:
            assert np.array_equal(cache.pixels[k], np.asarray(image.convert("RGB").resize((SIZE, SIZE), Image.BILINEAR)))
    _, offset = read_header(path)
    assert offset % 4096 == 0 and path.stat().st_size == offset + 41 * SIZE * SIZE * 3
    assert h["data_sha256"] == hashlib.sha256(path.read_bytes()[offset:]).hexdigest()


def test_the_default_location_and_a_cache_is_never_overwritten(office, tmp_path, monkeypatch):
    root, path = office
    monkeypatch.delenv(CACHE_DIR_ENV, raising=False)
    assert default_path("A2W", root, 256) == root / "decoded" / "A2W-256.ssotimg"
    monkeypatch.setenv(CACHE_DIR_ENV, str(tmp_path / "caches"))
    assert default_path("A2W", root, 128) == tmp_path / "caches" / "A2W-128.ssotimg"
    before = path.read_bytes()
    with pytest.raises(SSOTError, match="already exists") as info:
        prepare("A2W", root, path, resize_size=SIZE)
    assert_one_line(info)
    assert path.read_bytes() == before and [p.name for p in path.parent.glob(".*tmp")] == []


def _damaged(path, tmp_path, name, change):
    data = bytearray(path.read_bytes())
    change(data)
    out = tmp_path / name
    out.write_bytes(bytes(data))
    return out


def test_a_cache_of_another_task_or_size_or_a_damaged_one_is_refused_in_one_line(office, tmp_path):
    _, path = office
    _, offset = read_header(path)
    cases = {
        "holds task 'A2W', not 'W2A'": (path, "W2A", SIZE),
        "holds 16x16 images but the config's resize_size is 256": (path, "A2W", 256),
        "truncated": (_damaged(path, tmp_path, "cut.ssotimg", lambda d: d.__delitem__(slice(-100, None))), "A2W", SIZE),
        "is damaged: the SHA-256 of its pixels is": (_damaged(path, tmp_path, "bit.ssotimg",
                                                              lambda d: d.__setitem__(offset + 500, d[offset + 500] ^ 1)), "A2W", SIZE),
        "damaged header": (_damaged(path, tmp_path, "head.ssotimg", lambda d: d.__setitem__(16, ord("}"))), "A2W", SIZE),
        "not a decoded-image cache": (_damaged(path, tmp_path, "other.bin", lambda d: d.__setitem__(0, 0)), "A2W", SIZE),
        "does not exist": (tmp_path / "missing.ssotimg", "A2W", SIZE),
    }
    for message, (file, task, size) in cases.items():
        with pytest.raises(DataError, match=message) as info:
            open_cache(file, task, size)
        assert_one_line(info)


def _rewrite_header(path, tmp_path, name, change, *, checksum: bool):
    """A copy of the cache at ``path`` whose header JSON is changed by ``change`` (its checksum
    recomputed when ``checksum``, as a writer of a wrong header would)."""
    data = bytearray(path.read_bytes())
    header, offset = read_header(path)
    change(header)
    if checksum:
        header["header_sha256"] = header_checksum(header)
    text = json.dumps(header).encode()
    assert len(text) <= offset - 16
    data[16:offset] = text.ljust(offset - 16)
    (tmp_path / name).write_bytes(bytes(data))
    return tmp_path / name


def test_the_header_is_checked_by_its_own_checksum_and_its_fields_before_any_training(office, tmp_path, capsys):
    """Defects of the second audit: a header without ``task`` (KeyError), a label out of range
    (IndexError during training), a length field of 2**62 (MemoryError) ended in tracebacks, and
    a changed label in range trained silently: the pixels' checksum did not cover the header."""
    _, path = office
    header, offset = read_header(path)
    assert header["header_sha256"] == header_checksum(header)

    def relabel(h):
        h["labels"]["source"][3] = (h["labels"]["source"][3] + 1) % 31

    def no_task(h):
        del h["task"]

    def out_of_range(h):
        h["labels"]["target"][0] = 99

    huge = bytearray(path.read_bytes())
    huge[8:16] = struct.pack("<Q", 2**62)
    (tmp_path / "huge.ssotimg").write_bytes(bytes(huge))
    found = header_checksum({**header, "labels": {**header["labels"], "source": [*header["labels"]["source"][:3],
                             (header["labels"]["source"][3] + 1) % 31, *header["labels"]["source"][4:]]}})
    cases = {
        f"has a damaged header: its SHA-256 is {found}, expected {header['header_sha256']}":
            _rewrite_header(path, tmp_path, "relabel.ssotimg", relabel, checksum=False),
        "has a damaged header \\(no task\\)": _rewrite_header(path, tmp_path, "notask.ssotimg", no_task, checksum=True),
        "has a damaged header \\(target label 99 is not a target class": _rewrite_header(path, tmp_path, "range.ssotimg",
                                                                                         out_of_range, checksum=True),
        f"has a damaged header \\(its length field says {2**62} bytes, the file holds {path.stat().st_size}\\)":
            tmp_path / "huge.ssotimg",
    }
    for message, file in cases.items():
        with pytest.raises(DataError, match=message) as info:
            open_cache(file, "A2W", SIZE)
        assert_one_line(info)
        assert f"Remove it and rebuild it: `python -m ssot.data prepare --task A2W --data-root DIR --resize-size {SIZE} --out {file}`" \
            in str(info.value)
    # training on a damaged cache: refused before any work, exit status 2
    from ssot.train import main as train

    bad = cases[next(iter(cases))]
    assert train(["--task", "A2W", "--image-cache", str(bad), "--no-pretrained", "--resize-size", str(SIZE), "--image-size",
                  str(CROP), "--device", "cpu", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: Decoded-image cache {bad} has a damaged header") and err.count("\n") == 1


def test_a_format_1_cache_is_accepted_with_a_warning_and_its_fields_still_checked(office, tmp_path, capsys):
    _, path = office

    def format_1(h):
        h["format"] = 1
        del h["header_sha256"]

    old = _rewrite_header(path, tmp_path, "v1.ssotimg", format_1, checksum=False)
    assert open_cache(old, "A2W", SIZE).header["format"] == 1
    open_cache(old, "A2W", SIZE)
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"warning: decoded-image cache {old} is of format 1")
    bad = _rewrite_header(old, tmp_path, "v1-range.ssotimg", lambda h: h["labels"]["source"].__setitem__(0, 31), checksum=False)
    with pytest.raises(DataError, match="source label 31 is not a class"):
        open_cache(bad, "A2W", SIZE)


def test_the_paper_transform_reads_the_same_tensors_from_the_cache_and_from_the_jpegs(office):
    root, path = office
    jpeg = build_benchmark_task("A2W", root, image_size=CROP, resize_size=SIZE, transform="paper")
    cached = load_decoded_task(path, "A2W", image_size=CROP, resize_size=SIZE, transform="paper")
    for side in ("source", "source_eval", "target", "target_eval"):
        a, b = getattr(jpeg, side), getattr(cached, side)
        assert len(a) == len(b)
        for i in range(len(a)):
            assert torch.equal(a[i][0], b[i][0]) and a[i][1] == b[i][1]
    # with the default transform the evaluation is the same centre crop of the square resize
    default = load_decoded_task(path, "A2W", image_size=CROP, resize_size=SIZE)
    assert torch.equal(default.target_eval[3][0], jpeg.target_eval[3][0])
    torch.manual_seed(0)
    assert not torch.equal(default.source[0][0], default.source[0][0])  # random crops for training


def test_prepare_command_then_train_on_the_cache(office, tmp_path, capsys):
    from ssot import SSOTConfig, run

    root, _ = office
    out = tmp_path / "cache" / "a2w.ssotimg"
    args = ["prepare", "--task", "a2w", "--data-root", str(root), "--out", str(out), "--resize-size", str(SIZE),
            "--num-workers", "2", "--quiet"]
    assert main(args) == 0
    printed = capsys.readouterr().out
    assert f"--image-cache {out}" in printed and "31 source + 10 target images" in printed
    assert json.loads(json.dumps(read_header(out)[0]))["task"] == "A2W"
    assert main(args) == 2 and "already exists" in capsys.readouterr().err
    cfg = SSOTConfig.for_task("A2W", image_cache=str(out), pretrained=False, image_size=CROP, resize_size=SIZE, batch_size=4,
                              epochs=1, pretrain_epochs=0, iters_per_epoch=1, bottleneck_dims=(16,), num_workers=0,
                              device="cpu", source_eval_samples=8)
    record = run(cfg)
    assert record["status"] == "completed" and record["task"]["n_source"] == 31 and record["task"]["n_target"] == 10


def test_prepare_refuses_the_plausible_mistakes_in_one_line_before_decoding(office, tmp_path, capsys):
    """The second audit: ``--num-workers -2`` (then ``--workers``) was accepted and ``--task P2H`` named an API instead of
    a command; with them, the mistakes a user makes most: an unknown task, a data root that is
    not there, an output that exists, is a folder, lies under a file, is not a .ssotimg file (a
    .jpg in an image folder would be read as an image next time) or is one of the task's images."""
    root, _ = office
    image = next((root / "office31" / "amazon" / "images" / "back_pack").iterdir())
    before = image.read_bytes()
    (tmp_path / "afile").write_text("x")
    (tmp_path / "dir.ssotimg").mkdir()
    cases = {
        ("--task", "P2H"): "Task 'P2H' is not a task of the paper's image benchmarks (office31, imageclef, officehome, "
                           "visda2017): its images are built in memory, so it needs no data root and no decoded-image "
                           "cache. Train on it as it is: `python -m ssot.train --task P2H`.",
        ("--task", "A2W", "--num-workers", "-2"): "The '--num-workers' argument must be an int >= 0 (decoding processes). Got -2 instead.",
        ("--task", "A2X"): "Unknown task 'A2X'. Did you mean 'A2W'? Valid tasks: digits, A2W,",
        ("--task", "A2W", "--data-root", str(tmp_path / "nope")): f"data root {tmp_path / 'nope'} does not exist or is not a folder",
        ("--task", "A2W", "--out", str(tmp_path / "afile")): "The '--out' argument must end in .ssotimg. Got 'afile' instead.",
        ("--task", "A2W", "--out", str(tmp_path / "dir.ssotimg")): f"--out {tmp_path / 'dir.ssotimg'} is a folder, not a file.",
        ("--task", "A2W", "--out", str(tmp_path / "afile" / "x.ssotimg")): "cannot be created: ",
        ("--task", "A2W", "--out", str(image.with_name("new.jpg"))): "must end in .ssotimg. Got 'new.jpg' instead.",
        ("--task", "A2W", "--out", str(image)): "must end in .ssotimg",
    }
    for flags, message in cases.items():
        argv = ["prepare", "--data-root", str(root), "--resize-size", str(SIZE), "--quiet", *flags]
        assert main(argv) == 2, flags
        err = capsys.readouterr().err
        assert err.startswith("error: ") and message in err and err.count("\n") == 1, (flags, err)
    assert image.read_bytes() == before and not image.with_name("new.jpg").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile", "dir.ssotimg"]
