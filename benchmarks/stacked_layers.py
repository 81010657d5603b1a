"""Stacked layers three ways, side by side in one run: torch.func, batched GEMMs, ssot.stacked.linear (by hand, not pytest).

    python benchmarks/stacked_layers.py                      # CPU, 1 thread, P = 16 and 64
    python benchmarks/stacked_layers.py --device cuda --sizes 16 64 256

The layers of a population on the P2H cache: a bottleneck ``Linear(512, 256) -> ReLU`` and a
classifier ``Linear(256, 10)`` on a batch of 64 shared vectors, and a potential ``Linear(256, 256)
-> ReLU -> Linear(256, 1)`` on each member's 32 target features; forward and backward of the sum
of the outputs, for P members:

- ``torch.func``: the modules' parameters stacked by ``torch.func.stack_module_state`` and
  evaluated by ``vmap(functional_call(...))``;
- ``batched GEMMs``: one ``addmm`` of the stacked weights on the shared inputs, ``baddbmm`` on the
  per-member inputs (what :func:`ssot.stacked.linear` does on a GPU);
- ``ssot.stacked.linear``: the function itself on this device (on a CPU the per-member inputs go
  through each member's ``F.linear``, which gives each member the bits of its own run).

The three are timed alternately (``--rounds``, median per call) and checked to agree (largest
difference printed). The faster of ``torch.func`` and the batched GEMMs is what ssot/stacked.py
keeps; the ratios are the decision's evidence (docs/screening.md).
"""
from __future__ import annotations

import copy
import statistics
import sys
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: import the project and this folder's helpers
    sys.path[:0] = [str(Path(__file__).resolve().parents[1]), str(Path(__file__).resolve().parent)]

from _shared import load, machine  # noqa: E402


def variants(P: int, device: str) -> tuple[dict[str, Any], Any]:
    """The three implementations of one forward and backward, and the shared inputs' batch."""
    import torch
    from torch import nn
    from torch.func import functional_call, stack_module_state, vmap

    from ssot import stacked

    class Head(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.hidden, self.out = nn.Linear(512, 256), nn.Linear(256, 10)

        def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            h = torch.relu(self.hidden(x))
            return h, self.out(h)

    class Potential(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a, self.b = nn.Linear(256, 256), nn.Linear(256, 1)

        def forward(self, f: torch.Tensor) -> torch.Tensor:
            return self.b(torch.relu(self.a(f))).squeeze(-1)

    torch.manual_seed(0)
    heads, pots = [Head().to(device) for _ in range(P)], [Potential().to(device) for _ in range(P)]
    head_params, _ = stack_module_state(heads)
    pot_params, _ = stack_module_state(pots)
    head_base, pot_base = copy.deepcopy(heads[0]).to("meta"), copy.deepcopy(pots[0]).to("meta")
    x = torch.randn(64, 512, device=device)
    mine_h = [head_params[k].detach().clone().requires_grad_(True) for k in ("hidden.weight", "hidden.bias", "out.weight", "out.bias")]
    mine_p = [pot_params[k].detach().clone().requires_grad_(True) for k in ("a.weight", "a.bias", "b.weight", "b.bias")]

    def func() -> tuple[torch.Tensor, ...]:
        feats, logits = vmap(lambda p, v: functional_call(head_base, p, (v,)), in_dims=(0, None))(head_params, x)
        g = vmap(lambda p, f: functional_call(pot_base, p, (f,)))(pot_params, feats[:, 32:])
        (logits.sum() + g.sum()).backward()
        return feats, logits, g

    def with_linear(linear: Any) -> Any:
        def run() -> tuple[torch.Tensor, ...]:
            feats = torch.relu(linear(x, mine_h[0], mine_h[1]))
            logits = linear(feats, mine_h[2], mine_h[3])
            g = linear(torch.relu(linear(feats[:, 32:], mine_p[0], mine_p[1])), mine_p[2], mine_p[3]).squeeze(-1)
            (logits.sum() + g.sum()).backward()
            return feats, logits, g
        return run

    def batched(h: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        Pn, out, inp = w.shape
        if h.dim() == 2:
            return torch.addmm(b.reshape(-1), h, w.reshape(Pn * out, inp).t()).view(h.shape[0], Pn, out).transpose(0, 1)
        return torch.baddbmm(b[:, None, :], h, w.transpose(1, 2))

    return {"torch.func": func, "batched GEMMs": with_linear(batched), "ssot.stacked.linear": with_linear(stacked.linear)}, x


def main(argv: list[str] | None = None) -> int:
    from ssot import cli

    parser = cli.Parser(prog="python benchmarks/stacked_layers.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--sizes", type=int, nargs="+", default=[16, 64], help="members P (default 16 64)")
    parser.add_argument("--rounds", type=int, default=21, help="alternated rounds, the first a warm-up (default 21)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads on a CPU (default 1: a population worker's)")
    args = parser.parse_args(argv)
    import torch

    if args.device == "cuda" and not torch.cuda.is_available():
        print("--device cuda: no CUDA GPU here; nothing measured")
        return 0
    torch.set_num_threads(args.threads)
    sync = torch.cuda.synchronize if args.device == "cuda" else (lambda: None)
    print(machine(args.device))
    for P in args.sizes:
        runs, _ = variants(P, args.device)
        outputs = {label: fn() for label, fn in runs.items()}
        gap = max(float((a - b).detach().abs().max()) for other in list(outputs.values())[1:] for a, b in zip(outputs["torch.func"], other))
        times: dict[str, list[float]] = {label: [] for label in runs}
        for i in range(args.rounds):
            for label, fn in runs.items():
                sync()
                start = time.perf_counter()
                fn()
                sync()
                if i:
                    times[label].append(time.perf_counter() - start)
        medians = {label: statistics.median(v) for label, v in times.items()}
        print(f"P = {P}: " + " | ".join(f"{label} {1e3 * t:.2f} ms" for label, t in medians.items())
              + f" | torch.func / batched GEMMs {medians['torch.func'] / medians['batched GEMMs']:.2f}x, "
                f"torch.func / ssot.stacked.linear {medians['torch.func'] / medians['ssot.stacked.linear']:.2f}x; "
                f"largest difference of the outputs {gap:.1e}")
    print(load())
    return 0


if __name__ == "__main__":
    sys.exit(main())
