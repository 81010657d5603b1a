"""`ssot/data/augment.py`: the batched crops, flips and normalisation against torchvision's transforms."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from torchvision import transforms as T
from torchvision.transforms import functional as TF

from ssot.data import augment


def _images(n: int = 4, size: int = 64, seed: int = 0) -> torch.Tensor:
    """``(n, size, size, 3)`` uint8 images with both smooth regions and pixel noise."""
    rng = np.random.default_rng(seed)
    coarse = torch.tensor(rng.integers(0, 256, (n, 3, 6, 6)), dtype=torch.float32)
    smooth = torch.nn.functional.interpolate(coarse, size=(size, size), mode="bicubic", align_corners=False)
    noise = torch.tensor(rng.normal(0, 12, (n, 3, size, size)), dtype=torch.float32)
    return (smooth + noise).clamp(0, 255).round().to(torch.uint8).permute(0, 2, 3, 1).contiguous()


def _normalized(chw_float255: torch.Tensor) -> torch.Tensor:
    return TF.normalize(chw_float255 / 255, augment.IMAGENET_MEAN, augment.IMAGENET_STD)


@pytest.mark.parametrize("shape", [(64, 64), (48, 80)])
def test_boxes_and_flips_are_the_draws_torchvision_makes_from_the_same_generator_state(shape):
    height, width = shape
    torch.manual_seed(11)
    expected = []
    crop, flip = T.RandomResizedCrop(32), T.RandomHorizontalFlip()
    image = torch.zeros(3, height, width)
    for _ in range(300):
        expected.append((crop.get_params(image, list(crop.scale), list(crop.ratio)), bool(torch.rand(1) < flip.p)))
    boxes, flips = augment.draw_crops(300, height, width, torch.Generator().manual_seed(11))
    assert [(tuple(b), f) for b, f in zip(boxes.tolist(), flips.tolist())] == expected
    assert 0.3 < flips.float().mean() < 0.7 and len(set(map(tuple, boxes.tolist()))) > 250


def test_the_central_fallback_after_ten_failed_attempts_is_torchvisions():
    torch.manual_seed(5)
    image = torch.zeros(3, 30, 90)  # wide: the fallback clips to the largest ratio
    expected = T.RandomResizedCrop.get_params(image, [1.5, 2.0], [3 / 4, 4 / 3])  # areas > the image: all 10 fail
    got = augment.crop_box(30, 90, torch.Generator().manual_seed(5), scale=(1.5, 2.0))
    assert got == expected == (0, 25, 30, 40)


@pytest.mark.parametrize("box", [(0, 0, 64, 64), (5, 9, 20, 31), (30, 2, 34, 60), (10, 40, 50, 24), (0, 0, 1, 1)])
def test_a_resized_crop_equals_torchvisions_resized_crop_and_flip(box):
    images = _images()
    size = 40  # boxes smaller than 40 are upsampled (torchvision's antialias changes nothing), larger ones shrunk
    flips = torch.tensor([False, True, False, True])
    got = augment.resized_crops(images, torch.tensor([box] * 4), flips, size)
    for k, image in enumerate(images.permute(0, 3, 1, 2).float()):
        ref = TF.resized_crop(image, *box, [size, size], antialias=False)  # float input: no rounding to uint8
        ref = _normalized(TF.hflip(ref) if flips[k] else ref)
        torch.testing.assert_close(got[k], ref, atol=2e-5, rtol=0)
        if max(box[2:]) <= size:  # upsampling: the same as torchvision's default (antialiased) resize too
            torch.testing.assert_close(got[k], _normalized(TF.hflip(TF.resized_crop(image, *box, [size, size])) if flips[k]
                                                           else TF.resized_crop(image, *box, [size, size])), atol=2e-5, rtol=0)


def test_the_training_batch_is_torchvisions_pipeline_on_the_same_random_numbers():
    images = _images(6, 64, seed=3)
    got = augment.train_batch(images, 56, "default", torch.Generator().manual_seed(7))
    torch.manual_seed(7)
    pipeline = T.Compose([T.RandomResizedCrop(56, antialias=False), T.RandomHorizontalFlip()])
    ref = torch.stack([_normalized(pipeline(image)) for image in images.permute(0, 3, 1, 2).float()])
    torch.testing.assert_close(got, ref, atol=2e-5, rtol=0)


def test_the_centre_crop_and_the_paper_transform_are_torchvisions_centre_crop_exactly():
    images = _images(3, 64)
    ref = torch.stack([T.Compose([T.CenterCrop(48), T.ConvertImageDtype(torch.float32),
                                  T.Normalize(augment.IMAGENET_MEAN, augment.IMAGENET_STD)])(image)
                       for image in images.permute(0, 3, 1, 2)])
    assert torch.equal(augment.eval_batch(images, 48), ref)
    assert torch.equal(augment.train_batch(images, 48, "paper", torch.Generator().manual_seed(0)), ref)
