"""Feature maps: saved models (``python -m ssot.train --save-model``), their features, and t-SNE.

    python -m ssot.train --task digits --save-model model.pt --out run.json
    python -m ssot.feature_maps model.pt --out tsne.npz          # or: ssot-feature-maps; seeded
    python analysis/paper_figures.py feature-map tsne.npz --out tsne.png

The model file holds the run's config and the ``f``/``eta`` weights of the source-only model
(after pretraining) and of the adapted model (after the last epoch). :func:`model_features`
computes the features of a fixed, seeded subsample (``--per-domain`` source and target samples)
with either model; :func:`embed` embeds each model's features separately with scikit-learn's
``TSNE`` (``random_state=--seed``, PCA init). The ``.npz`` holds ``xy``, ``label``, ``domain`` (0
source, 1 target), ``model`` (index into ``models``), ``models`` and ``outlier_classes``; it is
never overwritten. Exit statuses: :mod:`ssot.cli`; bad input (a flag, an ``--out`` that exists
or is the model file, a missing model file) is refused before torch is imported.
"""
from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ssot import cli
from ssot.config import SSOTConfig
from ssot.data.base import num_samples
from ssot.data.safe_load import load_dict
from ssot.errors import SSOTError
from ssot.results import outputs

#: The two models a model file holds, in drawing order.
MODEL_NAMES = ("source-only", "adapted")


def save_models(path: str | Path, config: SSOTConfig, source_only: dict[str, Any], adapted: dict[str, Any]) -> None:
    """Write ``{"config", "source-only": {"f", "eta"}, "adapted": {"f", "eta"}}``; never overwrites."""
    import torch

    path = Path(path)
    if path.exists():
        raise SSOTError(f"{path} already exists; choose another --save-model path (files are never overwritten).")
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"config": config.to_dict(), "source-only": source_only, "adapted": adapted}, path)


def load_models(path: str | Path) -> dict[str, Any]:
    """Read a model file written by :func:`save_models`, safely (:func:`ssot.data.safe_load.load_dict`:
    tensors and plain types only); one line naming the problem otherwise."""
    fix = "Pass a model file written by `python -m ssot.train --save-model FILE`."
    state = load_dict(path, f"The model file {path}", fix)
    if not {"config", *MODEL_NAMES} <= set(state):
        raise SSOTError(f"{path} is not a model file of python -m ssot.train --save-model (it lacks "
                        f"{', '.join(sorted({'config', *MODEL_NAMES} - set(state)))}). {fix}")
    for name in MODEL_NAMES:
        part = state[name]
        if not isinstance(part, dict) or not all(isinstance(part.get(k), dict) for k in ("f", "eta")):
            raise SSOTError(f"{path} is not a model file of python -m ssot.train --save-model (its {name!r} model lacks "
                            f"the 'f' and 'eta' weights). {fix}")
    return state


def sample_indices(n: int, k: int, seed: int) -> list[int]:
    """``k`` of ``range(n)`` (all when ``k >= n``), the same for a given seed."""
    import torch

    gen = torch.Generator().manual_seed(seed)
    return sorted(torch.randperm(n, generator=gen)[: min(n, k)].tolist())


