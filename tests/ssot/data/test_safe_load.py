"""`ssot/data/safe_load.py`: every torch file is loaded as tensors and plain types, refused in one
line without PyTorch's advice to load it unsafely."""
from __future__ import annotations

import io
import os
import pickle

import pytest
import torch

from ssot.data.safe_load import load_dict
from ssot.errors import DataError, SSOTError


class _Planted:
    """An object whose unpickling would create ``marker`` (what a planted file could do)."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


def _planted_bytes(marker) -> bytes:
    buffer = io.BytesIO()
    torch.save({"f": _Planted(marker), "sys": os.system}, buffer)
    return buffer.getvalue()


def _assert_no_unsafe_advice(message: str) -> None:
    assert "\n" not in message and "\x1b" not in message
    for advice in ("weights_only", "Weights only", "False", "safe_globals", "trust"):
        assert advice not in message, message


def test_a_planted_file_is_refused_in_one_line_without_torchs_advice(tmp_path, recwarn):
    marker = tmp_path / "code-ran"
    planted = tmp_path / "model.pt"
    planted.write_bytes(_planted_bytes(marker))
    for source in (planted, planted.read_bytes()):
        with pytest.raises(DataError) as info:
            load_dict(source, "The file X", "Delete it.", error=DataError)
        message = str(info.value)
        _assert_no_unsafe_advice(message)
        assert message.startswith("The file X cannot be loaded safely as tensors and plain types (it refers to ")
        assert message.endswith(", not only to tensors and plain types). Delete it.")
    assert not marker.exists()
    assert not [w for w in recwarn if "torch" in str(w.filename)]  # PyTorch's warnings are not shown either


def test_what_is_not_a_torch_file_is_named_in_one_line(tmp_path):
    text = tmp_path / "notes.txt"
    text.write_text("hello world")
    empty = tmp_path / "empty.pt"
    empty.write_bytes(b"")
    protocol_4 = tmp_path / "plain.pkl"
    protocol_4.write_bytes(pickle.dumps({"a": 1}, protocol=4))
    listed = tmp_path / "list.pt"
    torch.save([torch.zeros(1)], listed)
    cases = {text: "cannot be loaded safely as tensors and plain types (it is not a file of torch.save). Fix it.",
             empty: "(EOFError)",
             protocol_4: "(it is not a file of torch.save (unsupported pickle opcode 149))",
             listed: "holds a list, not a dict of tensors", tmp_path: "is a folder, not a file",
             tmp_path / "missing.pt": "does not exist"}
    for path, message in cases.items():
        with pytest.raises(SSOTError) as info:
            load_dict(path, f"The file {path}", "Fix it.")
        assert message in str(info.value) and str(info.value).endswith("Fix it.")
        _assert_no_unsafe_advice(str(info.value))
    state = {"w": torch.arange(3), "meta": {"name": "x", "n": [1, 2.5, None]}}
    buffer = io.BytesIO()
    torch.save(state, buffer)
    loaded = load_dict(buffer.getvalue(), "a state", "")
    assert torch.equal(loaded["w"], state["w"]) and loaded["meta"] == state["meta"]


def test_every_safe_load_of_the_project_refuses_without_the_advice(tmp_path, capsys):
    """The checkpoints and shared pretrained models of a search, a --save-model file, a feature
    cache, ImageNet weights: the same one-line refusal (the second audit found PyTorch's advice
    to re-run with weights_only=False in the search's refusal, and a traceback in ssot-feature-maps)."""
    from ssot.config import SSOTConfig
    from ssot.data.features import read_feature_cache
    from ssot.feature_maps import main as feature_maps
    from ssot.models import build_backbone
    from tune.trial import load_state

    marker = tmp_path / "code-ran"
    planted = tmp_path / "planted.pt"
    planted.write_bytes(_planted_bytes(marker))
    with pytest.raises(SSOTError) as info:
        load_state(planted.read_bytes(), "the trial's checkpoint X")
    _assert_no_unsafe_advice(str(info.value))
    assert "the trial's checkpoint X cannot be loaded safely" in str(info.value) and "delete it to recompute it" in str(info.value)
    with pytest.raises(DataError) as info:
        read_feature_cache(planted)
    _assert_no_unsafe_advice(str(info.value))
    with pytest.raises(SSOTError) as info:
        build_backbone(SSOTConfig.for_task("A2W", pretrained_path=str(planted)))
    _assert_no_unsafe_advice(str(info.value))
    assert f"ImageNet ResNet-50 weights {planted} cannot be loaded safely" in str(info.value)
    assert feature_maps([str(planted), "--out", str(tmp_path / "t.npz")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: The model file {planted} cannot be loaded safely") and err.count("\n") == 1
    _assert_no_unsafe_advice(err.strip())
    assert not marker.exists() and not (tmp_path / "t.npz").exists()
