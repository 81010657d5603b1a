"""`tune/choices.py` and `tune/packing.py`: what a search chose for speed, and why (issue 37).

The searches here are real up to Ray (flags, checks, the experiment folder, the decoded-image cache
prepared, the packing decided, the lines printed, experiment.json); their Ray part is replaced
(:mod:`tests.fixtures.fake_ray`): ResNet-50 trials take minutes on a CPU, and what these tests
check happens before the first trial starts.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ssot.config import SSOTConfig
from ssot.data.decoded import default_path, open_cache
from tests.fixtures import REPO
from tests.fixtures.images import make_office31, write_image
from tune import packing
from tune.options import SearchOptions, base_config

GIB = 2**30
#: A tiny image search: generated 8x8 images stored at 16x16, 12x12 crops.
TINY = ["--set", "resize_size=16", "--set", "image_size=12", "--set", "pretrained=false", "--epochs", "1", "--num-samples", "2",
        "--num-cpus", "2"]


@pytest.fixture
def data(tmp_path, monkeypatch):
    monkeypatch.delenv("SSOT_CACHE_DIR", raising=False)
    return make_office31(tmp_path / "data", per_class=1)


def _search(capsys, data, storage, name, *extra):
    from tests.fixtures import fake_ray
    from tune import search

    with pytest.MonkeyPatch.context() as patch:
        fake_ray.install(patch.setattr)
        code = search.main(["--task", "A2W", "--data-root", str(data), "--storage-path", str(storage), "--name", name, *TINY, *extra])
    out = capsys.readouterr()
    info = json.loads((storage / name / "A2W" / "experiment.json").read_text()) if code != 2 else None
    return code, out, info


def _choice_lines(out: str) -> dict[str, str]:
    """The printed ``A2W: <name>: <why>`` lines of the choices."""
    from tune.choices import NAMES

    lines = {}
    for line in out.splitlines():
        for name in NAMES:
            if line.startswith(f"A2W: {name}: "):
                lines[name] = line.removeprefix(f"A2W: {name}: ")
    return lines


def test_the_first_search_prepares_the_cache_the_second_reuses_it_and_the_lines_are_experiment_json(data, tmp_path, capsys):
    code, out, info = _search(capsys, data, tmp_path / "runs", "first")
    cache = data / "decoded" / "A2W-16.ssotimg"
    assert code == 3 and cache.is_file()  # 3: the fake Ray runs no trial
    assert f"A2W: decoded-image cache: preparing {cache}: 41 images at 16x16, needs 0.00 GiB of disk" in out.out
    printed = _choice_lines(out.out)
    assert printed == {name: choice["why"] for name, choice in info["choices"].items()}  # one line each, the same text
    assert list(printed) == ["image cache", "packing", "precision", "channels_last"]
    assert info["choices"]["image cache"]["value"]["how"] == "prepared" and printed["image cache"].startswith(f"decoded images {cache} (prepared")
    assert info["base_config"]["image_cache"] == "auto"  # the trials, best_config.json and final runs say "auto", not a path
    gpus, _ = packing.local_gpus()  # a GPU machine decides the packing with its GPUs (the probe measures the footprint)
    packed = info["choices"]["packing"]["why"]
    assert packed.startswith("trials run on CPUs") if not gpus else ("trials per GPU" in packed or "one trial per GPU" in packed)
    assert info["choices"]["precision"]["value"] == "fp32"
    stamp = cache.stat().st_mtime_ns, cache.stat().st_ino

    code, out, info = _search(capsys, data, tmp_path / "runs", "second")
    assert code == 3 and "preparing" not in out.out and (cache.stat().st_mtime_ns, cache.stat().st_ino) == stamp
    assert info["choices"]["image cache"]["value"]["how"] == "reused"
    assert _choice_lines(out.out)["image cache"] == f"decoded images {cache} (ready: the images under the data root have not " \
        "changed); --image-cache off decodes the image files every epoch"


def test_image_cache_off_reads_the_image_files_and_makes_no_cache(data, tmp_path, capsys):
    code, out, info = _search(capsys, data, tmp_path / "runs", "jpeg", "--image-cache", "off")
    assert code == 3 and not (data / "decoded").exists()
    assert info["base_config"]["image_cache"] == "off"
    assert _choice_lines(out.out)["image cache"] == "off (--image-cache off): the trials decode the image files every epoch"
    from ssot.data import build_task
    from ssot.data.benchmarks import ImageSampleDataset

    assert isinstance(build_task(SSOTConfig.from_dict(info["base_config"])).source, ImageSampleDataset)  # what its trials build


def test_too_little_disk_is_refused_in_one_line_before_anything_is_written(data, tmp_path, capsys, monkeypatch):
    real = shutil.disk_usage

    def small(path):
        usage = real(path)
        return usage._replace(free=10_000)  # less than the 41 images' 31 KiB

    monkeypatch.setattr(shutil, "disk_usage", small)
    code, out, _ = _search(capsys, data, tmp_path / "runs", "full")
    assert code == 2 and out.err.count("\n") == 1 and "Traceback" not in out.err
    assert out.err.startswith("error: Not enough free disk for the decoded-image cache of A2W: it needs 0.00 GiB at "
                              f"{data / 'decoded' / 'A2W-16.ssotimg'}, 0.00 GiB are free in {data}.")
    assert "set SSOT_CACHE_DIR to a folder with room, or pass --image-cache off" in out.err
    assert not (data / "decoded").exists() and not (tmp_path / "runs").exists()
    from ssot.train import main as train

    assert train(["--task", "A2W", "--data-root", str(data), "--no-pretrained", "--quiet"]) == 2
    assert capsys.readouterr().err.startswith("error: Not enough free disk") and not (data / "decoded").exists()


def test_two_searches_started_at_once_prepare_the_cache_once(data, tmp_path):
    """Each search is a process of its own; decoding is slowed down (50 ms an image) so that the
    second one comes while the first decodes, and every decoded image is logged."""
    log = tmp_path / "decoded.log"
    env = {**os.environ, "SSOT_TEST_DECODE_DELAY": "0.05", "SSOT_TEST_DECODE_LOG": str(log)}
    env.pop("SSOT_CACHE_DIR", None)
    procs = [subprocess.Popen([sys.executable, "-m", "tests.fixtures.fake_ray", "--task", "A2W", "--data-root", str(data),
                               "--storage-path", str(tmp_path / "runs"), "--name", name, *TINY], cwd=REPO, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for name in ("one", "two")]
    outs = [p.communicate(timeout=300) for p in procs]
    assert [p.returncode for p in procs] == [3, 3], [err[-2000:] for _, err in outs]
    decoders = log.read_text().split()
    assert len(decoders) == 41 and len(set(decoders)) == 1  # 41 images decoded, by one process
    cache = data / "decoded" / "A2W-16.ssotimg"
    hows = [json.loads((tmp_path / "runs" / name / "A2W" / "experiment.json").read_text())["choices"]["image cache"]["value"]
            ["how"] for name in ("one", "two")]
    other = [how for how in hows if how != "prepared"]
    assert len(other) == 1 and other[0] in ("prepared by another process", "reused")
    if other[0] == "prepared by another process":  # it came while the other decoded: it said that it waits
        assert any(f"waiting for another process that prepares {cache}" in out for out, _ in outs)
    open_cache(cache, "A2W", 16)  # one complete cache


def test_pack_fits_footprints_in_the_free_memory_with_a_margin():
    h200 = [packing.GPU(0, "NVIDIA H200", 141 * GIB, 140 * GIB)]
    k, why = packing.pack(h200, 9 * GIB, cpus=16, cpus_per_trial=1, trials=50)
    assert k == 4 and why.startswith("4 trials per GPU: a trial needs 9.0 GiB, 140.0 GiB free") and "at most 4 per GPU" in why
    gpu24 = [packing.GPU(0, "24 GiB", 24 * GIB, 23 * GIB)]
    assert packing.pack(gpu24, 9 * GIB, cpus=16, cpus_per_trial=1, trials=50)[0] == 2  # 2 x 9 <= 0.9 x 23 < 3 x 9
    assert packing.pack(gpu24, 11 * GIB, cpus=16, cpus_per_trial=1, trials=50)[0] == 1  # 2 x 11 > 20.7: one per GPU
    k, why = packing.pack([packing.GPU(0, "16 GiB", 16 * GIB, 15 * GIB)], 9 * GIB, cpus=16, cpus_per_trial=1, trials=50)
    assert k == 1 and why.startswith("one trial per GPU") and "limited by GPU memory" in why
    assert packing.pack(h200, 9 * GIB, cpus=2, cpus_per_trial=1, trials=50)[0] == 2  # CPUs: 2 trials of 1 CPU
    assert packing.pack(h200 * 2, 9 * GIB, cpus=16, cpus_per_trial=4, trials=50)[0] == 2  # 16 CPUs / (4 x 2 GPUs)
    assert packing.pack(h200 * 2, 9 * GIB, cpus=64, cpus_per_trial=1, trials=3)[0] == 2  # 3 trials over 2 GPUs
    busy = [*h200, packing.GPU(1, "NVIDIA H200", 141 * GIB, 12 * GIB)]  # the least free GPU counts
    assert packing.pack(busy, 9 * GIB, cpus=16, cpus_per_trial=1, trials=50)[0] == 1
    assert packing.gpus_per_trial(4) == 0.25 and packing.gpus_per_trial(3) == 0.3333 and 3 * packing.gpus_per_trial(3) <= 1


def test_nvidia_smi_is_read_for_the_visible_gpus():
    text = "0, NVIDIA H200, 143771, 143000\n1, NVIDIA H200, 143771, 20000\n"
    both = packing.parse_gpus(text)
    assert [(g.index, g.total, g.free) for g in both] == [(0, 143771 << 20, 143000 << 20), (1, 143771 << 20, 20000 << 20)]
    assert [g.index for g in packing.parse_gpus(text, "1")] == [1]
    assert packing.parse_gpus(text, "") == [] and packing.parse_gpus(text, "-1") == []
    assert len(packing.parse_gpus(text, "GPU-5c1a")) == 2  # UUIDs: not resolved, every GPU kept
    assert packing.parse_gpus("No devices were found\n") == []


def test_the_footprint_computed_from_the_config_follows_precision_batch_and_crop():
    a2w = SSOTConfig.for_task("A2W")
    fp32, bf16 = (packing.estimate_footprint(a2w.replace(precision=p), 31) for p in ("fp32", "bf16"))
    assert 8 * GIB < fp32 < 10 * GIB and bf16 < fp32  # 1 GiB + 1.2 (16 x 26 M parameters + 64 x 100 MiB)
    assert packing.estimate_footprint(a2w.replace(batch_size=64), 31) > fp32
    assert packing.estimate_footprint(a2w.replace(image_size=112), 31) < fp32
    from ssot.models import build_models

    f, eta, g = build_models(a2w.replace(pretrained=False), 31)
    assert packing.model_parameters(a2w, 31) == sum(p.numel() for m in (f, eta, g) for p in m.parameters())


def test_a_search_packs_image_trials_on_a_gpu_when_they_fit_and_keeps_the_other_rules(monkeypatch, tmp_path):
    from tune import choices

    h200 = [packing.GPU(0, "NVIDIA H200", 141 * GIB, 140 * GIB)]
    monkeypatch.setattr(packing, "local_gpus", lambda: (h200, "nvidia-smi"))
    image = SearchOptions(task="A2W", num_samples=50, base={"data_root": str(tmp_path), "image_cache": "off"})
    made = choices.choose(image, base_config(image), cpus_per_trial=1, num_cpus=16, probe=False)
    assert made.options.gpus_per_trial == 0.25 and made.options.mps
    packed = made.record()["packing"]
    assert packed["value"]["trials_per_gpu"] == 4 and packed["value"]["footprint"].startswith("computed from the config")
    assert packed["why"].startswith("4 trials per GPU: a trial needs 9.0 GiB") and "with MPS: --gpus-per-trial 0.25" in packed["why"]
    assert made.record()["channels_last"] == {"value": True, "why": "on: ResNet-50 and its inputs in channels_last on CUDA; "
                                              "--set channels_last=false turns it off"}
    off = SearchOptions(task="A2W", num_samples=50, base={"data_root": str(tmp_path), "image_cache": "off", "channels_last": False})
    assert choices.choose(off, base_config(off), cpus_per_trial=1, num_cpus=16, probe=False).record()["channels_last"]["why"] == \
        "off (--set channels_last=false)"
    for kept, why in ((SearchOptions(task="A2W", gpus_per_trial=1.0, base={"data_root": str(tmp_path), "image_cache": "off"}),
                       "one trial per GPU (--gpus-per-trial 1)"),
                      (SearchOptions(task="digits"), "one trial per GPU: trials of feature caches, populations and embedded"),
                      (SearchOptions(task="A2W", base={"data_root": str(tmp_path), "image_cache": "off"}),
                       "one GPU per trial where the cluster has GPUs: their memory is not known before joining it")):
        made = choices.choose(kept, base_config(kept), cpus_per_trial=1, address="auto" if kept.task == "A2W" and
                              kept.gpus_per_trial is None else None, probe=False)
        assert made.options.gpus_per_trial == kept.gpus_per_trial and made.record()["packing"]["why"].startswith(why)
    small = [packing.GPU(0, "16 GiB", 16 * GIB, 15 * GIB)]
    monkeypatch.setattr(packing, "local_gpus", lambda: (small, "nvidia-smi"))
    made = choices.choose(image, base_config(image), cpus_per_trial=1, num_cpus=16, probe=False)
    assert made.options.gpus_per_trial == 1.0 and made.record()["packing"]["why"].startswith("one trial per GPU")


def test_the_footprint_probe_trains_the_config_on_random_images(monkeypatch):
    """The probe's steps on the CPU, one step (on CUDA it reads the peak memory: the GPU variant below)."""
    monkeypatch.setattr(packing, "PROBE_STEPS", 1)
    config = SSOTConfig.for_task("A2W", data_root="/nowhere", device="cpu", batch_size=2, image_size=16, resize_size=16,
                                 eval_batch_size=4, bottleneck_dims=(8,))
    trainer = packing.probe_steps(config, 31)
    assert trainer.device.type == "cpu" and all(p.grad is not None for p in trainer.eta.parameters())


