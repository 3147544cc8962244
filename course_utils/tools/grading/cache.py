"""Reusing the results of unchanged submissions: each graded submission leaves an entry in the
output folder's ``.cache/``, keyed by a digest of the submission, the course's code, the limits
and the sandbox, and signed with a secret kept outside the output folder (in the grader's
configuration folder, which the sandbox hides), so that a forged entry is regraded."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
from dataclasses import asdict
from pathlib import Path

import course_utils
from course_utils.files import atomic_path, write_text_atomically
from course_utils.tools.grading.limits import GradingLimits, Protection
from course_utils.tools.grading.results import GradeResult

__all__ = ["PACKAGE_DIR", "REUSED", "cache_key", "key_folder", "reused", "signature", "store",
           "submission_digest"]

#: The package whose code a grading run executes: the checks, and everything they call.
PACKAGE_DIR = Path(course_utils.__file__).resolve().parent

#: Statuses whose results are reused by a later run; a timeout or a crash is always retried.
REUSED = ("graded", "not a notebook")


def submission_digest(path: Path, exercise_id: str, limits: GradingLimits | None = None,
                      protection: Protection | None = None) -> str:
    """The key for reusing a grade: changes when the submission changes, any code of the
    course package does (the checks call into other modules, such as ``alignment.py``), or
    the limits (as given, before any calibration) or the sandbox and memory enforcement under
    which it was graded."""
    digest = hashlib.sha256(path.read_bytes())
    digest.update(exercise_id.encode())
    digest.update(repr((limits, protection)).encode())
    for source in sorted(PACKAGE_DIR.rglob("*.py")):
        digest.update(str(source.relative_to(PACKAGE_DIR)).encode())
        digest.update(source.read_bytes())
    return digest.hexdigest()


def key_folder() -> Path:
    """The grader's configuration folder, where the key that signs the cache is kept."""
    return Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config") / "course-grade"


def cache_key() -> bytes:
    """The secret that signs cache entries, kept outside the output folder (in the grader's
    own configuration folder, which the sandbox hides), so that a forged entry is regraded."""
    folder = key_folder()
    key_file = folder / "cache-key"
    if not key_file.exists():
        folder.mkdir(parents=True, exist_ok=True)
        with atomic_path(key_file) as tmp:
            tmp.write_bytes(secrets.token_bytes(32))
            tmp.chmod(0o600)
    return key_file.read_bytes()


def signature(key: bytes, digest: str, result: dict) -> str:
    payload = json.dumps({"digest": digest, "result": result}, sort_keys=True).encode()
    return hmac.new(key, payload, hashlib.sha256).hexdigest()


def reused(cached: Path, digest: str, key: bytes) -> GradeResult | None:
    """The cached result, if it is for this digest, signed by us, and worth reusing."""
    try:
        data = json.loads(cached.read_text())
        if data.get("digest") != digest or not hmac.compare_digest(
                str(data.get("signature", "")), signature(key, digest, data["result"])):
            return None
        result = GradeResult(**data["result"])
    except (OSError, ValueError, TypeError, KeyError):
        return None
    return result if result.status in REUSED else None


def store(cached: Path, digest: str, key: bytes, result: GradeResult) -> None:
    """Write ``result`` as the signed cache entry ``cached`` for ``digest``."""
    record = asdict(result)
    write_text_atomically(cached, json.dumps(
        {"digest": digest, "result": record, "signature": signature(key, digest, record)}))
