"""The Multi30k loader: local folder, download from a real HTTP server on 127.0.0.1,
checksum mismatch, truncated file, no network, missing split."""

import functools
import http.server
import os
import shutil
import threading
from pathlib import Path

import pytest

from course_utils import multi30k
from course_utils.multi30k import Multi30kError, ensure_files, load_split

DATA = os.environ.get("MULTI30K_DIR")
needs_data = pytest.mark.skipif(not DATA, reason="set MULTI30K_DIR to a copy of Multi30k")
SPLIT = "test_2017_mscoco"  # the smallest split: 461 sentences
NAMES = [f"{SPLIT}.en.gz", f"{SPLIT}.de.gz"]


class Server:
    """A static file server on 127.0.0.1 that counts requests."""

    def __init__(self, folder: Path):
        self.requests = 0
        server = self

        class Handler(http.server.SimpleHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                server.requests += 1
                super().do_GET()

        self.httpd = http.server.ThreadingHTTPServer(
            ("127.0.0.1", 0), functools.partial(Handler, directory=str(folder))
        )
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def served(tmp_path):
    """Folders good/, corrupted/ and truncated/ behind one local server."""
    root = tmp_path / "www"
    for kind in ("good", "corrupted", "truncated"):
        (root / kind).mkdir(parents=True)
        for name in NAMES:
            data = (Path(DATA) / name).read_bytes()
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
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(multi30k.sys, "platform", "linux")
    return tmp_path / "cache" / "course_utils" / "multi30k"


@needs_data
def test_local_folder_gives_aligned_pairs():
    pairs = load_split("val")
    assert len(pairs) == 1014
    english, german = pairs[0]
    assert english and german and english != german
    assert all("\n" not in en + de for en, de in pairs)


@needs_data
def test_root_argument_takes_the_folder_directly(tmp_path, monkeypatch):
    monkeypatch.delenv("MULTI30K_DIR")
    for name in NAMES:
        shutil.copy(Path(DATA) / name, tmp_path / name)
    assert len(load_split(SPLIT, root=tmp_path)) == 461


@needs_data
def test_local_folder_with_a_missing_or_corrupted_file_says_which(tmp_path, monkeypatch):
    monkeypatch.delenv("MULTI30K_DIR")
    shutil.copy(Path(DATA) / NAMES[0], tmp_path / NAMES[0])
    with pytest.raises(Multi30kError, match=rf"{SPLIT}.de.gz is missing.*unset MULTI30K_DIR"):
        ensure_files(SPLIT, root=tmp_path)
    (tmp_path / NAMES[1]).write_bytes(b"not gzip")
    with pytest.raises(Multi30kError, match=r"de.gz does not match its published SHA-256"):
        ensure_files(SPLIT, root=tmp_path)


@needs_data
def test_download_verifies_and_caches(served, cache):
    paths = ensure_files(SPLIT, base_url=f"{served.url}/good")
    assert [p.name for p in paths] == NAMES and all(p.parent == cache for p in paths)
    assert served.requests == 2
    assert len(load_split(SPLIT, base_url=f"{served.url}/good")) == 461
    assert served.requests == 2  # cached: nothing downloaded again


@needs_data
@pytest.mark.parametrize("kind", ["corrupted", "truncated"])
def test_bad_download_is_rejected_and_leaves_no_file(served, cache, kind):
    with pytest.raises(Multi30kError, match="checksum mismatch"):
        ensure_files(SPLIT, base_url=f"{served.url}/{kind}", retries=2)
    assert served.requests == 4  # two files, each tried twice
    assert not cache.exists() or list(cache.iterdir()) == []


@needs_data
def test_corrupted_cache_file_is_reported_and_replaced(served, cache):
    cache.mkdir(parents=True)
    (cache / NAMES[0]).write_bytes(b"half a file")
    shutil.copy(Path(DATA) / NAMES[1], cache / NAMES[1])
    with pytest.warns(UserWarning, match="downloading it again"):
        ensure_files(SPLIT, base_url=f"{served.url}/good")
    assert served.requests == 1
    assert (cache / NAMES[0]).read_bytes() == (Path(DATA) / NAMES[0]).read_bytes()


def test_no_network_says_what_is_missing_where_and_how_to_fix(cache, monkeypatch):
    monkeypatch.setattr(multi30k.time, "sleep", lambda s: None)
    with pytest.raises(Multi30kError) as error:
        ensure_files(SPLIT, base_url="http://127.0.0.1:9", retries=2, timeout=2)
    message = str(error.value)
    for expected in (*NAMES, str(cache), "MULTI30K_DIR", "http://127.0.0.1:9"):
        assert expected in message
    assert not cache.exists() or list(cache.iterdir()) == []


def test_unknown_split_lists_the_valid_ones():
    with pytest.raises(ValueError, match="unknown Multi30k split 'test'; expected one of: train"):
        load_split("test")