@pytest.mark.skipif(not __import__("torch").cuda.is_available(), reason="needs a CUDA GPU (the CPU variant is above)")
def test_the_footprint_probe_measures_the_peak_memory_on_cuda():
    config = SSOTConfig.for_task("A2W", data_root="/nowhere", batch_size=4, image_size=64, resize_size=64, eval_batch_size=8)
    measured, how = packing.measure_footprint(config, 31)
    assert measured is not None and how.startswith("measured"), how
    assert packing.CONTEXT_BYTES < measured < packing.estimate_footprint(config, 31) * 4


def test_a_trial_builds_its_task_from_the_prepared_cache_without_preparing_it_again(data):
    """What a Ray worker does with the base config of a search: ``auto`` resolves to the cache the
    driver prepared (the same file, not rebuilt)."""
    from ssot.data import build_task, image_cache
    from ssot.data.decoded_images import DecodedImages

    config = SSOTConfig.for_task("A2W", data_root=str(data), resize_size=16, image_size=12)
    prepared = image_cache.ensure(config)
    stamp = prepared.path.stat().st_mtime_ns
    task = build_task(config)
    assert isinstance(task.source, DecodedImages) and task.source.cache.path == default_path("A2W", data, 16) == prepared.path
    assert prepared.path.stat().st_mtime_ns == stamp and image_cache.ensure(config).how == "reused"
    write_image(data / "office31" / "webcam" / "images" / "mug" / "9.jpg", 99)  # a new image: the next one rebuilds
    assert image_cache.ensure(config).how == "rebuilt"
    assert Path(prepared.path).stat().st_mtime_ns != stamp


