"""t-SNE feature maps of the source-only and adapted models of one saved run.

    python -m ssot.train --task digits --save-model model.pt --out run.json
    python tune/feature_maps.py model.pt --out tsne.npz          # features -> 2-d, seeded
    python analysis/paper_figures.py feature-map tsne.npz --out tsne.png

A fixed, seeded subsample (``--per-domain`` source and target samples) is passed through both
models (:func:`ssot.feature_maps.model_features`); each model's features are embedded separately
by scikit-learn's ``TSNE`` (``random_state=--seed``, PCA init). The ``.npz`` holds ``xy``,
``label``, ``domain`` (0 source, 1 target), ``model`` (index into ``models``), ``models`` and
``outlier_classes``; it is never overwritten. User errors print one line and exit with status 2.
"""
from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

if __package__ in (None, ""):  # run as a file: the one script idiom, see ssot/cli.py ("Scripts")
    sys.path[0] = str(Path(__file__).resolve().parents[1])

from ssot.errors import SSOTError, one_line  # noqa: E402


def embed(features: dict[str, np.ndarray], seed: int, perplexity: float = 30.0) -> tuple[np.ndarray, np.ndarray]:
    """Each model's features embedded in 2-d by t-SNE; returns stacked ``xy`` and the model index."""
    from sklearn.manifold import TSNE

    xy, model = [], []
    for i, feats in enumerate(features.values()):
        perp = min(perplexity, (len(feats) - 1) / 3)
        xy.append(TSNE(n_components=2, perplexity=perp, init="pca", random_state=seed).fit_transform(feats.astype(np.float64)))
        model.append(np.full(len(feats), i))
    return np.concatenate(xy), np.concatenate(model)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python tune/feature_maps.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("model", type=Path, help="a model file of python -m ssot.train --save-model")
    parser.add_argument("--out", type=Path, required=True, help="the embedding (.npz); never overwritten")
    parser.add_argument("--per-domain", type=int, default=500, help="source and target samples each (default 500)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the subsample and of t-SNE")
    args = parser.parse_args(argv)
    try:
        if args.out.exists():
            raise SSOTError(f"{args.out} already exists; choose another --out (files are never overwritten).")
        if args.out.suffix != ".npz":
            raise SSOTError(f"The '--out' argument must end in .npz. Got {args.out.name!r} instead.")
        if args.per_domain < 5:
            raise SSOTError(f"The '--per-domain' argument must be an int in [5, inf). Got {args.per_domain} instead.")
        from ssot.feature_maps import model_features

        data = model_features(args.model, args.per_domain, args.seed)
    except SSOTError as exc:
        print(f"error: {one_line(exc)}", file=sys.stderr)
        return 2
    xy, model = embed(data["features"], args.seed)
    n = len(data["label"])
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with open(args.out, "xb") as fh:
        np.savez_compressed(fh, xy=xy, label=np.tile(data["label"], len(data["features"])), domain=np.tile(data["domain"], len(data["features"])),
                            model=model, models=np.array(list(data["features"])), outlier_classes=np.array(data["outlier_classes"], dtype=int))
    print(f"wrote {args.out} ({n} points per model, models: {', '.join(data['features'])})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
