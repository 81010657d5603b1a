"""A soak of the search: killed with SIGKILL at random moments, resumed until it finishes, then checked.

    python benchmarks/soak.py --task digits --kills 20                   # an ordinary search (a config per trial, ASHA)
    python benchmarks/soak.py --task digits --kills 20 --population 4    # populations of 4 on a feature cache
    python benchmarks/soak.py --task digits --kills 3 --num-samples 4 --epochs 2 --seed 1 --out /tmp/soak

runs ``python tune/search.py`` (its flags below; its record, the Optuna study, in the experiment
folder's ``study.journal``) and kills its driver's whole process group with SIGKILL ``--kills``
times, each time at a moment drawn with ``--seed`` in one of these phases, then reruns the same
command with ``--resume``, until the search finishes:

``start``       a random time after the driver starts (its lock, ``experiment.json``, the repair of
                its record, Ray's start), up to the time the first driver took to record a result;
``record``      within 50 ms of a write of the study (a config asked, an epoch recorded, an
                end or an early stop told);
``checkpoint``  within 0.3 s of a new trial state (an epoch's report, a population's report);
``report``      0.3 to 2 s after a new trial state (the next epoch, the driver handling a result);
``trial-end``   within 0.3 s of a rewrite of ``trials.csv`` (a trial ended: completed, stopped by
                ASHA or at a population's rung);
``final``       within 1 s of the end of the last config (``trials.csv`` holds every config ended, or Ray's
                last line): the search's final outputs, its summary, Ray's shutdown; a resumed driver
                with nothing left to run writes its outputs without starting Ray.

The phases come in a seeded random order, each as often as the others, the ``final`` ones last
(a kill whose phase did not come before the final outputs becomes a ``final`` one); the sign of
``record``, ``checkpoint``, ``report`` and ``trial-end`` is awaited 1 to 3 times (drawn). Before each
resume the soak waits until every process of the killed driver's Ray is gone (its watchdog,
``tune/reaper.py``, ends them). Once the search finished, it checks, and prints in one line:

* lost epochs (each config's epochs 1 to its last, in ``trials.csv``, once) and lost configs
  (``--num-samples`` of them), duplicated epochs;
* epochs whose values differ from an uninterrupted run of the same trial (its configs trained in one
  go with the same seed: what the search guarantees, docs/reliability.md; ``--no-reference`` skips it);
* trials on which ``trials.csv``, ``best_config.json`` (the best-trial rule), the Optuna study and
  the trials' own files (their histories; no state left once they ended) disagree, and Optuna
  trials left RUNNING;
* resumes that were refused or failed, processes of a killed driver still alive after 60 s.

Exit status 0 when every count is 0 and every kill happened, 1 otherwise (2: bad input). Everything
stays in ``--out`` (default: a new folder under the system's temporary folder): the experiment
(``runs/soak/<task>``, its study included), each driver's output (``drivers/``), the feature cache of a
population search, and ``soak.json`` (every kill, every disagreement). Flags after ``--`` go to
``tune/search.py`` as they are (e.g. ``-- --set lr=3e-4``).
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PHASES = ("start", "record", "checkpoint", "report", "trial-end", "final")
#: Seconds after each phase's sign (drawn uniformly): (low, high).
DELAYS = {"record": (0.0, 0.05), "checkpoint": (0.0, 0.3), "report": (0.3, 2.0), "trial-end": (0.0, 0.3), "final": (0.0, 1.0)}
#: Ray's line once its run of the search's trials ended (``tune.py``): the search's final outputs follow
#: (a driver with nothing left to run starts no Ray: ``trials.csv`` says every config ended).
LAST_SAVE = "Wrote the latest version of all result files and experiment state"
POLL_S = 0.01
#: What the soak writes into ``--out`` (and a population search's feature cache, ``features.pt``).
WRITTEN = ("soak.json", "runs", "drivers")
#: The phases whose sign is awaited 1 to :data:`SIGNS` times (drawn) before the delay: a kill falls
#: after some progress of the driver too, not only after its first state or record.
REPEATED, SIGNS = ("record", "checkpoint", "report", "trial-end"), 3


def build_parser() -> argparse.ArgumentParser:
    from ssot import cli

    p = cli.Parser(prog="python benchmarks/soak.py", description=__doc__.split("\n\n")[0])
    p.add_argument("--task", default="digits", help="an embedded task (digits, P2H, H2P) or any task whose data is there")
    p.add_argument("--kills", type=int, default=20, help="SIGKILLs of the driver's process group")
    p.add_argument("--population", type=int, default=1, metavar="P", help="configs per Ray trial (P > 1: on a feature cache)")
    p.add_argument("--num-samples", type=int, help="configs of the search (default: P x max(4, 3 x kills), P = --population)")
    p.add_argument("--epochs", type=int, default=6, help="epochs per config")
    p.add_argument("--iters-per-epoch", type=int, default=50, help="iterations per epoch (the config field)")
    p.add_argument("--seed", type=int, default=0, help="seed of the search and of the kill moments")
    p.add_argument("--phases", default=",".join(PHASES), help="the phases kills are drawn in (comma-separated)")
    p.add_argument("--features", metavar="PATH", help="feature cache of a population search (default: built into --out)")
    p.add_argument("--out", help="a new folder for everything the soak writes (default: a new temporary folder)")
    p.add_argument("--timeout", type=float, default=900.0, help="seconds a driver may run before the soak gives up on it")
    p.add_argument("--no-reference", action="store_true", help="skip the comparison with uninterrupted runs")
    return p


def default_samples(kills: int, population: int) -> int:
    """Configs enough for ``kills`` kills: three Ray trials (configs, or populations of P) per kill.
    A driver runs a few seconds past its start before most kills and its trials lose only the epoch
    under way (the record), so a search of fewer units can finish before its last kills (a
    population search of P x kills configs got 8 of 20: docs/reliability.md)."""
    return population * max(4, 3 * kills)


def plan(kills: int, rng: random.Random, phases: tuple[str, ...] = PHASES) -> list[str]:
    """The phase of each kill: every phase of ``phases`` but ``final`` equally often in a seeded
    order, about a tenth ``final`` (at least one from 2 kills on, all of them when it is the only
    phase), last."""
    others = [p for p in phases if p != "final"]
    finals = 0 if "final" not in phases else kills if not others else 0 if kills < 2 else max(1, kills // 10)
    running = [others[i % len(others)] for i in range(kills - finals)]
    rng.shuffle(running)
    return running + ["final"] * finals


# ---------------------------------------------------------------------------- one driver
class Driver:
    """One run of ``tune/search.py`` in a process group of its own, its output in ``log``."""

    def __init__(self, command: list[str], log: Path, env: dict[str, str]):
        self.log, self.started = log, time.monotonic()
        self.out = log.open("wb")
        self.proc = subprocess.Popen(command, stdout=self.out, stderr=subprocess.STDOUT, env=env, cwd=ROOT, start_new_session=True)
        self.read = 0
        self.text = ""

    def output(self) -> str:
        """Everything it printed so far."""
        with self.log.open("rb") as f:
            f.seek(self.read)
            chunk = f.read()
        self.read += len(chunk)
        self.text += chunk.decode(errors="replace")
        return self.text

    def kill(self) -> tuple[list[int], float]:
        """SIGKILL its process group; wait until every process below it is gone (its Ray's, ended by its
        watchdog). Returns the pids of those still alive after 60 s (then killed here) and the seconds waited."""
        import psutil

        from tune.reaper import descendants

        below = descendants(self.proc.pid)
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        start = time.monotonic()
        _, left = psutil.wait_procs(below, timeout=60)
        for process in left:
            try:
                process.kill()
            except psutil.NoSuchProcess:
                pass
        self.out.close()
        return [p.pid for p in left], time.monotonic() - start

    def close(self) -> int:
        self.out.close()
        return self.proc.returncode


class Signs:
    """What a driver shows of its phases: files of the experiment folder, its output."""

    def __init__(self, exp: Path):
        self.exp = exp
        self.checkpoints = set(self._checkpoints())
        self.trials_csv = self._stat(exp / "trials.csv")
        self.study = self._stat(exp / "study.journal")
        self.read: tuple[tuple[int, int] | None, bool] = (None, False)  # trials.csv's stat when last read, whether all ended

    def ended(self) -> bool:
        """Whether ``trials.csv`` holds every config of the search, each ended."""
        stat = self._stat(self.exp / "trials.csv")
        if stat is not None and stat != self.read[0]:
            import pandas as pd

            from tune.outputs import expected_configs

            try:
                frame = pd.read_csv(self.exp / "trials.csv", dtype={"trial_id": str})
                last = frame.groupby("trial_id")["status"].last()
                done = len(last) >= expected_configs(json.loads((self.exp / "experiment.json").read_text())) and not (last == "running").any()
            except (OSError, ValueError, KeyError):
                done = False
            self.read = (stat, done)
        return self.read[1]

    def _checkpoints(self) -> list[str]:
        return [str(p) for p in self.exp.glob("trials/*/epoch-*.pt")]

    @staticmethod
    def _stat(path: Path) -> tuple[int, int] | None:
        try:
            st = path.stat()
        except OSError:
            return None
        return st.st_mtime_ns, st.st_size

    def seen(self, phase: str, output: str) -> bool:
        """Whether ``phase``'s sign appeared since the last call."""
        if phase == "final":
            return LAST_SAVE in output or self.ended()
        if phase in ("checkpoint", "report"):
            now = set(self._checkpoints())
            new = bool(now - self.checkpoints)
            self.checkpoints = now
            return new
        if phase in ("trial-end", "record"):
            path = self.exp / ("trials.csv" if phase == "trial-end" else "study.journal")
            stat, before = self._stat(path), self.trials_csv if phase == "trial-end" else self.study
            if phase == "trial-end":
                self.trials_csv = stat
            else:
                self.study = stat
            return stat is not None and stat != before
        return False


