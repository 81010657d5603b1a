"""The class weights SSOT estimates against the true target class proportions, per epoch (a figure).

    python examples/class_weights.py                 # digits (manual: Measured results, The paper's other analyses)
    python examples/class_weights.py --task P2H

Runs ``python -m ssot.train --out run.json`` (the record holds the estimated proportions
``p_s * m`` of every epoch and the true target frequencies, read by analysis only) and
``analysis/paper_figures.py class-weights``; prints the mass left on the outlier classes.
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402


def body(example: common.Example) -> int:
    example.check_data()
    run = example.out / "run.json"
    example.run("ssot.train", "--task", example.task, "--seed", "0", "--quiet", *example.train_flags(),
                *example.data_flags(), "--out", run)
    example.run("analysis/paper_figures.py", "class-weights", run, "--out",
                example.out / f"class_weights_{example.task.lower()}.png")
    if not example.dry:
        record = common.read_json(run)
        masses = [e["outlier_mass"] for e in record["epochs"]]
        print(f"{example.task}, seed 0: mass on the outlier classes {record['source_outlier_share']:.3f} in the source, "
              f"{masses[0]:.3f} after the first epoch, {masses[-1]:.3f} at the last")
    return 0


if __name__ == "__main__":
    sys.exit(common.main(body, common.parser(__doc__).parse_args(), "class_weights"))
