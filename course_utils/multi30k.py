"""Multi30k (task 1, English-German): find, download, verify and read the raw files.

Taught in notebook 4, section 1 ("The data"), which every later translation notebook reads the
same way.

Elliott, Frank, Sima'an & Specia, "Multi30K: Multilingual English-German Image Descriptions"
(2016). The files are the dataset's own, from its canonical location::

    https://raw.githubusercontent.com/multi30k/dataset/master/data/task1/raw/<split>.<lang>.gz

Where the files are looked for, in order:

1. the ``root`` argument, or else the ``MULTI30K_DIR`` environment variable: a folder that
   already holds the ``.gz`` files (nothing is downloaded into it);
2. the copy a student handout bundles for a classroom without internet (``course-handout
   --multi30k``): ``data/multi30k/`` beside the ``course_utils`` package (:func:`bundled_dir`);
3. otherwise a per-user cache folder (``MULTI30K_CACHE``, else
   ``~/.cache/course_utils/multi30k`` on Linux), where missing files are downloaded.

Every file is checked against the SHA-256 sum published with the dataset (shipped below).
Downloads show their progress in bytes, are retried, written to a temporary file and moved
into place only once their checksum matches, so an interrupted or failed download leaves no
file behind. A dead connection costs at most ``retries * timeout`` seconds (plus a few seconds
of back-off) per file, and once a file could not be fetched the others are not tried. A
corrupted or truncated file in the cache is reported and downloaded again; one in a folder
you provided is reported with what to do.

:func:`load_sample_split` reads the small sample that ships inside the package
(``course_utils/multi30k_sample``: the first 1,500 training pairs and 100 of every other
split, so it is there wherever the package is installed, Colab included), which smoke-test
runs (``COURSE_QUICK``) use instead of the full data. :func:`copy_dataset` writes a verified copy
of the full data into a folder (what ``course-handout --multi30k`` bundles).
"""

from __future__ import annotations

import gzip
import hashlib
import http.client
import os
import shutil
import sys
import tempfile
import time
import urllib.error
import urllib.request
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from course_utils.files import COURSE_FOLDER, atomic_path

__all__ = [
    "BASE_URL",
    "LANGUAGES",
    "SPLITS",
    "Multi30kError",
    "bundled_dir",
    "cache_dir",
    "copy_dataset",
    "ensure_files",
    "load_sample_split",
    "load_split",
    "read_checksums",
    "sample_dir",
]

BASE_URL = "https://raw.githubusercontent.com/multi30k/dataset/master/data/task1/raw"
SPLITS = (
    "train",
    "val",
    "test_2016_flickr",
    "test_2017_flickr",
    "test_2017_mscoco",
    "test_2018_flickr",
)
LANGUAGES = ("en", "de")

#: SHA-256 of the published files.
SHA256 = {
    "test_2016_flickr.de.gz": "9204244e408ccb38d2a55cfcd344df15005fc42a07a6e55ca6c52b6ababb8cc8",
    "test_2016_flickr.en.gz": "611d361c6334bc7246101d48097c13cf5c4413c5befc793cc629934359d532d9",
    "test_2017_flickr.de.gz": "a2c89666db00c495cd8513b9d708d5a3acc205d7de312ef2bf5fb7ebc1540aee",
    "test_2017_flickr.en.gz": "76a444ee25172e72695cddb13ae4a3bda59430617be88e0bb46b60504f054074",
    "test_2017_mscoco.de.gz": "799e4854c25d601cb6cb6be29eabe5667734c61ace2f495e03e429031a0bc338",
    "test_2017_mscoco.en.gz": "aab300bfb4427697987e02cd0aacd44bfe8aa50456231b6474c08038bbed2b58",
    "test_2018_flickr.de.gz": "ddd0130c7d97482dc5197a02141dae8dd79f20f03586c480d675c09a32daf608",
    "test_2018_flickr.en.gz": "ef4f4844037d4c5dea75c9a8ed5fd78905967a26f67c255e230cc9780032654d",
    "train.de.gz": "726e39b2fa9eb9ffb6dc763fb35a179f80fae06ffc5d28b6ace5faa883de28a6",
    "train.en.gz": "d79cfa999dd4c51d2cb42499b6796d5a882c3a8a961923c25a898c90f8bbd56f",
    "val.de.gz": "f0cba2f995189cf5770f29a8a9a537a3ad3f51657ad873405082ff6863a5e75a",
    "val.en.gz": "14f7d25ddd868909a9213e361768460edcacdd6ab9d1e77b92560dc10c10dc28",
}


