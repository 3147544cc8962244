"""Rebuild the Multi30k sample (``course_utils/multi30k_sample/``) from a full copy of
Multi30k (task 1, raw):

    python tests/data/make_multi30k_sample.py /path/to/multi30k

Keeps the first 1,500 sentence pairs of ``train`` and the first 100 of every other split,
gzipped like the originals (UTF-8, one sentence per line) but with a fixed timestamp, so the
files and ``SHA256SUMS`` come out byte-identical every time.
"""

import gzip
import hashlib
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent / "multi30k-sample"
SIZES = {"train": 1500, "val": 100, "test_2016_flickr": 100, "test_2017_flickr": 100,
         "test_2017_mscoco": 100, "test_2018_flickr": 100}


def main(source: Path) -> None:
    sums = []
    for split, n in SIZES.items():
        for lang in ("en", "de"):
            name = f"{split}.{lang}.gz"
            with gzip.open(source / name, "rb") as handle:
                lines = handle.read().split(b"\n")[:n]
            data = b"\n".join(lines) + b"\n"
            with open(HERE / name, "wb") as raw:
                with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as out:
                    out.write(data)
            sums.append(f"{hashlib.sha256((HERE / name).read_bytes()).hexdigest()}  {name}\n")
    (HERE / "SHA256SUMS").write_text("".join(sorted(sums, key=lambda s: s.split()[1])))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
