"""Loading a torch file safely: tensors and plain types only, refused in one line otherwise.

Every ``.pt`` file the project reads goes through :func:`load_dict`: a trial's checkpoint and the
shared pretrained model of a search (:mod:`tune.trial`), the model file of ``--save-model``
(:mod:`ssot.feature_maps`), a feature cache (:mod:`ssot.data.features`) and ResNet-50's ImageNet
weights (:mod:`ssot.models`). It calls ``torch.load(weights_only=True)``: PyTorch's restricted
unpickler builds tensors, containers and plain Python values and nothing else, so a file planted
in a shared folder can never run code here.

A file that does not load that way (planted, torn, not a torch file, a folder, missing) is
refused with a :class:`ssot.errors.SSOTError` (or the subclass the caller names) in one line
naming the file, what is wrong and the caller's fix. PyTorch's own message is never repeated:
it advises re-running ``torch.load`` with ``weights_only=False``, which is exactly what would
run a planted file's code, and to allowlist the file's globals. Only the name of the object the
file refers to (``GLOBAL posix.system``) and the kind of failure are kept. PyTorch's warnings
while loading (about pickle protocols) are silenced: the refusal is the one line.

The module sits in :mod:`ssot.data` because every layer that loads torch files imports it from
there: the data (feature caches), the method (models) and the search (checkpoints).
"""
from __future__ import annotations

import io
import os
import pickle
import re
import warnings
from pathlib import Path
from typing import Any

from ssot.errors import SSOTError

__all__ = ["load_dict", "refusal_reason"]

#: Words of PyTorch's advice that a refusal never repeats (lines holding them are dropped).
_ADVICE = ("weights_only", "weights only", "trusted source", "safe_globals", "documentation")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


#: How a file of ``torch.save`` starts: a zip archive (since PyTorch 1.6), or a pickle (the
#: legacy format).
_TORCH_HEADS = (b"PK\x03\x04", b"\x80")


def refusal_reason(exc: BaseException, head: bytes = b"\x80") -> str:
    """Why ``torch.load(weights_only=True)`` refused a file, in a few words, without PyTorch's
    advice to load it unsafely.

    An :class:`pickle.UnpicklingError` becomes ``"it refers to <name>, not only to tensors and
    plain types"`` (a planted file: the function or class it would call), ``"it is not a file of
    torch.save (...)"`` (a text file, a plain pickle) or ``"it holds objects other than tensors
    and plain types"``; another failure (a torn zip, an empty file) its type and the first line of
    its message that gives no advice. ``head``, the file's first bytes, tells a file that is no
    torch file at all (a text file: ``"it is not a file of torch.save"``).
    """
    if head and not head.startswith(_TORCH_HEADS):
        return "it is not a file of torch.save"
    text = _ANSI.sub("", str(exc))
    if isinstance(exc, pickle.UnpicklingError):
        named = re.search(r"GLOBAL ([\w.]+)", text)
        if named:
            return f"it refers to {named.group(1)}, not only to tensors and plain types"
        opcode = re.search(r"Unsupported operand (\d+)", text)
        if opcode:
            return f"it is not a file of torch.save (unsupported pickle opcode {opcode.group(1)})"
        return "it holds objects other than tensors and plain types"
    lines = [" ".join(line.split()) for line in text.splitlines()]
    kept = [line for line in lines if line and not any(word in line.lower() for word in _ADVICE)]
    return f"{type(exc).__name__}: {kept[0][:150]}" if kept else type(exc).__name__


def _head(source: str | os.PathLike[str] | bytes) -> bytes:
    """The first 4 bytes of a file (given as its path or its bytes); ``b""`` when unreadable."""
    if isinstance(source, bytes):
        return source[:4]
    try:
        with open(source, "rb") as fh:
            return fh.read(4)
    except OSError:
        return b""


def load_dict(source: str | os.PathLike[str] | bytes, what: str, fix: str, *, map_location: Any = "cpu",
              error: type[SSOTError] = SSOTError) -> dict[str, Any]:
    """The dict in a torch file, loaded with ``torch.load(weights_only=True)``.

    Parameters
    ----------
    source : a file's path, or its bytes (read from object storage).
    what : the file as the message names it, e.g. ``"Feature cache p2h.pt"``.
    fix : what to do about it, one sentence (e.g. ``"Delete it to recompute it."``).
    map_location : where the tensors go (``torch.load``'s).
    error : the :class:`ssot.errors.SSOTError` subclass raised.

    Raises
    ------
    error
        One line: ``"<what> does not exist" / "is a folder" / "cannot be loaded safely (<reason>)"
        / "holds a <type>, not a dict"``, then ``fix``.
    """
    if not isinstance(source, bytes):  # refused before torch loads
        path = Path(source)
        if path.is_dir():
            raise error(f"{what} is a folder, not a file. {fix}")
        if not path.exists():
            raise error(f"{what} does not exist. {fix}")
    import torch

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            state = torch.load(io.BytesIO(source) if isinstance(source, bytes) else source, map_location=map_location,
                               weights_only=True)
    except Exception as exc:  # noqa: BLE001 - UnpicklingError, RuntimeError (not a zip), EOFError, KeyError...
        raise error(f"{what} cannot be loaded safely as tensors and plain types ({refusal_reason(exc, _head(source))}). "
                    f"{fix}") from None
    if not isinstance(state, dict):
        raise error(f"{what} holds a {type(state).__name__}, not a dict of tensors. {fix}")
    return state