def model_features(path: str | Path, per_domain: int = 500, seed: int = 0) -> dict[str, Any]:
    """Features of ``per_domain`` seeded source and target samples under both saved models.

    Returns
    -------
    dict with ``features`` (model name -> (n, d) array), ``label``, ``domain`` (0 source, 1
    target), ``outlier_classes``, ``class_names`` and ``config``.
    """
    state = load_models(path)  # a missing or unsafe file is refused before torch loads (load_dict)
    import torch

    from ssot.trainer import Trainer, dataset_labels

    config = SSOTConfig.from_dict(state["config"], source=f"model file {path}").replace(device="cpu", pretrain_epochs=0)
    trainer = Trainer(config)
    src = torch.utils.data.Subset(trainer.task.source_eval, sample_indices(num_samples(trainer.task.source_eval), per_domain, seed))
    tgt = torch.utils.data.Subset(trainer.task.target_eval, sample_indices(num_samples(trainer.task.target_eval), per_domain, seed + 1))
    labels = torch.cat([dataset_labels(src), dataset_labels(tgt)])
    domain = torch.cat([torch.zeros(len(src), dtype=torch.long), torch.ones(len(tgt), dtype=torch.long)])
    feats = {}
    for name in MODEL_NAMES:
        try:
            trainer.f.load_state_dict(state[name]["f"]); trainer.eta.load_state_dict(state[name]["eta"])
        except RuntimeError as exc:  # missing or unexpected weights, other shapes
            first = " ".join(str(exc).split())[:160]
            raise SSOTError(f"The {name} model of {path} does not fit the network of its config ({first}). Pass a model "
                            "file written by `python -m ssot.train --save-model FILE`.") from None
        trainer.f.eval()
        with torch.no_grad():
            feats[name] = torch.cat([torch.cat([trainer.f(x) for x, _ in trainer.eval_batches(ds)]) for ds in (src, tgt)]).numpy()
    return {"features": feats, "label": labels.numpy(), "domain": domain.numpy(), "outlier_classes": list(trainer.task.outlier_classes),
            "class_names": list(trainer.task.class_names), "config": config.to_dict()}


def embed(features: dict[str, np.ndarray], seed: int, perplexity: float = 30.0) -> tuple[np.ndarray, np.ndarray]:
    """Each model's features embedded in 2-d by t-SNE; returns stacked ``xy`` and the model index."""
    from sklearn.manifold import TSNE

    xy, model = [], []
    for i, feats in enumerate(features.values()):
        perp = min(perplexity, (len(feats) - 1) / 3)
        xy.append(TSNE(n_components=2, perplexity=perp, init="pca", random_state=seed).fit_transform(feats.astype(np.float64)))
        model.append(np.full(len(feats), i))
    return np.concatenate(xy), np.concatenate(model)


def build_parser() -> argparse.ArgumentParser:
    parser = cli.Parser(prog="python -m ssot.feature_maps", description=__doc__.split("\n\n")[0])
    parser.add_argument("model", type=Path, help="a model file of python -m ssot.train --save-model")
    parser.add_argument("--out", type=Path, required=True, metavar="PATH", help="the embedding (.npz); never overwritten")
    parser.add_argument("--per-domain", type=int, default=500, metavar="N", help="source and target samples each")
    cli.add_config_flag(parser, "seed", "here: the subsample's and t-SNE's", default=0)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Command line entry point (``ssot-feature-maps``); the exit status of :mod:`ssot.cli`."""
    return cli.command(build_parser(), feature_maps, argv)


def feature_maps(args: argparse.Namespace) -> int:
    """The command's work: check the output, compute both models' features, embed them, write the file."""
    if args.out.suffix != ".npz":
        raise SSOTError(f"The '--out' argument must end in .npz. Got {args.out.name!r} instead.")
    outputs.check_output(args.out, "--out", folder=False, inputs=[args.model])
    if args.per_domain < 5:
        raise SSOTError(f"The '--per-domain' argument must be an int in [5, inf). Got {args.per_domain} instead.")
    data = model_features(args.model, args.per_domain, args.seed)
    xy, model = embed(data["features"], args.seed)
    n, k = len(data["label"]), len(data["features"])
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with open(args.out, "xb") as fh:
        np.savez_compressed(fh, xy=xy, label=np.tile(data["label"], k), domain=np.tile(data["domain"], k), model=model,
                            models=np.array(list(data["features"])), outlier_classes=np.array(data["outlier_classes"], dtype=int))
    print(f"wrote {args.out} ({n} points per model, models: {', '.join(data['features'])})")
    return cli.EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