def run_until(driver: Driver, phase: str, rng: random.Random, start_window: float, timeout: float,
              exp: Path) -> tuple[str | None, float | None]:
    """Wait for ``phase``'s sign, then a random delay (:data:`DELAYS`). Returns the phase the driver
    is to be killed in now (``final`` replaces a phase that did not come before the final outputs;
    ``timeout``; None: the driver ended first) and the seconds from its start to its first record
    of a result (a new trial state)."""
    signs, watch = Signs(exp), Signs(exp)
    fired, first_save, wanted = phase, None, rng.randint(1, SIGNS) if phase in REPEATED else 1
    fire_at = driver.started + rng.uniform(0, start_window) if phase == "start" else None
    while True:
        now = time.monotonic()
        if driver.proc.poll() is not None:
            return None, first_save
        if now - driver.started > timeout:
            return "timeout", first_save
        output = driver.output()
        if first_save is None and watch.seen("checkpoint", output):  # the start window: up to a first state
            first_save = now - driver.started
        if fire_at is None:
            if fired != "final" and signs.seen("final", output):
                fired = "final"
            if signs.seen(fired, output):
                wanted -= 1
                if wanted <= 0 or fired == "final":
                    fire_at = now + rng.uniform(*DELAYS[fired])
        if fire_at is not None and now >= fire_at:
            return fired, first_save
        time.sleep(POLL_S)


