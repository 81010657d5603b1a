"""t-SNE of source and target features, before and after adaptation (a figure).

    python examples/feature_maps.py                  # digits (manual: Measured results, The paper's other analyses)
    python examples/feature_maps.py --task P2H

Runs ``python -m ssot.train --save-model`` (the source-only and the adapted weights),
``python -m ssot.feature_maps`` (500 source + up to 500 target samples, seeded t-SNE) and
``analysis/paper_figures.py feature-map``.
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402


def body(example: common.Example) -> int:
    example.check_data()
    model, tsne = example.out / "model.pt", example.out / "tsne.npz"
    example.run("ssot.train", "--task", example.task, "--seed", "0", "--quiet", *example.train_flags(),
                *example.data_flags(), "--out", example.out / "run.json", "--save-model", model)
    example.run("ssot.feature_maps", model, "--out", tsne, *(["--per-domain", "60"] if example.smoke else []))
    example.run("analysis/paper_figures.py", "feature-map", tsne, "--out", example.out / f"tsne_{example.task.lower()}.png")
    return 0


if __name__ == "__main__":
    sys.exit(common.main(body, common.parser(__doc__).parse_args(), "feature_maps"))