def test_the_precision_rule_gives_bf16_only_to_image_trials_on_gpus_and_a_user_setting_wins(monkeypatch, tmp_path):
    """Both outcomes of the measurement (tune.choices.PRECISION_RULE): bf16 for image trials on GPUs
    (the footprint then computed for bf16), fp32 otherwise, and a precision the user set kept."""
    from tune import choices

    h200 = [packing.GPU(0, "NVIDIA H200", 141 * GIB, 140 * GIB)]
    image = SearchOptions(task="A2W", num_samples=8, base={"data_root": str(tmp_path), "image_cache": "off"})
    monkeypatch.setattr(choices, "PRECISION_RULE", ("bf16", "not worse than fp32 (measured)"))
    monkeypatch.setattr(packing, "local_gpus", lambda: (h200, "nvidia-smi"))
    made = choices.choose(image, base_config(image), cpus_per_trial=1, num_cpus=16, probe=False)
    assert made.base.precision == "bf16" and made.record()["precision"] == {
        "value": "bf16", "why": "bf16 on the GPU: not worse than fp32 (measured); --set precision=fp32 turns it off"}
    bf16 = packing.estimate_footprint(made.base, 31) / GIB
    assert f"a trial needs {bf16:.1f} GiB" in made.record()["packing"]["why"]
    given = SearchOptions(task="A2W", base={"data_root": str(tmp_path), "image_cache": "off", "precision": "fp32"})
    assert choices.choose(given, base_config(given), cpus_per_trial=1, probe=False).base.precision == "fp32"
    digits = SearchOptions(task="digits")
    assert choices.choose(digits, base_config(digits), cpus_per_trial=1, probe=False).base.precision == "fp32"
    monkeypatch.setattr(packing, "local_gpus", lambda: ([], "nvidia-smi"))
    made = choices.choose(image, base_config(image), cpus_per_trial=1, probe=False)
    assert made.base.precision == "fp32" and "the trials run on CPUs" in made.record()["precision"]["why"]
    monkeypatch.setattr(choices, "PRECISION_RULE", ("fp32", "bf16 lost 1 point (measured)"))
    monkeypatch.setattr(packing, "local_gpus", lambda: (h200, "nvidia-smi"))
    made = choices.choose(image, base_config(image), cpus_per_trial=1, num_cpus=16, probe=False)
    assert made.base.precision == "fp32" and made.record()["precision"]["why"] == \
        "fp32, the default: bf16 lost 1 point (measured); --set precision=bf16 changes it"
