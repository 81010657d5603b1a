"""SSOT's default config against source only over seeds, beside a reference on the target domain.

    python examples/embedded_default.py                  # digits (manual: Measured results, Embedded task)
    python examples/embedded_default.py --task P2H       # printed -> handwritten (manual: Printed <-> handwritten)
    python examples/embedded_default.py --task S2P       # a task of embedded3 (manual: The six embedded3 tasks)
    python examples/embedded_default.py --task P2I --data-root DIR   # a paper task (no reference row)

Runs ``python -m ssot.train --seeds 0 1 2`` with the task's defaults (its record holds the
source-only accuracy of each seed), then the reference: on a task X2Y of the printed, handwritten
and shifted digits the target-supervised run Y2Y with ``--epochs 0`` (H2H for P2H,
:func:`ssot.data.registry.reference_task`); on digits the source-only model of seed 0 on the *unshifted*
held-out target (the library's ``build_digits_task(shifted=False)``). Prints the table.
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import common  # noqa: E402


def in_domain_reference(example: common.Example) -> float:
    """Seed 0's source-only model on the unshifted held-out digits (the shift's cost)."""
    from ssot.config import SSOTConfig
    from ssot.data.digits import build_digits_task
    from ssot.trainer import Trainer

    overrides = {"pretrain_epochs": 1} if example.smoke else {}
    trainer = Trainer(SSOTConfig.for_task("digits", seed=0, **overrides), build_digits_task(), progress=False)
    trainer.pretrain()
    probs, labels = trainer.predict(build_digits_task(shifted=False).target_eval)
    return float((probs.argmax(1) == labels).float().mean())


def body(example: common.Example) -> int:
    from ssot.data.registry import reference_task

    example.check_data()
    ssot = example.out / "ssot.json"
    example.run("ssot.train", "--task", example.task, *example.seeds(0, 1, 2), "--quiet", *example.train_flags(),
                *example.data_flags(), "--out", ssot)
    reference, ceiling = None, reference_task(example.task) if example.task in common.EMBEDDED_TASKS else None
    if ceiling:
        ref = example.out / "reference.json"
        example.run("ssot.train", "--task", ceiling, *example.seeds(0, 1, 2), "--quiet",
                    *example.train_flags(), "--epochs", "0", "--out", ref)
        if not example.dry:
            reference = f"{common.percent(common.read_json(ref)['summary']['source_only_target_acc'])} ({ceiling})"
    elif example.task == "digits" and not example.dry:
        reference = f"{100 * in_domain_reference(example):.1f} % (source-only model, unshifted target, seed 0)"
    if example.dry:
        return 0
    record = common.read_json(ssot)
    summary = record.get("summary") or {"target_acc": None, "source_only_target_acc": None}
    if "summary" not in record:  # one seed (--smoke-test): a single run record
        from ssot.results.record import summarize

        summary = summarize([record])
    print(f"\n{example.task}: target accuracy at the last epoch, seeds {summary['seeds']}\n")
    print("| | target accuracy |\n| --- | --- |")
    if reference:
        print(f"| reference | {reference} |")
    print(f"| source only | {common.percent(summary['source_only_target_acc'])} |")
    print(f"| SSOT, default config | {common.percent(summary['target_acc'])} |")
    return 0


if __name__ == "__main__":
    sys.exit(common.main(body, common.parser(__doc__, tasks=common.EMBEDDED_TASKS).parse_args(), "embedded_default"))