# ---------------------------------------------------------------------------- the soak
def search_flags(args: argparse.Namespace, out: Path, samples: int, extra: list[str]) -> list[str]:
    flags = ["--task", args.task, "--num-samples", str(samples), "--epochs", str(args.epochs), "--seed", str(args.seed),
             "--set", "pretrain_epochs=1", "--set", f"iters_per_epoch={args.iters_per_epoch}", "--grace-period", "1",
             "--reduction-factor", "2", "--storage-path", str(out / "runs"), "--name", "soak"]
    if args.population > 1:
        flags += ["--features", str(args.features), "--population", str(args.population)]
    return flags + extra


def feature_cache(task: str, path: Path) -> Path:
    """The feature cache of a population search (pretrained one epoch, as the search's config)."""
    from ssot.config import SSOTConfig
    from ssot.features import build_feature_cache

    build_feature_cache(SSOTConfig.for_task(task, pretrain_epochs=1, device="cpu", num_threads=1), path, progress=False)
    return path


def soak(args: argparse.Namespace, extra: list[str]) -> dict[str, Any]:
    """Kill and resume the search (module docstring), then check it (:func:`check`)."""
    from ssot.results.outputs import check_output

    if args.out:  # a new folder, or one without the soak's files
        cache = ("features.pt",) if args.population > 1 and not args.features else ()
        check_output(args.out, "--out", folder=True, new=(*WRITTEN, *cache))
    out = Path(args.out or tempfile.mkdtemp(prefix="ssot-soak-"))
    (out / "drivers").mkdir(parents=True, exist_ok=True)
    if args.population > 1 and not args.features:
        args.features = feature_cache(args.task, out / "features.pt")
    samples = args.num_samples or default_samples(args.kills, args.population)
    command = [sys.executable, str(ROOT / "tune" / "search.py"), *search_flags(args, out, samples, extra)]
    exp = out / "runs" / "soak" / args.task
    rng = random.Random(args.seed)
    phases = plan(args.kills, rng, tuple(args.phases.split(",")))
    kills: list[dict[str, Any]] = []
    drivers: list[dict[str, Any]] = []
    window, started, load = 15.0, time.monotonic(), os.getloadavg()
    while True:
        log = out / "drivers" / f"{len(drivers):02d}.log"
        driver = Driver(command + (["--resume"] if drivers else []), log, dict(os.environ))
        phase = phases[len(kills)] if len(kills) < len(phases) else None
        fired, first_save = run_until(driver, phase, rng, window, args.timeout, exp) if phase else (None, None)
        if first_save is not None:
            window = first_save * 1.2 if not drivers else max(window, first_save * 1.2)
        if fired is None:  # it ended by itself (or no kill is left: it runs to its end)
            try:
                driver.proc.wait(timeout=args.timeout)
            except subprocess.TimeoutExpired:
                driver.kill()
                drivers.append({"log": str(log), "status": "timeout"})
                break
            drivers.append({"log": str(log), "status": driver.close()})
            break
        left, waited = driver.kill()
        drivers.append({"log": str(log), "status": "killed"})
        kills.append({"phase": phase, "killed_in": fired, "after_s": round(time.monotonic() - driver.started, 2),
                      "processes_gone_after_s": round(waited, 2), "processes_left": sorted(left), "load": os.getloadavg()[0]})
        print(f"soak: kill {len(kills)}/{len(phases)} in phase {fired} after {kills[-1]['after_s']} s (its processes gone "
              f"{waited:.1f} s later)", file=sys.stderr, flush=True)
        if fired == "timeout":
            break
    last = drivers[-1]
    report: dict[str, Any] = {"task": args.task, "population": args.population, "seed": args.seed, "num_samples": samples,
                              "epochs": args.epochs, "iters_per_epoch": args.iters_per_epoch, "kills_asked": args.kills,
                              "kills": kills, "drivers": drivers, "search_s": round(time.monotonic() - started, 1),
                              "out": str(out), "command": command}
    finished = last["status"] == 0 and (exp / "experiment.json").exists()
    if not finished:
        tail = Path(last["log"]).read_text(errors="replace").strip().splitlines()[-3:]
        report["failed"] = f"the last driver ended with status {last['status']}: {' | '.join(tail)}"
    else:
        report.update(check(exp, None, reference=not args.no_reference))
    loads = [load[0], *(k["load"] for k in kills), os.getloadavg()[0]]
    report.update(wall_s=round(time.monotonic() - started, 1), load_1min=[min(loads), sum(loads) / len(loads), max(loads)])
    (out / "soak.json").write_text(json.dumps(report, indent=2, default=str) + "\n")
    return report


