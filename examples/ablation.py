"""The paper's ablations (w/o m, w/o Mask, w/o Ent) over seeds, and "w/o Mask" with the mask's scale restored.

    python examples/ablation.py                      # digits (manual: Measured results, The paper's other analyses)
    python examples/ablation.py --task P2H
    python examples/ablation.py --task H2P

Runs ``tune/ablation.py --seeds 0 1 2`` (prints ``ablation.md``) and
``python -m ssot.train --no-use-mask --lambda-ot 0.03125 --seeds 0 1 2``: without the mask, the
cost loses the mask's 1/b_t scale (b_t = 32), which this lambda_OT restores.
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402


def body(example: common.Example) -> int:
    example.check_data()
    abl, rescaled = example.out / "ablation", example.out / "no_mask_rescaled.json"
    example.run("tune/ablation.py", "--task", example.task, *example.seeds(0, 1, 2), "--out", abl,
                *(["--epochs", "1", "--num-cpus", "2"] if example.smoke else []))
    example.run("ssot.train", "--task", example.task, "--no-use-mask", "--lambda-ot", "0.03125", *example.seeds(0, 1, 2),
                "--quiet", *example.train_flags(), *example.data_flags(), "--out", rescaled)
    example.show(abl / "ablation.md")
    if not example.dry:
        record = common.read_json(rescaled)
        if "summary" in record:
            print(f"SSOT w/o Mask, scale restored (lambda_OT = 1/32): {common.percent(record['summary']['target_acc'])}")
    return 0


if __name__ == "__main__":
    sys.exit(common.main(body, common.parser(__doc__).parse_args(), "ablation"))
