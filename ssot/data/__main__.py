"""Command line: check the data root, bring a dataset in, decode a task's images once.

    python -m ssot.data check --data-root DIR [--dataset office31] [--all-images]
    python -m ssot.data fetch visda2017 --data-root DIR
    python -m ssot.data fetch officehome --data-root DIR --archive ~/Downloads/OfficeHomeDataset_10072016.zip
    python -m ssot.data prepare --task A2W --data-root DIR [--out PATH] [--resize-size 256] [--num-workers N]

Exit statuses (:mod:`ssot.cli`): 0 every checked task can run; 1 the data is there but at least
one checked task cannot run (the lines say why); 2 a user mistake (bad argument, missing data root
or archive file, no direct link and no ``--archive``, a destination that already exists); 4 a
download or verification failed (network error, size or checksum mismatch, damaged archive);
bad input is refused before torch is imported (``check`` and ``fetch`` never import it).
``fetch`` runs the check of its dataset afterwards (unless ``--no-check``) and exits with its
status. ``prepare`` writes a decoded-image cache (:mod:`ssot.data.decoded`; default location
``$SSOT_CACHE_DIR/<task>-<size>.ssotimg``, else ``<data root>/decoded/<task>-<size>.ssotimg``;
``--out`` must end in ``.ssotimg``), never over an existing file (status 2), and prints the flag
that trains on it (none at the default location: a run of an image task prepares the cache there
on first use and uses it by default, :mod:`ssot.data.image_cache`); an embedded task (``P2H``) needs no cache and is refused with the command that
trains on it.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ssot import cli


def build_parser() -> argparse.ArgumentParser:
    from ssot.data.check import DEFAULT_SAMPLE
    from ssot.data.decoded import CACHE_DIR_ENV, SUFFIX
    from ssot.data.fetch import MIRROR_ENV
    from ssot.data.registry import BENCHMARKS

    parser = cli.Parser(prog="python -m ssot.data", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True, metavar="{check,fetch,prepare}")
    check = sub.add_parser("check", help="what is under the data root and which tasks can run")
    fetch = sub.add_parser("fetch", help="download or ingest an official archive, verify, unpack")
    prepare = sub.add_parser("prepare", help="decode a task's images once into a decoded-image cache (--image-cache)")
    for p in (check, fetch, prepare):
        cli.add_config_flag(p, "data_root")
    check.add_argument("--dataset", action="append", choices=list(BENCHMARKS),
                       help="check only this dataset, repeatable (default: all four)")
    check.add_argument("--sample", type=int, default=DEFAULT_SAMPLE, metavar="N", help="images opened per domain to find unreadable ones")
    check.add_argument("--all-images", action="store_true", help="open every image")
    fetch.add_argument("dataset", choices=list(BENCHMARKS), help="the dataset to bring in")
    fetch.add_argument("--archive", type=Path, action="append", default=[], metavar="PATH",
                       help="an archive downloaded by hand (repeatable: VisDA has two)")
    fetch.add_argument("--mirror", default=None, metavar="URL",
                       help=f"base URL holding the archives by file name (default: ${MIRROR_ENV}, else the dataset's own)")
    fetch.add_argument("--sha256", default=None, help="expected SHA-256 of the archive (default: the published one, if any)")
    fetch.add_argument("--keep-download", action="store_true",
                       help="keep the downloaded archive after unpacking")
    fetch.add_argument("--no-check", action="store_true", help="skip the check after unpacking")
    cli.add_config_flag(prepare, "task", "here: a task of the image benchmarks", required=True)
    prepare.add_argument("--out", type=Path, default=None, metavar="PATH", help=f"the cache file, ending in {SUFFIX}; never "
                         f"overwritten (default: ${CACHE_DIR_ENV}/<task>-<size>{SUFFIX}, else <data root>/decoded/<task>-<size>{SUFFIX})")
    cli.add_config_flag(prepare, "resize_size", "the side of the stored square images", default=256)
    cli.add_config_flag(prepare, "num_workers", "here: the decoding processes", default_text="the usable CPUs")
    for p in (check, fetch, prepare):
        cli.add_quiet(p)
    return parser


def _run_check(root: Path, datasets: list[str] | None, sample: int | None, quiet: bool) -> int:
    from ssot.data.check import check_data

    report = check_data(root, datasets, sample=sample)
    for line in report.lines:
        if not (quiet and line.startswith("ok ")):
            print(line)
    return report.exit_code


def main(argv: list[str] | None = None) -> int:
    """Command line entry point (``ssot-data``); the exit status of :mod:`ssot.cli`."""
    return cli.command(build_parser(), data, argv, interrupted="a partial download is kept and resumed by the same command")


def data(args: argparse.Namespace) -> int:
    """The command's work: check the data root, or fetch a dataset and check it."""
    from ssot.data.check import DEFAULT_SAMPLE
    from ssot.data.fetch import fetch_dataset
    from ssot.data.layouts import resolve_data_root

    if args.command == "check":
        root = resolve_data_root(args.data_root)
        return _run_check(root, args.dataset, None if args.all_images else args.sample, args.quiet)
    if args.command == "prepare":
        return _prepare(args)
    root = Path(args.data_root).expanduser() if args.data_root else resolve_data_root(None)
    fetch_dataset(args.dataset, root, archive_paths=args.archive, mirror=args.mirror, sha256=args.sha256,
                  progress=not args.quiet, keep_download=args.keep_download)
    return cli.EXIT_OK if args.no_check else _run_check(root, [args.dataset], DEFAULT_SAMPLE, quiet=args.quiet)


def _prepare(args: argparse.Namespace) -> int:
    import time

    from ssot.data.base import usable_workers
    from ssot.data.decoded import open_cache, prepare

    start = time.perf_counter()
    workers = usable_workers(64) if args.num_workers is None else args.num_workers
    out = prepare(args.task, args.data_root, args.out, resize_size=args.resize_size, workers=workers,
                  progress=not args.quiet)
    cache = open_cache(out, _task_name(args.task), args.resize_size)
    count = cache.header["count"]
    print(f"wrote {out}: {count['source']} source + {count['target']} target images, {args.resize_size}x{args.resize_size}, "
          f"{out.stat().st_size / 2**30:.2f} GiB, in {time.perf_counter() - start:.0f} s")
    from ssot.data.decoded import default_path
    from ssot.data.layouts import resolve_data_root

    if out == default_path(cache.header["task"], resolve_data_root(args.data_root), args.resize_size):
        print(f"every run of task {cache.header['task']} at --resize-size {args.resize_size} trains on it (--image-cache auto, "
              "the default)")
    else:
        print(f"train on it with: --task {cache.header['task']} --image-cache {out}")
    return cli.EXIT_OK


def _task_name(name: str) -> str:
    """The task's canonical name (``a2w`` is ``A2W``)."""
    from ssot.data.registry import task

    return task(name).name


if __name__ == "__main__":
    sys.exit(main())
