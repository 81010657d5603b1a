"""SSOT: Soft-Masked Semi-Dual Optimal Transport for Partial Domain Adaptation (PyTorch).

Public API::

    from ssot import SSOTConfig, Trainer, run
    record = run(SSOTConfig.for_task("digits", seed=1))
"""
from ssot.config import SSOTConfig
from ssot.errors import ConfigError, DataError, DivergedError, SSOTError
from ssot.trainer import Trainer, run

__all__ = ["SSOTConfig", "Trainer", "run", "SSOTError", "ConfigError", "DataError", "DivergedError"]
