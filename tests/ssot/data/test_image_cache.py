"""`ssot/data/image_cache.py`: an image task's decoded-image cache, prepared on first use (issue 37)."""
from __future__ import annotations

import shutil

import numpy as np
import pytest
from PIL import Image

from ssot.config import SSOTConfig
from ssot.data import build_task, check_task, image_cache
from ssot.data.benchmarks import ImageSampleDataset
from ssot.data.decoded import CACHE_DIR_ENV, open_cache, prepare, read_header
from ssot.data.decoded_images import DecodedImages
from ssot.errors import DataError
from tests.fixtures.images import assert_one_line, make_office31, write_image

SIZE = 16


@pytest.fixture
def data(tmp_path, monkeypatch):
    monkeypatch.delenv(CACHE_DIR_ENV, raising=False)
    return make_office31(tmp_path / "data", per_class=1)


def _config(data, **changes):
    return SSOTConfig.for_task("A2W", data_root=str(data), resize_size=SIZE, image_size=12, **changes)


def _square(path):
    with Image.open(path) as image:
        return np.asarray(image.convert("RGB").resize((SIZE, SIZE), Image.BILINEAR))


def test_the_first_use_prepares_the_cache_where_the_docs_say_and_later_uses_reuse_it(data, tmp_path, monkeypatch, capsys):
    config = _config(data)
    assert image_cache.applies(config) and image_cache.inspect(config).state == image_cache.MISSING
    lines = []
    first = image_cache.ensure(config, progress=True, log=lines.append)
    path = data / "decoded" / f"A2W-{SIZE}.ssotimg"
    assert first.path == path and first.how == image_cache.PREPARED and path.is_file()
    assert len(lines) == 1 and lines[0].startswith(f"decoded-image cache: preparing {path}: 41 images at {SIZE}x{SIZE}, "
                                                   "needs 0.00 GiB of disk, ") and lines[0].endswith(f"GiB free in {data / 'decoded'}")
    assert "decode A2W" in capsys.readouterr().err  # the progress bar
    stamp = path.stat().st_mtime_ns, path.stat().st_ino
    again = image_cache.ensure(config, log=lines.append)
    assert again.how == image_cache.REUSED and (path.stat().st_mtime_ns, path.stat().st_ino) == stamp and len(lines) == 1
    task = build_task(config)  # what every run of the config trains on
    assert isinstance(task.source, DecodedImages) and task.source.cache.path == path
    jpeg = build_task(config.replace(image_cache="off"))
    for k, (file, _) in enumerate(jpeg.source.samples[:5]):
        assert np.array_equal(task.source.images[k], _square(file))  # the paper's square resize of each image
    monkeypatch.setenv(CACHE_DIR_ENV, str(tmp_path / "caches"))  # one folder for every data root of the machine
    assert image_cache.ensure(config).path == tmp_path / "caches" / f"A2W-{SIZE}.ssotimg"


def test_off_reads_the_image_files_and_tasks_without_images_need_no_cache(data):
    off = _config(data, image_cache="off")
    assert not image_cache.applies(off) and isinstance(build_task(off).source, ImageSampleDataset)
    assert not (data / "decoded").exists()
    for config in (SSOTConfig.for_task("digits"), _config(data, backbone="features", features_path="x.pt")):
        assert config.image_cache == "auto" and not image_cache.applies(config) and image_cache.path_for(config) is None


def test_changed_images_cause_a_rebuild_and_a_reader_of_the_old_cache_keeps_it(data):
    config = _config(data)
    path = image_cache.ensure(config).path
    old = open_cache(path, "A2W", SIZE)
    before = np.array(old.pixels)
    target = data / "office31" / "amazon" / "images" / "back_pack" / "0.jpg"
    write_image(target, seed=1234)  # the same name, another image
    state = image_cache.inspect(config)
    assert state.state == image_cache.STALE and state.reason == "images were replaced (their sizes or modification times changed)"
    rebuilt = image_cache.ensure(config)
    assert rebuilt.how == image_cache.REBUILT and "rebuilt (images were replaced" in rebuilt.detail
    new = open_cache(path, "A2W", SIZE)
    k = new.header["files"]["source"].index(target.relative_to(data).as_posix())
    assert np.array_equal(new.pixels[k], _square(target)) and not np.array_equal(new.pixels[k], before[k])
    assert np.array_equal(old.pixels, before)  # the old file stays readable by whoever mapped it
    write_image(data / "office31" / "webcam" / "images" / "mug" / "7.jpg", seed=7)  # one more target image
    state = image_cache.inspect(config)
    assert state.reason == "the list of images changed (41 images in the cache, 42 under the data root now)"
    assert image_cache.ensure(config).how == image_cache.REBUILT and read_header(path)[0]["count"] == {"source": 31, "target": 11}
    assert [p.name for p in path.parent.glob(".*tmp")] == []


def test_a_cache_given_by_path_is_used_as_it_is(data, tmp_path):
    given = prepare("A2W", data, tmp_path / "mine.ssotimg", resize_size=SIZE)
    write_image(data / "office31" / "webcam" / "images" / "mug" / "7.jpg", seed=7)
    config = _config(data, image_cache=str(given))
    assert not image_cache.applies(config) and image_cache.path_for(config) == str(given)
    assert build_task(config).target.cache.path == given and not (data / "decoded").exists()  # never rebuilt, nor a default made


def test_too_little_disk_is_refused_in_one_line_before_any_work(data, monkeypatch):
    config = _config(data)
    needed = image_cache.inspect(config).needed
    real = shutil.disk_usage
    monkeypatch.setattr(shutil, "disk_usage", lambda path: real(path)._replace(free=needed - 1))
    for refuse in (check_task, image_cache.ensure, build_task):
        with pytest.raises(DataError, match="Not enough free disk for the decoded-image cache of A2W") as info:
            refuse(config)
        assert_one_line(info)
        assert "SSOT_CACHE_DIR" in str(info.value) and "--image-cache off" in str(info.value)
    assert not (data / "decoded").exists()
    monkeypatch.setattr(shutil, "disk_usage", lambda path: real(path)._replace(free=needed))
    assert image_cache.ensure(config).path.stat().st_size <= needed  # the estimate covers the file
    monkeypatch.setattr(shutil, "disk_usage", lambda path: real(path)._replace(free=0))
    check_task(config)  # a ready cache needs no room


def test_a_default_cache_that_cannot_be_read_is_rebuilt(data):
    config = _config(data)
    path = image_cache.ensure(config).path
    path.write_bytes(b"not a cache")
    state = image_cache.inspect(config)
    assert state.state == image_cache.STALE and state.reason.startswith("it cannot be used: ")
    assert image_cache.ensure(config).how == image_cache.REBUILT and open_cache(path, "A2W", SIZE).header["count"]["source"] == 31


def test_a_cache_folder_that_cannot_be_written_is_refused_naming_ssot_cache_dir(data, tmp_path, monkeypatch):
    (tmp_path / "a-file").write_text("")
    monkeypatch.setenv(CACHE_DIR_ENV, str(tmp_path / "a-file" / "caches"))
    with pytest.raises(DataError, match=f"decoded-image cache location {tmp_path / 'a-file' / 'caches'}/A2W-16.ssotimg cannot "
                                        f"be created: {tmp_path / 'a-file'} is a file, not a folder.") as info:
        check_task(_config(data))
    assert_one_line(info)
    assert str(info.value).endswith("Set SSOT_CACHE_DIR to choose it, or pass --image-cache off to decode the image files instead.")
