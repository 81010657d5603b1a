"""The three networks of SSOT: feature extractor ``f``, classifier ``eta``, potential ``g``.

``f`` = backbone + bottleneck. Backbones:

- ``resnet50``: torchvision's ResNet-50 without its fully-connected layer (2048-d output),
  ImageNet weights read from a local file or torchvision's cache, never downloaded;
- ``digits_cnn``: a two-block CNN for the embedded 16x16 digits task (512-d output);
- ``features``: identity: the inputs already are backbone features (a feature cache).

The bottleneck is the paper's stack of fully-connected layers (2048 -> 1024 -> 512), each followed
by a ReLU. ``eta`` is one linear layer (softmax applied by the caller), ``g`` is
``Linear(d, width) -> ReLU -> Linear(width, 1)``.
"""
from __future__ import annotations

from pathlib import Path

import torch
from torch import Tensor, nn

from ssot.config import SSOTConfig
from ssot.errors import ConfigError

#: torchvision's file names for the ImageNet ResNet-50 weights (V2, then V1).
RESNET50_FILES = ("resnet50-11ad3fa6.pth", "resnet50-0676ba61.pth")
RESNET50_URL = "https://download.pytorch.org/models/resnet50-11ad3fa6.pth"


class DigitsCNN(nn.Module):
    """Small CNN for 1x16x16 inputs: two conv-ReLU-maxpool blocks, 512-d output."""

    out_dim = 512

    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten(),
        )

    def forward(self, x: Tensor) -> Tensor:
        return self.net(x)


def find_resnet50_weights(explicit: str | None) -> Path:
    """Path of the ImageNet ResNet-50 weights: ``explicit``, else torchvision's cache.

    Raises :class:`ConfigError` naming every place looked at and where to get the file.
    """
    if explicit:
        path = Path(explicit).expanduser()
        if not path.is_file():
            raise ConfigError(f"The 'pretrained_path' file {path} does not exist. Download {RESNET50_URL} and pass its path.")
        return path
    cache = Path(torch.hub.get_dir()) / "checkpoints"
    for name in RESNET50_FILES:
        if (cache / name).is_file():
            return cache / name
    raise ConfigError(
        f"ImageNet ResNet-50 weights not found in {cache} (looked for {' or '.join(RESNET50_FILES)}). "
        f"Download {RESNET50_URL} into that folder (or TORCH_HOME), pass --pretrained-path FILE, or use --no-pretrained."
    )


def build_backbone(config: SSOTConfig, input_dim: int | None = None) -> tuple[nn.Module, int]:
    """The backbone named by ``config.backbone`` and its output dimension."""
    if config.backbone == "digits_cnn":
        return DigitsCNN(), DigitsCNN.out_dim
    if config.backbone == "features":
        if input_dim is None:
            raise ConfigError("The 'features' backbone needs the feature dimension of the cache.")
        return nn.Identity(), input_dim
    from torchvision.models import resnet50

    net = resnet50(weights=None)
    if config.pretrained:
        path = find_resnet50_weights(config.pretrained_path)
        from ssot.data.safe_load import load_dict

        fix = f"Download {RESNET50_URL} again, or pass --pretrained-path FILE (a state dict of torchvision's resnet50)."
        state = load_dict(path, f"ImageNet ResNet-50 weights {path}", fix, error=ConfigError)
        try:
            net.load_state_dict(state)
        except RuntimeError as exc:  # another network's weights: missing or unexpected keys, other shapes
            first = " ".join(str(exc).split())[:160]
            raise ConfigError(f"ImageNet ResNet-50 weights {path} do not fit torchvision's resnet50 ({first}). {fix}") from None
    net.fc = nn.Identity()
    return net, 2048


class FeatureExtractor(nn.Module):
    """``f``: backbone followed by the bottleneck (Linear + ReLU per layer)."""

    def __init__(self, backbone: nn.Module, backbone_dim: int, bottleneck_dims: tuple[int, ...]):
        super().__init__()
        self.backbone = backbone
        layers: list[nn.Module] = []
        d = backbone_dim
        for h in bottleneck_dims:
            layers += [nn.Linear(d, h), nn.ReLU()]
            d = h
        self.bottleneck = nn.Sequential(*layers)
        self.out_dim = d

    def forward(self, x: Tensor) -> Tensor:
        return self.bottleneck(self.backbone(x))


class PotentialNet(nn.Module):
    """``g``: the Kantorovich potential, ``Linear(d, width) -> ReLU -> Linear(width, 1)``."""

    def __init__(self, in_dim: int, width: int):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(in_dim, width), nn.ReLU(), nn.Linear(width, 1))

    def forward(self, f: Tensor) -> Tensor:
        return self.net(f).squeeze(-1)


def build_models(config: SSOTConfig, num_classes: int, input_dim: int | None = None) -> tuple[FeatureExtractor, nn.Linear, PotentialNet]:
    """``(f, eta, g)`` for ``config``; ``input_dim`` is the feature size for the ``features`` backbone."""
    backbone, dim = build_backbone(config, input_dim)
    f = FeatureExtractor(backbone, dim, config.bottleneck_dims)
    eta = nn.Linear(f.out_dim, num_classes)
    g = PotentialNet(f.out_dim, config.potential_width)
    return f, eta, g

