"""SSOT: Soft-Masked Semi-Dual Optimal Transport for Partial Domain Adaptation (PyTorch).

Public API::

    from ssot import SSOTConfig, Trainer, run
    record = run(SSOTConfig.for_task("digits", seed=1))

``Trainer`` and ``run`` are imported on first use (PEP 562), so ``import ssot`` (and reading a
config or a results file) does not load torch.
"""
from __future__ import annotations

from typing import Any

from ssot.config import SSOTConfig
from ssot.errors import ConfigError, DataError, DivergedError, SSOTError

__all__ = ["SSOTConfig", "Trainer", "run", "SSOTError", "ConfigError", "DataError", "DivergedError"]

_LAZY = {"Trainer": "ssot.trainer", "run": "ssot.trainer"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'ssot' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
