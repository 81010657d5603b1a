"""Bring a benchmark in: download (resumable) or ingest an archive, verify it, unpack atomically.

``python -m ssot.data fetch NAME --data-root DIR [--archive PATH] [--mirror URL]``.
Nothing here runs at training time.

Where each official archive is published (:attr:`ssot.data.registry.DatasetSpec.archives`)
----------------------------------------------------------------------------------------
- VisDA-2017: **direct links** ``http://csr.bu.edu/ftp/visda17/clf/train.tar`` and
  ``.../validation.tar`` (VisionLearningGroup/taskcv-2017-public,
  ``classification_track/README.md``).
- Office-31 (``domain_adaptation_images.tar.gz``), Office-Home
  (``OfficeHomeDataset_10072016.zip``, after accepting the terms on the page) and ImageCLEF-DA
  (``image_CLEF.zip``): behind cloud-drive pages (Google Drive), no direct link; download by hand
  and pass ``--archive PATH``, or name a mirror holding the same file names with ``--mirror URL``
  (or ``$SSOT_DATA_MIRROR``): the archive is fetched from ``<URL>/<file name>``.

Verification
------------
No dataset publishes a SHA-256 (or size) of its archive, so the registry carries none:
verification is *trust on first use*. The first archive of a name that is complete (its size
equals the server's ``Content-Length``) and reads as a whole (every tar member or every zip CRC)
has its size and SHA-256 recorded in ``<data root>/.ssot-checksums.json``; every later download
or ingested file of that name must match them, else it is refused with one line naming the file
and the expected checksum. ``--sha256 HEX`` gives the expected checksum by hand (e.g. copied
from another machine's record), which is then enforced from the first download.

Atomicity
---------
A download grows in ``<root>/.ssot-downloads/<file>.part`` (resumed with an HTTP ``Range``
request) and is renamed only when complete. An archive is unpacked into a hidden
``<root>/<dataset>/.ssot-unpack-<file>/`` folder and its top-level entries are then renamed into
``<root>/<dataset>/``, so a crash leaves no partial dataset folder that looks complete; a marker
``<root>/<dataset>/.ssot-unpacked-<file>.json`` is written last. Nothing is ever overwritten.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import tarfile
import time
import urllib.error
import urllib.request
import zipfile
from datetime import datetime, timezone
from pathlib import Path

from ssot.data.registry import DATASETS, Archive
from ssot.errors import ConfigError, DataError, ExternalError

MIRROR_ENV = "SSOT_DATA_MIRROR"
CHECKSUMS_FILE = ".ssot-checksums.json"
DOWNLOADS_DIR = ".ssot-downloads"
_CHUNK = 1 << 20


class FetchError(ExternalError, DataError):
    """A download failed or an archive failed verification (names the file and the fix)."""


def archives_of(dataset: str) -> tuple[Archive, ...]:
    """The official archives of ``dataset`` (one of the registry's datasets that have some)."""
    fetchable = [name for name, spec in DATASETS.items() if spec.archives]
    if dataset not in fetchable:
        raise ConfigError(f"Unknown dataset {dataset!r}. Valid datasets: {', '.join(fetchable)}.")
    return DATASETS[dataset].archives


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _progress(name: str, total: int | None, initial: int, enabled: bool):
    from tqdm import tqdm

    return tqdm(total=total, initial=initial, unit="B", unit_scale=True, unit_divisor=1024,
                desc=name, disable=not enabled, leave=False)


def download(url: str, dest: Path, *, progress: bool = True, retries: int = 3,
             timeout: float = 30.0) -> Path:
    """Download ``url`` to ``dest``, resuming ``dest.part`` with HTTP ``Range`` requests.

    An interrupted transfer is resumed up to ``retries`` times in this call (and again by the
    next call: ``dest.part`` is kept). A server that ignores ``Range`` (status 200) is read from
    the start. ``dest`` appears only when the byte count equals the announced size.
    """
    part = dest.with_name(dest.name + ".part")
    dest.parent.mkdir(parents=True, exist_ok=True)
    last_error = "no attempt"
    for attempt in range(retries + 1):
        have = part.stat().st_size if part.exists() else 0
        headers = {"Range": f"bytes={have}-"} if have else {}
        try:
            with urllib.request.urlopen(urllib.request.Request(url, headers=headers),
                                        timeout=timeout) as resp:
                if resp.status == 206:
                    start = int(resp.headers.get("Content-Range", "bytes 0-").split()[1]
                                .split("-")[0])
                    if start != have:
                        raise FetchError(f"{url} answered a resume from byte {have} with bytes "
                                         f"from {start}; delete {part} and fetch again")
                    total_text = resp.headers.get("Content-Range", "").rpartition("/")[2]
                    total = int(total_text) if total_text.isdigit() else None
                    mode = "ab"
                else:
                    have, mode = 0, "wb"
                    length = resp.headers.get("Content-Length")
                    total = int(length) if length and length.isdigit() else None
                with open(part, mode) as fh, _progress(dest.name, total, have, progress) as bar:
                    for chunk in iter(lambda: resp.read(_CHUNK), b""):
                        fh.write(chunk)
                        bar.update(len(chunk))
            size = part.stat().st_size
            if total is not None and size != total:
                last_error = f"connection closed after {size} of {total} bytes"
                continue
            os.replace(part, dest)
            return dest
        except urllib.error.HTTPError as exc:
            if exc.code == 416 and have:  # the .part is longer than the file: start over
                part.unlink()
                last_error = "server refused the resume (416)"
                continue
            raise FetchError(f"download of {url} failed: HTTP {exc.code} {exc.reason}; check the "
                             "URL (--mirror or $SSOT_DATA_MIRROR) or download by hand and pass "
                             "--archive PATH") from exc
        except (urllib.error.URLError, OSError, TimeoutError) as exc:
            last_error = " ".join(str(getattr(exc, "reason", exc)).split()) or type(exc).__name__
        if attempt < retries:
            time.sleep(min(2.0 ** attempt, 10.0) * 0.1)
    kept = part.stat().st_size if part.exists() else 0
    raise FetchError(f"download of {url} interrupted ({last_error}); {part} keeps {kept} bytes; "
                     "run the same command again to resume")


def _read_whole_archive(path: Path) -> None:
    """Read every member (tar) or every CRC (zip); a damaged archive raises :class:`FetchError`."""
    try:
        if zipfile.is_zipfile(path):
            with zipfile.ZipFile(path) as zf:
                bad = zf.testzip()
            if bad is not None:
                raise FetchError(f"archive {path} is damaged (bad CRC in {bad}); download it "
                                 "again")
        elif tarfile.is_tarfile(path):
            with tarfile.open(path) as tf:
                for member in tf:
                    if member.isfile():
                        extracted = tf.extractfile(member)
                        while extracted is not None and extracted.read(_CHUNK):
                            pass
                # tarfile stops quietly at a damaged header, and a gzip CRC is only checked at
                # the end of the stream: everything after the last member must be zero padding,
                # read to the end.
                tf.fileobj.seek(tf.offset)
                for chunk in iter(lambda: tf.fileobj.read(_CHUNK), b""):
                    if chunk.strip(b"\0"):
                        raise FetchError(f"archive {path} is damaged (unreadable data after "
                                         f"byte {tf.offset} of the tar stream); download it "
                                         "again")
        else:
            raise FetchError(f"{path} is not a tar or zip archive; download it again")
    except (tarfile.TarError, zipfile.BadZipFile, EOFError, OSError) as exc:
        raise FetchError(f"archive {path} is damaged ({' '.join(str(exc).split())}); "
                         "download it again") from exc


def _load_records(root: Path) -> dict:
    path = root / CHECKSUMS_FILE
    if not path.is_file():
        return {}
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise DataError(f"{path} is not valid JSON ({exc.msg}); fix or delete it") from exc


def _save_record(root: Path, filename: str, record: dict) -> None:
    records = _load_records(root)
    records[filename] = record
    tmp = root / f"{CHECKSUMS_FILE}.tmp"
    tmp.write_text(json.dumps(records, indent=2, sort_keys=True) + "\n")
    os.replace(tmp, root / CHECKSUMS_FILE)


def verify(path: Path, archive: Archive, root: Path, sha256: str | None = None,
           origin: str = "") -> dict:
    """Check ``path`` against the expected size and SHA-256, or record them on first use.

    The expectation comes from ``sha256`` (given by hand), else the published values in
    ``archive``, else ``<root>/.ssot-checksums.json``. Returns the record (size, sha256).

    Raises
    ------
    FetchError : the size or checksum differs, or (first use) the archive does not read whole.
    """
    records = _load_records(root)
    recorded = records.get(archive.filename, {})
    expected_sha = (sha256 or archive.sha256 or recorded.get("sha256") or "").lower() or None
    source = ("--sha256" if sha256 else "published" if archive.sha256 else
              f"recorded in {root / CHECKSUMS_FILE}" if recorded else None)
    expected_size = None if sha256 else (archive.size or recorded.get("size"))
    size = path.stat().st_size
    if expected_size is not None and size != expected_size:
        raise FetchError(f"archive {path} has {size} bytes, expected {expected_size} (sha256 "
                         f"{expected_sha}, {source}); delete it and download it again")
    actual = sha256_of(path)
    if expected_sha is not None and actual != expected_sha:
        raise FetchError(f"checksum mismatch for {path}: sha256 {actual}, expected sha256 "
                         f"{expected_sha} ({source}); the file is damaged or not the released "
                         "archive: delete it and download it again")
    record = {"size": size, "sha256": actual}
    if expected_sha is None:
        _read_whole_archive(path)
    if recorded.get("sha256") != actual:
        _save_record(root, archive.filename, {**record, "from": origin or str(path),
                                              "recorded": datetime.now(timezone.utc)
                                              .isoformat(timespec="seconds")})
    return record


def _top_entries(path: Path) -> list[str]:
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as zf:
            names = zf.namelist()
    else:
        with tarfile.open(path) as tf:
            names = tf.getnames()
    tops = {Path(n).parts[0] for n in names if Path(n).parts and Path(n).parts[0] not in (".", "/")}
    return sorted(tops)


def marker_path(root: Path, dataset: str, archive: Archive) -> Path:
    return root / dataset / f".ssot-unpacked-{archive.filename}.json"


def unpack(path: Path, root: Path, dataset: str, archive: Archive, record: dict) -> list[Path]:
    """Unpack ``path`` into ``<root>/<dataset>/`` atomically (see the module docstring).

    Raises
    ------
    DataError : a top-level entry of the archive already exists there (nothing is overwritten).
    """
    dest = root / dataset
    dest.mkdir(parents=True, exist_ok=True)
    tops = _top_entries(path)
    clashes = [dest / t for t in tops if (dest / t).exists()]
    if clashes:
        raise DataError(f"{clashes[0]} already exists and fetch never overwrites; move it away "
                        f"or check it with: python -m ssot.data check --data-root {root}")
    staging = dest / f".ssot-unpack-{archive.filename}"
    if staging.exists():
        shutil.rmtree(staging)  # left by an interrupted unpack: never looked complete
    staging.mkdir()
    try:
        if zipfile.is_zipfile(path):
            with zipfile.ZipFile(path) as zf:
                zf.extractall(staging)  # zipfile drops absolute and '..' components
        else:
            with tarfile.open(path) as tf:
                tf.extractall(staging, filter="data")  # refuses paths leaving staging
        for top in tops:
            os.rename(staging / top, dest / top)
    except (tarfile.TarError, zipfile.BadZipFile, OSError) as exc:
        raise FetchError(f"cannot unpack {path}: {' '.join(str(exc).split())}") from exc
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    marker_path(root, dataset, archive).write_text(json.dumps(
        {**record, "archive": archive.filename, "entries": tops}, indent=2) + "\n")
    return [dest / t for t in tops]


def _match_archives(dataset: str, paths: list[Path]) -> dict[str, Path]:
    """Pair each ``--archive`` file with the archive it stands for (by file name)."""
    archives = archives_of(dataset)
    names = [a.filename for a in archives]
    given: dict[str, Path] = {}
    for path in paths:
        if not path.is_file():
            raise DataError(f"--archive {path} does not exist or is not a file; pass the "
                            f"downloaded {' or '.join(names)}")
        name = path.name if path.name in names else names[0] if len(names) == 1 else None
        if name is None:
            raise ConfigError(f"The '--archive' parameter must be one of the files "
                              f"{', '.join(names)} of {DATASETS[dataset].title}. Got "
                              f"{path.name!r} instead.")
        given[name] = path
    return given


def fetch_dataset(dataset: str, root: Path, *, archive_paths: list[Path] | None = None,
                  mirror: str | None = None, sha256: str | None = None, progress: bool = True,
                  keep_download: bool = False, say=print) -> list[Path]:
    """Download (or take ``archive_paths``), verify and unpack every archive of ``dataset``.

    Parameters
    ----------
    dataset : ``office31``, ``officehome``, ``imageclef`` or ``visda2017``.
    root : the data root (created if missing).
    archive_paths : files downloaded by hand (matched to the archives by file name).
    mirror : base URL holding the archives under their released names (default:
        ``$SSOT_DATA_MIRROR``, else each archive's direct link).
    sha256 : expected SHA-256 (only when one archive is fetched).
    keep_download : keep a downloaded archive after unpacking (default: delete it; a file
        given with ``--archive`` is never deleted).

    Returns
    -------
    The folders unpacked by this call (archives already unpacked are skipped).
    """
    archives = archives_of(dataset)
    given = _match_archives(dataset, list(archive_paths or []))
    mirror = mirror or os.environ.get(MIRROR_ENV) or None
    root.mkdir(parents=True, exist_ok=True)
    plan: list[tuple[Archive, Path | None, str | None]] = []
    for arch in archives:
        marker = marker_path(root, dataset, arch)
        if marker.is_file():
            say(f"{dataset}: {arch.filename} already unpacked ({marker})")
            continue
        if arch.filename in given:
            plan.append((arch, given[arch.filename], None))
            continue
        url = f"{mirror.rstrip('/')}/{arch.filename}" if mirror else arch.url
        if url is None:
            raise DataError(f"{DATASETS[dataset].title} has no direct download link: download "
                            f"{arch.filename} from {arch.page} and run: python -m ssot.data "
                            f"fetch {dataset} --data-root {root} --archive PATH (or name a "
                            f"mirror with --mirror URL or ${MIRROR_ENV})")
        plan.append((arch, None, url))
    if sha256 is not None and len(plan) != 1:
        raise ConfigError(f"The '--sha256' parameter needs exactly one archive to fetch; "
                          f"{len(plan)} are due ({', '.join(a.filename for a, _, _ in plan)}).")
    unpacked: list[Path] = []
    for arch, path, url in plan:
        downloaded = path is None
        if path is None:
            assert url is not None, "an archive without a file is planned with its download URL"
            target = root / DOWNLOADS_DIR / arch.filename
            if not target.is_file():
                say(f"{dataset}: downloading {url}")
                download(url, target, progress=progress)
            path = target
        say(f"{dataset}: verifying {path}")
        record = verify(path, arch, root, sha256, origin=url or str(path))
        say(f"{dataset}: sha256 {record['sha256']} ({record['size']} bytes); unpacking into "
            f"{root / dataset}")
        unpacked += unpack(path, root, dataset, arch, record)
        if downloaded and not keep_download:
            path.unlink()
    return unpacked