def summary_line(report: dict[str, Any]) -> str:
    """The soak in one line (module docstring)."""
    kills = report["kills"]
    phases = Counter(k["killed_in"] for k in kills)
    head = (f"soak {report['task']} (population {report['population']}, {report['num_samples']} configs x {report['epochs']} "
            f"epochs, seed {report['seed']}): {len(kills)} of {report['kills_asked']} kills ("
            + ", ".join(f"{p} {phases[p]}" for p in (*PHASES, "timeout") if phases[p]) + f"), {len(report['drivers'])} drivers")
    low, mean, high = report["load_1min"]
    tail = (f"; {report['wall_s']:.0f} s ({report['search_s']:.0f} s killing and resuming), load average {mean:.1f} "
            f"({low:.1f}-{high:.1f}); {report['out']}/soak.json")
    if "failed" in report:
        return f"{head}; FAILED: {report['failed']}{tail}"
    left = sum(len(k["processes_left"]) for k in kills)
    reference = (f"epochs unlike an uninterrupted run {report['differing_epochs']} of {report['compared_epochs']}"
                 if report.get("compared_epochs") is not None else "uninterrupted runs not compared")
    return (f"{head}; lost epochs {report['lost_epochs']}, duplicated epochs {report['duplicated_epochs']}, lost configs "
            f"{report['lost_configs']}, {reference}, disagreeing trials {len(report['disagreeing'])} (trials.csv, "
            f"best_config.json, Optuna study, trial files), left RUNNING in the study {report['running_in_study']}, "
            f"processes left {left}{tail}")


