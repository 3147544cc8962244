"""The Multi30k loader, on the committed sample: a local folder, downloads from a real HTTP
server on 127.0.0.1 (good, corrupted, truncated, cut off mid-stream, stalled), a read-only
cache, no network, the copy a student handout bundles (and the sample it carries), and the
full data where MULTI30K_DIR provides it."""

import functools
import gzip
import http.server
import os
import shutil
import threading
import time
from pathlib import Path

import pytest

from course_utils import multi30k
from course_utils.multi30k import (
    Multi30kError,
    ensure_files,
    load_sample_split,
    load_split,
    read_checksums,
    sample_dir,
)

SAMPLE = sample_dir()
SUMS = read_checksums(SAMPLE / "SHA256SUMS")
SPLIT = "test_2017_mscoco"
NAMES = [f"{SPLIT}.en.gz", f"{SPLIT}.de.gz"]
FULL = os.environ.get("MULTI30K_DIR")
needs_full_data = pytest.mark.skipif(not FULL, reason="set MULTI30K_DIR to a copy of Multi30k")


class Server:
    """A static file server on 127.0.0.1 that counts requests.

    Besides plain files it serves ``/chunked/<name>`` as a chunked response cut off halfway
    (the connection closes mid-stream), and ``/stall/<name>`` as headers followed by silence.
    """

    def __init__(self, folder: Path):
        self.requests = 0
        self.stalls: list[threading.Event] = []
        server = self

        class Handler(http.server.SimpleHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                server.requests += 1
                kind, _, name = self.path.lstrip("/").partition("/")
                if kind == "chunked":
                    data = (folder / "good" / name).read_bytes()
                    self.send_response(200)
                    self.send_header("Transfer-Encoding", "chunked")
                    self.end_headers()
                    half = data[: len(data) // 2]
                    self.wfile.write(f"{len(data):x}\r\n".encode() + half)  # promise it all
                    self.wfile.flush()
                    self.close_connection = True
                elif kind == "stall":
                    self.send_response(200)
                    self.send_header("Content-Length", "1000")
                    self.end_headers()
                    self.wfile.flush()
                    done = threading.Event()
                    server.stalls.append(done)
                    done.wait(10)  # say nothing until the test ends (bounded)
                else:
                    super().do_GET()

        self.httpd = http.server.ThreadingHTTPServer(
            ("127.0.0.1", 0), functools.partial(Handler, directory=str(folder))
        )
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        for event in self.stalls:
            event.set()
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def served(tmp_path):
    """Folders good/, corrupted/ and truncated/ of the sample behind one local server."""
    root = tmp_path / "www"
    for kind in ("good", "corrupted", "truncated"):
        (root / kind).mkdir(parents=True)
        for name in NAMES:
            data = (SAMPLE / name).read_bytes()
            if kind == "corrupted":
                data = data[:100] + bytes([data[100] ^ 0xFF]) + data[101:]
            elif kind == "truncated":
                data = data[: len(data) // 2]
            (root / kind / name).write_bytes(data)
    server = Server(root)
    yield server
    server.close()


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.delenv("MULTI30K_DIR", raising=False)
    monkeypatch.delenv("MULTI30K_CACHE", raising=False)
    # no bundled copy (a checkout may have a git-ignored data/multi30k): the cache is used
    monkeypatch.setattr(multi30k, "bundled_dir", lambda: tmp_path / "no-bundled-copy")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(multi30k.sys, "platform", "linux")
    monkeypatch.setattr(multi30k.time, "sleep", lambda s: None)  # no back-off waits in tests
    return tmp_path / "cache" / "course_utils" / "multi30k"


def get(served, kind, **kwargs):
    return ensure_files(SPLIT, base_url=f"{served.url}/{kind}", checksums=SUMS,
                        progress=False, **kwargs)


def test_the_sample_has_every_split_aligned_and_verified():
    for split in multi30k.SPLITS:
        pairs = load_sample_split(split)
        assert len(pairs) == (1500 if split == "train" else 100)
        assert all(en and de and en != de for en, de in pairs)
    assert set(SUMS) == {f"{s}.{lang}.gz" for s in multi30k.SPLITS for lang in ("en", "de")}


def test_the_sample_is_the_start_of_the_published_files():
    # the first lines of the dataset's val split, as published
    english, german = load_sample_split("val")[0]
    assert english.startswith("A group of men are loading cotton")
    assert german.startswith("Eine Gruppe von Männern lädt Baumwolle")


def test_root_argument_takes_the_folder_directly(tmp_path, monkeypatch):
    monkeypatch.delenv("MULTI30K_DIR", raising=False)
    for name in NAMES:
        shutil.copy(SAMPLE / name, tmp_path / name)
    assert len(load_split(SPLIT, root=tmp_path, checksums=SUMS)) == 100


def test_local_folder_with_a_missing_or_corrupted_file_says_which(tmp_path, monkeypatch):
    monkeypatch.delenv("MULTI30K_DIR", raising=False)
    shutil.copy(SAMPLE / NAMES[0], tmp_path / NAMES[0])
    with pytest.raises(Multi30kError, match=rf"{SPLIT}.de.gz is missing.*unset MULTI30K_DIR"):
        ensure_files(SPLIT, root=tmp_path, checksums=SUMS)
    (tmp_path / NAMES[1]).write_bytes(b"not gzip")
    with pytest.raises(Multi30kError, match=r"de.gz does not match its published SHA-256"):
        ensure_files(SPLIT, root=tmp_path, checksums=SUMS)


def test_multi30k_dir_naming_a_file_or_nothing_says_so(tmp_path, monkeypatch):
    (tmp_path / "train.en.gz").write_bytes(b"")
    monkeypatch.setenv("MULTI30K_DIR", str(tmp_path / "train.en.gz"))
    with pytest.raises(Multi30kError, match=r"MULTI30K_DIR names a file, not a folder"):
        load_split("val")
    monkeypatch.setenv("MULTI30K_DIR", str(tmp_path / "nowhere"))
    with pytest.raises(Multi30kError, match=r"MULTI30K_DIR names a folder that does not exist"):
        load_split("val")


def course_folder(tmp_path, monkeypatch, *, bundled=True):
    """A course folder at ``tmp_path/course``, as a handout has it with ``--multi30k``:
    ``data/multi30k`` (here the sample's files stand in for the full data)."""
    folder = tmp_path / "course"
    folder.mkdir(parents=True)
    if bundled:
        shutil.copytree(SAMPLE, folder / "data" / "multi30k",
                        ignore=shutil.ignore_patterns("*.py", "*.md"))
    monkeypatch.setattr(multi30k, "COURSE_FOLDER", folder)
    monkeypatch.delenv("MULTI30K_DIR", raising=False)
    monkeypatch.setenv("MULTI30K_CACHE", str(tmp_path / "cache"))
    return folder


def test_a_bundled_copy_is_read_without_downloading(tmp_path, monkeypatch):
    folder = course_folder(tmp_path, monkeypatch)
    assert multi30k.bundled_dir() == folder / "data" / "multi30k"
    paths = ensure_files(SPLIT, base_url="http://127.0.0.1:9", checksums=SUMS, retries=1,
                         timeout=1, progress=False)  # a download would fail
    assert [p.parent for p in paths] == [folder / "data" / "multi30k"] * 2
    assert not (tmp_path / "cache").exists()
    # MULTI30K_DIR still wins over it
    elsewhere = tmp_path / "elsewhere"
    shutil.copytree(SAMPLE, elsewhere)
    monkeypatch.setenv("MULTI30K_DIR", str(elsewhere))
    assert ensure_files(SPLIT, checksums=SUMS)[0].parent == elsewhere


def test_a_damaged_bundled_copy_says_so_and_what_to_do(tmp_path, monkeypatch):
    folder = course_folder(tmp_path, monkeypatch)
    (folder / "data" / "multi30k" / NAMES[1]).write_bytes(b"not gzip")
    with pytest.raises(Multi30kError, match=r"given by the copy bundled with the course\): "
                                            r".*de.gz does not match.*remove that folder"):
        ensure_files(SPLIT, checksums=SUMS, progress=False)


def test_the_sample_is_the_checkouts_and_ships_inside_a_handouts_package(tmp_path, monkeypatch):
    """In the course's checkout the sample lies with the tests; a handout carries it as package
    data, found beside the module wherever the handout is installed (Colab's site-packages), and
    declared as package data."""
    import tomllib

    assert multi30k.sample_dir() == multi30k.COURSE_FOLDER / "tests" / "data" / "multi30k-sample"
    assert len(load_sample_split("val")) == 100
    package_copy = tmp_path / "multi30k_sample"  # a handout's, beside its module
    shutil.copytree(multi30k.sample_dir(), package_copy)
    monkeypatch.setattr(multi30k, "SAMPLE_FOLDER", package_copy)
    assert multi30k.sample_dir() == package_copy and len(load_sample_split("val")) == 100
    root = Path(multi30k.__file__).parents[1]
    declared = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-data"]["course_utils"]
    shipped = {f"multi30k_sample/{p.name}" for p in multi30k.sample_dir().iterdir()}
    assert {name for name in shipped if any(Path(name).match(g) for g in declared)} == shipped
    monkeypatch.setattr(multi30k, "SAMPLE_FOLDER", tmp_path / "nowhere")
    monkeypatch.setattr(multi30k, "COURSE_FOLDER", tmp_path / "nowhere")
    with pytest.raises(Multi30kError, match=r"sample is not in .*nowhere.*reinstall the course"):
        load_sample_split("val")


def test_copy_dataset_copies_every_file_verified(tmp_path, monkeypatch):
    monkeypatch.setattr(multi30k, "SHA256", SUMS)  # the sample stands in for the published data
    source = tmp_path / "source"
    shutil.copytree(SAMPLE, source)
    copied = multi30k.copy_dataset(tmp_path / "out", root=source)
    assert sorted(p.name for p in copied) == sorted(SUMS)
    assert read_checksums(tmp_path / "out" / "SHA256SUMS") == SUMS
    assert all(p.read_bytes() == (source / p.name).read_bytes() for p in copied)
    # a SHA256SUMS beside the files that disagrees with the published sums is refused ...
    listed = (source / "SHA256SUMS").read_text().replace(SUMS["val.de.gz"], "0" * 64)
    (source / "SHA256SUMS").write_text(listed)
    with pytest.raises(Multi30kError, match=r"disagrees with the published SHA-256 sums for "
                                            r"val.de.gz"):
        multi30k.copy_dataset(tmp_path / "out2", root=source)
    # ... and so is a damaged file
    shutil.copy(SAMPLE / "SHA256SUMS", source / "SHA256SUMS")
    (source / "train.en.gz").write_bytes(b"truncated")
    with pytest.raises(Multi30kError, match=r"train.en.gz does not match"):
        multi30k.copy_dataset(tmp_path / "out3", root=source)
    assert not (tmp_path / "out2").exists() and not (tmp_path / "out3").exists()


def test_download_verifies_and_caches(served, cache):
    paths = get(served, "good")
    assert [p.name for p in paths] == NAMES and all(p.parent == cache for p in paths)
    assert served.requests == 2
    pairs = load_split(SPLIT, base_url=f"{served.url}/good", checksums=SUMS, progress=False)
    assert len(pairs) == 100
    assert served.requests == 2  # cached: nothing downloaded again


def test_download_shows_progress_in_bytes(served, cache, capsys):
    ensure_files(SPLIT, base_url=f"{served.url}/good", checksums=SUMS)
    err = capsys.readouterr().err
    assert f"Downloading {NAMES[0]}" in err and "gives up after 3 tries of 20 s" in err
    assert "B/s" in err or "kB" in err or "B " in err  # tqdm's byte counter


@pytest.mark.parametrize("kind", ["corrupted", "truncated"])
def test_bad_download_is_rejected_and_leaves_no_file(served, cache, kind):
    with pytest.raises(Multi30kError, match="checksum mismatch"):
        get(served, kind, retries=2)
    assert served.requests == 2  # the first file, tried twice; the second is not tried
    assert not cache.exists() or list(cache.iterdir()) == []


def test_a_stream_cut_off_mid_file_is_retried_then_a_clear_error(served, cache):
    with pytest.raises(Multi30kError, match="closed mid-file") as error:
        get(served, "chunked", retries=3)
    assert served.requests == 3
    assert "MULTI30K_DIR" in str(error.value)
    assert not cache.exists() or list(cache.iterdir()) == []


def test_a_stalled_server_costs_a_bounded_and_stated_wait(served, cache):
    start = time.perf_counter()
    with pytest.raises(Multi30kError, match=r"no data from .* for 0.5 s \(2 tries\)") as error:
        get(served, "stall", retries=2, timeout=0.5)
    waited = time.perf_counter() - start
    assert waited < 5, f"waited {waited:.1f} s on a stalled server"
    assert served.requests == 2  # the second file is not tried after the first stalled
    assert f"{NAMES[1]}: not tried" in str(error.value)


def test_corrupted_cache_file_is_reported_and_replaced(served, cache):
    cache.mkdir(parents=True)
    (cache / NAMES[0]).write_bytes(b"half a file")
    shutil.copy(SAMPLE / NAMES[1], cache / NAMES[1])
    with pytest.warns(UserWarning, match="downloading it again"):
        get(served, "good")
    assert served.requests == 1
    assert (cache / NAMES[0]).read_bytes() == (SAMPLE / NAMES[0]).read_bytes()


def test_a_read_only_cache_says_so_and_what_to_do(served, cache, monkeypatch):
    real = multi30k.tempfile.TemporaryFile

    def read_only(*args, dir=None, **kwargs):
        if dir is not None and Path(dir) == cache:
            raise OSError(30, "Read-only file system")
        return real(*args, dir=dir, **kwargs)

    monkeypatch.setattr(multi30k.tempfile, "TemporaryFile", read_only)
    with pytest.raises(Multi30kError) as error:
        get(served, "good")
    message = str(error.value)
    assert "read-only" in message and "MULTI30K_CACHE" in message and str(cache) in message
    assert "With no network" not in message  # not the download advice
    assert served.requests == 0  # nothing was fetched only to be thrown away


@pytest.mark.skipif(os.geteuid() == 0, reason="root can write into a read-only folder")
def test_a_cache_folder_without_write_permission_says_read_only(served, cache):
    cache.mkdir(parents=True)
    cache.chmod(0o500)
    try:
        with pytest.raises(Multi30kError, match="read-only or cannot be created"):
            get(served, "good")
    finally:
        cache.chmod(0o700)


def test_multi30k_cache_moves_the_cache(served, tmp_path, monkeypatch):
    monkeypatch.delenv("MULTI30K_DIR", raising=False)
    monkeypatch.setenv("MULTI30K_CACHE", str(tmp_path / "elsewhere"))
    paths = get(served, "good")
    assert all(p.parent == tmp_path / "elsewhere" for p in paths)


def test_no_network_says_what_is_missing_where_and_how_to_fix(cache):
    with pytest.raises(Multi30kError) as error:
        ensure_files(SPLIT, base_url="http://127.0.0.1:9", retries=2, timeout=2, progress=False)
    message = str(error.value)
    for expected in (*NAMES, str(cache), "MULTI30K_DIR", "http://127.0.0.1:9"):
        assert expected in message
    assert not cache.exists() or list(cache.iterdir()) == []


def test_a_file_that_is_not_gzip_text_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.delenv("MULTI30K_DIR", raising=False)
    for name in NAMES:
        (tmp_path / name).write_bytes(b"plain text, not gzip\n")
    sums = {name: multi30k._sha256(tmp_path / name) for name in NAMES}
    with pytest.raises(Multi30kError, match="not a readable gzipped UTF-8 text file"):
        load_split(SPLIT, root=tmp_path, checksums=sums)
    with gzip.open(tmp_path / NAMES[1], "wb") as handle:
        handle.write(b"one line\n")
    with gzip.open(tmp_path / NAMES[0], "wb") as handle:
        handle.write(b"one line\ntwo lines\n")
    sums = {name: multi30k._sha256(tmp_path / name) for name in NAMES}
    with pytest.raises(Multi30kError, match="has 2 lines but .* has 1"):
        load_split(SPLIT, root=tmp_path, checksums=sums)


def test_unknown_split_lists_the_valid_ones():
    with pytest.raises(ValueError, match="unknown Multi30k split 'test'; expected one of: train"):
        load_split("test")


@needs_full_data
def test_the_full_data_in_multi30k_dir_has_the_published_sizes():
    sizes = {"train": 29_000, "val": 1_014, "test_2016_flickr": 1_000,
             "test_2017_flickr": 1_000, "test_2017_mscoco": 461, "test_2018_flickr": 1_071}
    for split, n in sizes.items():
        pairs = load_split(split)
        assert len(pairs) == n
        assert pairs[:100] == load_sample_split(split)[:100]  # the sample is its beginning