class Multi30kError(RuntimeError):
    """The files could not be found, downloaded or verified; the message says what to do."""


def cache_dir() -> Path:
    """The per-user cache folder for the downloaded files (``MULTI30K_CACHE`` overrides it)."""
    configured = os.environ.get("MULTI30K_CACHE")
    if configured:
        return Path(configured).expanduser()
    if sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA", Path.home() / "AppData" / "Local"))
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Caches"
    else:
        base = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache"))
    return base / "course_utils" / "multi30k"


#: The small sample where a handout puts it: package data of ``course_utils`` (pyproject.toml's
#: package-data), so that an installed handout (Colab's site-packages) has it.
SAMPLE_FOLDER = Path(__file__).resolve().parent / "multi30k_sample"
#: The small sample in the course's own checkout (relative to it), with its tests:
#: ``course-handout`` copies it into the handout's package.
CHECKOUT_SAMPLE = Path("tests", "data", "multi30k-sample")


def sample_dir() -> Path:
    """The small sample: the package's copy in a handout or an installed handout, else the
    checkout's, beside the tests."""
    return SAMPLE_FOLDER if SAMPLE_FOLDER.is_dir() else COURSE_FOLDER / CHECKOUT_SAMPLE


def bundled_dir() -> Path:
    """Where a student handout bundles the full data (``course-handout --multi30k``):
    ``data/multi30k/`` beside the package. Used, when it exists, unless ``MULTI30K_DIR`` or
    a ``root`` argument names another folder; nothing is then downloaded."""
    return COURSE_FOLDER / "data" / "multi30k"


def read_checksums(path: str | Path) -> dict[str, str]:
    """``{file name: sha256}`` from a ``SHA256SUMS`` file (``<hex>  <name>`` per line)."""
    sums = {}
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        parts = line.split()
        if len(parts) != 2 or len(parts[0]) != 64:
            raise Multi30kError(f"{path}, line {number}: expected '<sha256>  <file name>'; "
                                f"got {line!r}")
        sums[parts[1].lstrip("*")] = parts[0].lower()
    return sums


def _filenames(split: str) -> list[str]:
    if split not in SPLITS:
        raise ValueError(f"unknown Multi30k split {split!r}; expected one of: {', '.join(SPLITS)}")
    return [f"{split}.{lang}.gz" for lang in LANGUAGES]


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


class _ChecksumMismatch(OSError):
    """The bytes arrived, but they are not the published file."""


def _download(url: str, target: Path, expected: str, retries: int, timeout: float,
              progress: bool) -> None:
    """Fetch ``url`` into ``target`` atomically, retrying; raise OSError on final failure.

    ``timeout`` bounds each wait for data (connecting, or between two blocks), so a dead or
    stalled server costs at most ``retries * timeout`` seconds plus the back-off.
    """
    last: Exception | None = None
    for attempt in range(1, retries + 1):
        try:
            with atomic_path(target) as tmp:
                with urllib.request.urlopen(url, timeout=timeout) as response:
                    size = response.headers.get("Content-Length")
                    with open(tmp, "wb") as out, tqdm(
                        total=int(size) if size and size.isdigit() else None, unit="B",
                        unit_scale=True, unit_divisor=1024, desc=target.name,
                        disable=not progress, mininterval=0.5,
                    ) as bar:
                        while block := response.read(1 << 16):
                            out.write(block)
                            bar.update(len(block))
                got = _sha256(tmp)
                if got != expected:
                    raise _ChecksumMismatch(
                        f"checksum mismatch for {url}: got sha256 {got[:12]}..., expected "
                        f"{expected[:12]}... (truncated or corrupted download)")
            return
        except TimeoutError:
            last = TimeoutError(f"no data from {url} for {timeout:g} s "
                                f"({retries} tries)")
        except http.client.IncompleteRead as error:  # a chunked response cut off mid-stream
            last = OSError(f"the connection closed mid-file after {len(error.partial):,} "
                           f"bytes ({retries} tries)")
        except (OSError, http.client.HTTPException) as error:  # URLError is an OSError too
            last = error
        if attempt < retries:
            time.sleep(min(2.0 ** (attempt - 1), 8.0) * 0.5)
    raise last if isinstance(last, OSError) else OSError(str(last))