def clean(report: dict[str, Any]) -> bool:
    """Whether the soak found nothing and made every kill it was asked for."""
    counts = ("lost_epochs", "duplicated_epochs", "lost_configs", "running_in_study")
    return ("failed" not in report and len(report["kills"]) == report["kills_asked"]
            and not any(report[c] for c in counts) and not report["disagreeing"] and not report.get("differing_epochs")
            and not any(k["processes_left"] for k in report["kills"]))


# ---------------------------------------------------------------------------- the checks
def _same(a: Any, b: Any, rel: float = 1e-9) -> bool:
    try:
        x, y = float(a), float(b)
    except (TypeError, ValueError):
        return a == b
    return (math.isnan(x) and math.isnan(y)) or math.isclose(x, y, rel_tol=rel, abs_tol=1e-12)


def check(exp: Path, optuna_url: str | None, reference: bool) -> dict[str, Any]:
    """The counts of the module docstring for the finished experiment ``exp`` (its study in
    ``optuna_url``, else where ``experiment.json`` says: the experiment folder's journal)."""
    import pandas as pd

    from tune import members
    from tune.outputs import best_config, expected_configs
    from tune.record import UnitFiles, disagreements, read_study

    info = json.loads((exp / "experiment.json").read_text())
    metric = info.get("metric", "target_acc")
    frame = pd.read_csv(exp / "trials.csv", dtype={"trial_id": str})
    epochs = frame.dropna(subset=["epoch"])
    rows = {str(m): g.sort_values("epoch", kind="stable") for m, g in frame.groupby("trial_id")}
    lost = sum(len(set(range(1, int(g["epoch"].max()) + 1)) - set(g["epoch"].astype(int)))
               for _, g in epochs.groupby("trial_id"))
    found: dict[str, list[str]] = {}

    def disagree(key: str, why: str) -> None:
        found.setdefault(key, []).append(why)

    trials = read_study(str(exp), info, optuna_url).get_trials(deepcopy=False)
    for key, why in disagreements(trials, frame, metric).items():
        disagree(key, f"Optuna study: {why}")

    best, best_id = best_config(frame, info)
    written = json.loads((exp / "best_config.json").read_text()) if (exp / "best_config.json").exists() else None
    if best is None or written != json.loads(json.dumps(best.to_dict())) or info.get("best_trial") != best_id:
        disagree(str(best_id), f"best_config.json: not the best trial's config (experiment.json's best_trial "
                               f"{info.get('best_trial')}, the rule's {best_id})")

    units: dict[str, list[str]] = {}
    for trial in trials:
        if "member_id" in trial.user_attrs:
            units.setdefault(str(trial.user_attrs["unit"]), []).append(str(trial.user_attrs["member_id"]))
    for unit, names in sorted(units.items()):
        files = UnitFiles(str(exp), unit)
        if files.states():
            disagree(unit, f"trial files: states {files.states()} left after the trial ended")
        entries = members.history(files.history())
        for member in sorted(set(names)):
            mine = rows.get(member)
            if mine is None:
                continue
            kept = {e["epoch"]: e for e in entries.get(member, [])}
            for _, row in mine.dropna(subset=["epoch"]).iterrows():
                entry = kept.get(int(row["epoch"]))
                if entry is None or not _same(row[metric], entry.get(metric)) or not _same(row["loss_total"], entry.get("loss_total")):
                    disagree(member, f"trial files: epoch {int(row['epoch'])} unlike its history")

    out: dict[str, Any] = {
        "lost_epochs": int(lost), "duplicated_epochs": int(epochs.duplicated(["trial_id", "epoch"]).sum()),
        "lost_configs": max(0, expected_configs(info) - len(rows)), "disagreeing": found,
        "running_in_study": sum(t.state.name in ("RUNNING", "WAITING") for t in trials),
        "attempts": len(trials), "statuses": frame.groupby("trial_id")["status"].last().value_counts().to_dict(),
        "compared_epochs": None}
    if reference:
        out.update(compare_with_uninterrupted(exp, rows, info))
    return out