def _provided_folder(root: str | Path, given_by: str) -> Path:
    folder = Path(root).expanduser()
    if folder.exists() and not folder.is_dir():
        raise Multi30kError(f"{given_by} names a file, not a folder: {folder}. Set it to the "
                            "folder that holds the Multi30k .gz files.")
    if not folder.exists():
        raise Multi30kError(f"{given_by} names a folder that does not exist: {folder}. Set it "
                            "to the folder that holds the Multi30k .gz files, or unset "
                            "MULTI30K_DIR to let the course download them into its cache.")
    return folder


def _writable_cache(folder: Path) -> None:
    """Raise Multi30kError unless files can be created in ``folder`` (made if missing)."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as error:
        reason = error.strerror or type(error).__name__
        raise Multi30kError(
            f"the Multi30k cache folder {folder} is read-only or cannot be created "
            f"({reason}), so the files cannot be downloaded there. Set MULTI30K_CACHE to a "
            "folder you can write to (e.g. MULTI30K_CACHE=$HOME/multi30k), or MULTI30K_DIR "
            "to a folder that already holds the files."
        ) from error


def ensure_files(
    split: str,
    root: str | Path | None = None,
    *,
    base_url: str | None = None,
    retries: int = 3,
    timeout: float = 20.0,
    checksums: Mapping[str, str] | None = None,
    progress: bool = True,
) -> list[Path]:
    """Paths of the English and German files of ``split``, verified; downloads if needed.

    ``root`` (or ``MULTI30K_DIR``) names a folder that already holds the files; otherwise the
    cache folder is used and missing or corrupted files are downloaded from ``base_url``
    (default: the dataset's canonical location; ``MULTI30K_URL`` overrides it). ``checksums``
    replaces the published SHA-256 sums (for the sample). ``timeout`` is the longest wait
    for data; a dead connection costs at most about ``retries * timeout`` seconds.
    """
    names = _filenames(split)
    if retries < 1 or timeout <= 0:
        raise ValueError(f"retries must be >= 1 and timeout > 0; got {retries} and {timeout}")
    sums = dict(SHA256 if checksums is None else checksums)
    unknown = [name for name in names if name not in sums]
    if unknown:
        raise Multi30kError(f"no SHA-256 sum known for {', '.join(unknown)}")
    given_by = "the root argument" if root is not None else "MULTI30K_DIR"
    root = root if root is not None else os.environ.get("MULTI30K_DIR") or None
    if root is None and bundled_dir().is_dir():
        root, given_by = bundled_dir(), "the copy bundled with the course"
    base_url = (base_url or os.environ.get("MULTI30K_URL") or BASE_URL).rstrip("/")

    if root is not None:
        folder = _provided_folder(root, given_by)
        problems = []
        for name in names:
            path = folder / name
            if not path.is_file():
                problems.append(f"{name} is missing")
            elif _sha256(path) != sums[name]:
                problems.append(f"{name} does not match its published SHA-256 sum "
                                "(corrupted or truncated)")
        if problems:
            remedy = ("remove that folder to let the course download them into its cache"
                      if given_by.startswith("the copy bundled") else "unset MULTI30K_DIR to "
                      "let the course download them into its cache")
            raise Multi30kError(
                f"Multi30k files in {folder} (given by {given_by}): "
                + "; ".join(problems)
                + f". Put the original files there (from {base_url}/<file>), or {remedy}."
            )
        return [folder / name for name in names]

    folder = cache_dir()
    paths: list[Path] = []
    failures: list[str] = []
    for name in names:
        path = folder / name
        if path.is_file() and _sha256(path) != sums[name]:
            warnings.warn(f"{path} does not match its published SHA-256 sum (corrupted or "
                          "truncated); downloading it again", stacklevel=2)
            path.unlink()
        if path.is_file():
            paths.append(path)
            continue
        if failures:  # the server already failed us: do not make the student wait again
            failures.append(f"{name}: not tried after the failure above")
            continue
        _writable_cache(folder)
        if progress:
            print(f"Downloading {name} from {base_url} into {folder} (gives up after "
                  f"{retries} tries of {timeout:g} s without data)", file=sys.stderr)
        try:
            _download(f"{base_url}/{name}", path, sums[name], retries, timeout, progress)
        except OSError as error:
            failures.append(f"{name}: {error}")
            continue
        paths.append(path)
    if failures:
        raise Multi30kError(
            f"could not get the Multi30k files for split {split!r}. Looked in {folder}; "
            f"downloading from {base_url} failed: " + "; ".join(failures)
            + ". With no network, copy the files into that folder, or set MULTI30K_DIR to a "
            "folder that holds them (e.g. MULTI30K_DIR=/path/to/multi30k)."
        )
    return paths


def load_split(
    split: str, root: str | Path | None = None, **kwargs: Any
) -> list[tuple[str, str]]:
    """Aligned ``(english, german)`` sentence pairs of ``split``, as raw (untokenized) text."""
    en_path, de_path = ensure_files(split, root, **kwargs)
    english = _read_lines(en_path)
    german = _read_lines(de_path)
    if len(english) != len(german):
        raise Multi30kError(f"{en_path.name} has {len(english)} lines but {de_path.name} has "
                            f"{len(german)}: the files are not a matching pair")
    return list(zip(english, german))


def load_sample_split(split: str) -> list[tuple[str, str]]:
    """Pairs of ``split`` from the committed sample (verified against its ``SHA256SUMS``)."""
    folder = sample_dir()
    if not (folder / "SHA256SUMS").is_file():
        raise Multi30kError(
            f"the Multi30k sample is not in {folder} (a handout carries it inside the "
            "course_utils package: reinstall the course). Run without COURSE_QUICK to use the "
            "full data."
        )
    return load_split(split, root=folder, checksums=read_checksums(folder / "SHA256SUMS"))


def copy_dataset(out: str | Path, root: str | Path | None = None) -> list[Path]:
    """Copy every file of Multi30k, verified, into the new folder ``out``, with a
    ``SHA256SUMS``; return the copied files.

    The files come from ``root`` (or ``MULTI30K_DIR``), else from the cache, downloaded where
    missing (:func:`ensure_files`), and each is checked against its published SHA-256 sum. A
    ``SHA256SUMS`` beside the source files must agree with the published sums. Raises
    :class:`Multi30kError` when a file is missing, corrupted or disagrees.
    """
    out = Path(out)
    sources = [path for split in SPLITS for path in ensure_files(split, root, progress=False)]
    listed = sources[0].parent / "SHA256SUMS"
    if listed.is_file():
        differ = sorted(name for name, digest in read_checksums(listed).items()
                        if name in SHA256 and SHA256[name] != digest)
        if differ:
            raise Multi30kError(f"{listed} disagrees with the published SHA-256 sums for "
                                f"{', '.join(differ)}; the files were not copied")
    out.mkdir(parents=True)
    copied = []
    for source in sources:
        target = out / source.name
        shutil.copyfile(source, target)
        if _sha256(target) != SHA256[source.name]:
            raise Multi30kError(f"{target} does not match its published SHA-256 sum after "
                                f"copying it from {source}")
        copied.append(target)
    (out / "SHA256SUMS").write_text("".join(f"{SHA256[p.name]}  {p.name}\n" for p in copied),
                                    encoding="utf-8")
    return copied


def _read_lines(path: Path) -> list[str]:
    try:
        with gzip.open(path, "rt", encoding="utf-8") as handle:
            return [line.rstrip("\n") for line in handle]
    except (OSError, EOFError, UnicodeDecodeError) as error:
        raise Multi30kError(f"{path} is not a readable gzipped UTF-8 text file: {error}") from error