def compare_with_uninterrupted(exp: Path, rows: dict[str, Any], info: dict[str, Any]) -> dict[str, Any]:
    """Each trial's configs trained again in one go (one :class:`ssot.population.Population` per Ray
    trial, the same rungs inside, the same seed, from the source-only model its trials shared): the epochs of ``trials.csv`` whose values differ,
    and, in a population, members that end at another epoch (ASHA across trials stops a trial where
    the order of results decides: those are compared up to their last epoch)."""
    from ssot.population import Population
    from tune.outputs import trial_config
    from tune.trial import PRETRAINED_DIR, pretrain_shared

    population = int(info.get("population") or 1)
    shared = str(exp.parent / PRETRAINED_DIR)  # the source-only model the search's trials shared (seeded: the same)
    groups: dict[str, list[str]] = {}
    for member in sorted(rows):  # a population's members: p<unit>-m<index>
        groups.setdefault(member.split("-", 1)[0], []).append(member)
    compared, differing, details = 0, 0, []
    for group in groups.values():
        configs = [trial_config(rows[m].iloc[-1], info) for m in group]
        if population == 1:  # no rung inside: the epochs after the last one reached change nothing before it
            reached = [rows[m]["epoch"].dropna() for m in group]
            configs = [dataclasses.replace(c, epochs=int(r.max())) if len(r) and r.max() >= 1 else c for c, r in zip(configs, reached)]
        records = Population(configs, rungs=info.get("rungs") or () if population > 1 else (),
                             reduction_factor=int(info.get("reduction_factor") or 3), metric=info.get("metric", "target_acc")
                             ).fit(pretrain=lambda host: pretrain_shared(host, shared))
        for member, record in zip(group, records):
            want = {int(e["epoch"]): e for e in record["epochs"]}
            mine = rows[member].dropna(subset=["epoch"])
            got = [int(e) for e in mine["epoch"]]
            if population > 1 and got and max(got) != max(want, default=0):
                differing += 1
                details.append(f"{member}: last epoch {max(got)}, uninterrupted {max(want, default=0)}")
            for _, row in mine.iterrows():
                compared += 1
                ref = want.get(int(row["epoch"]))
                if ref is None or not _same(row["target_acc"], ref["target_acc"]) or not _same(row["loss_total"], ref["loss_total"], 1e-5):
                    differing += 1
                    details.append(f"{member} epoch {int(row['epoch'])}: target_acc {row['target_acc']}, uninterrupted "
                                   f"{None if ref is None else ref['target_acc']}")
    return {"compared_epochs": compared, "differing_epochs": differing, "differing": details}


def main(argv: list[str] | None = None) -> int:
    from ssot import cli
    from ssot.errors import ConfigError

    argv = list(sys.argv[1:] if argv is None else argv)
    extra = argv[argv.index("--") + 1:] if "--" in argv else []
    args = build_parser().parse_args(argv[: argv.index("--")] if "--" in argv else argv)

    def work() -> int:
        for name in ("kills", "epochs", "iters_per_epoch", "population", "num_samples"):
            value = getattr(args, name)
            if value is not None and value < (0 if name == "kills" else 1):
                raise ConfigError(f"The '--{name.replace('_', '-')}' argument must be an int >= {0 if name == 'kills' else 1}. "
                                  f"Got {value} instead.")
        unknown = sorted(set(args.phases.split(",")) - set(PHASES))
        if unknown or not args.phases:
            raise ConfigError(f"The '--phases' argument must be phases among {', '.join(PHASES)}, comma-separated. Got "
                              f"{args.phases!r} instead.")
        if args.features and args.population == 1:
            raise ConfigError("--features is the cache of a population search: pass --population P (P > 1) with it.")
        report = soak(args, extra)
        print(summary_line(report), flush=True)
        return 0 if clean(report) else 1

    return cli.run(work, interrupted="the soak's folder is kept (--out)")


if __name__ == "__main__":
    sys.exit(main())
