"""Your attention model, carried from notebook to notebook.

The student writes three pieces in the lecture: the attention module's ``forward`` (notebook 2,
section 3, ``MyBahdanauAttention``), the decoder's ``step`` and its teacher-forcing ``forward``
(notebook 3, section 2, ``Decoder`` and ``TeacherForcing``). When the check under one of them
passes (:mod:`course_utils.checks.lecture`), :func:`keep` writes the class that passed, as text,
into ``yours/`` in the runs folder (``runs/yours/attention.py`` beside the notebook, or under
``COURSE_RUNS_DIR``), with a digest of the cell it came from; when the check fails, or finds the
piece unwritten, :func:`forget` removes it, so that the later notebooks use what the last check
said. Notebook 3 trains its decoder with the kept attention module
(:func:`with_your_attention`); exercise E10.2 builds its attention model from all three kept
pieces (:func:`your_attention_decoder`), with no paste. A piece that was never kept is the
library's, and the cell that builds the model says so in one line.

The pieces are kept as text, not pickled: a student can open the file and read what notebook 3
trains, and loading it compiles that text under the file's own name, so ``inspect.getsource``
shows it. The model keeps the library's parameter names, so its checkpoint loads into the
library's model (exercise E10.3 reads it that way).
"""

from __future__ import annotations

import ast
import datetime as dt
import linecache
from dataclasses import replace
from pathlib import Path

from torch import nn

from course_utils.attention import Attention, BahdanauAttention
from course_utils.checkpoints import display_path
from course_utils.checks.cells import cell_digest
from course_utils.config import lecture_runs_dirs, runs_dir
from course_utils.files import write_text_atomically
from course_utils.models import AttentionDecoder, GRUDecoder

__all__ = ["FOLDER", "PIECES", "forget", "keep", "kept", "origin", "uses_only_yours",
           "with_your_attention", "your_attention_decoder"]

#: The folder of the runs folder that holds the kept pieces.
FOLDER = "yours"
#: Each piece: (the class the notebook defines, the file it is kept in, where it is written).
PIECES = {
    "attention": ("MyBahdanauAttention", "attention.py", "notebook 2, section 3"),
    "step": ("Decoder", "step.py", "notebook 3, section 2"),
    "teacher forcing": ("TeacherForcing", "teacher_forcing.py", "notebook 3, section 2"),
}
#: What every kept piece may use without importing it (the notebooks' own imports).
PRELUDE = ("import math\n\nimport torch\nimport torch.nn.functional as F\nfrom torch import nn\n\n"
           "from course_utils.models import AttentionDecoder\n")


def _piece(name: str) -> tuple[str, str, str]:
    if name not in PIECES:
        raise ValueError(f"no piece {name!r}; expected one of {', '.join(map(repr, PIECES))}")
    return PIECES[name]


def _cell_of(cls: type) -> tuple[str, str] | None:
    """(the text of the cell, or file, that defines ``cls``, the class's own source in it)."""
    for member in vars(cls).values():
        code = getattr(getattr(member, "__func__", member), "__code__", None)
        if code is None:
            continue
        text = "".join(linecache.getlines(code.co_filename))
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        for node in tree.body:
            if isinstance(node, ast.ClassDef) and node.name == cls.__name__:
                imports = [ast.get_source_segment(text, n) or "" for n in tree.body
                           if isinstance(n, (ast.Import, ast.ImportFrom))]
                source = ast.get_source_segment(text, node) or ""
                return text, "\n".join([*imports, "", source]) if imports else source
    return None


def _path(name: str, root: Path | None = None) -> Path:
    return (root if root is not None else runs_dir()) / FOLDER / _piece(name)[1]


def keep(name: str, cls: type) -> Path | None:
    """Write ``cls``, the class whose check of piece ``name`` just passed, into the runs
    folder; the file's path, or None when its source cannot be read (a class not written in
    a cell or a file)."""
    class_name, _, where = _piece(name)
    found = _cell_of(cls)
    if found is None:
        forget(name)
        return None
    cell, source = found
    header = (f"# Your {class_name}, kept by course_utils when its check passed ({where}), "
              f"{dt.datetime.now().isoformat(timespec='seconds')}.\n"
              "# Notebook 3 and exercise E10.2 build your attention model from it; the check "
              "removes it\n# when it no longer passes. Edit the notebook, not this file.\n"
              f"# cell sha256: {cell_digest(cell)}\n\n")
    path = _path(name)
    write_text_atomically(path, header + source.rstrip() + "\n")
    return path


def forget(name: str) -> None:
    """Remove the kept piece ``name``, if any: its check no longer passes."""
    _path(name).unlink(missing_ok=True)


def _found(name: str) -> Path | None:
    """The kept file of piece ``name`` in the first runs folder that holds one (a notebook's
    own, then ``notebooks/runs`` seen from ``exercises/``), or None."""
    for root in lecture_runs_dirs():
        path = _path(name, root)
        if path.is_file():
            return path
    return None


def kept(name: str, namespace: dict | None = None) -> type | None:
    """The class kept for piece ``name``, compiled from its file into ``namespace`` (by default
    a fresh one holding :data:`PRELUDE`), or None when none was kept or it no longer loads."""
    path = _found(name)
    if path is None:
        return None
    namespace = namespace if namespace is not None else {}
    if "torch" not in namespace:
        exec(compile(PRELUDE, "<course_utils prelude>", "exec"), namespace)
    text = path.read_text(encoding="utf-8")
    try:
        exec(compile(text, str(path), "exec"), namespace)
    except Exception as error:  # noqa: BLE001 - a kept file that no longer loads is not used
        print(f"(your kept {_piece(name)[0]} in {display_path(path)} does not load: "
              f"{type(error).__name__}: {error}; the library's stands in)")
        return None
    cls = namespace.get(_piece(name)[0])
    if not isinstance(cls, type):
        return None
    digest = next((line.split(": ", 1)[1] for line in text.splitlines()
                   if line.startswith("# cell sha256: ")), None)
    cls.__course_kept__ = {"piece": name, "file": str(path), "cell": digest}  # type: ignore[attr-defined]
    return cls


def origin(cls: type) -> dict | None:
    """Where a kept class came from (``piece``, ``file``, ``cell``: the SHA-256 of the cell that
    defined it), or None for a class that was not kept."""
    return vars(cls).get("__course_kept__")


class _Assembled:
    """What an assembled decoder adds to the student's: their attention module in
    ``self.attention`` (the library's ``prepare`` asks it for ``project_keys`` and the library's
    step for ``attend``, which a module with only ``forward`` lacks: the keys are ``W_h h_j``,
    and a step is the module's ``forward`` with them). The parameter names stay the library's."""

    attention_class: type = BahdanauAttention

    def __init__(self, vocab_size, embed_dim, hidden_dim, encoder_dim, attention_dim,
                 dropout=0.0, maxout_dim=0, score="additive"):
        super().__init__(vocab_size, embed_dim, hidden_dim, encoder_dim,  # type: ignore[call-arg]
                         attention_dim, dropout=dropout, maxout_dim=maxout_dim, score=score)
        self.attention = self.attention_class(encoder_dim, hidden_dim, attention_dim)

    def prepare(self, encoder_outputs, summary, mask):
        memory = GRUDecoder.prepare(self, encoder_outputs, summary, mask)  # type: ignore[arg-type]
        attention: nn.Module = self.attention
        project = (attention.project_keys if isinstance(attention, Attention)
                   else attention.get_submodule("W_h"))  # the keys W_h h_j
        keys = project(memory.encoder_outputs)  # (B, T_x, attn_dim)
        return replace(memory, keys=keys)

    def context(self, state, memory):
        if isinstance(self.attention, Attention):
            return self.attention.attend(state, memory.encoder_outputs, memory.keys, memory.mask)
        return self.attention(state, memory.encoder_outputs, mask=memory.mask, keys=memory.keys)


def _whose(decoder_class: type, attention: type | None) -> list[str]:
    """The pieces of an assembled decoder that are the student's, by label."""
    def own(method: str) -> bool:
        module = str(getattr(getattr(decoder_class, method, None), "__module__", ""))
        return not module.startswith("course_utils")
    found = [("MyBahdanauAttention", attention is not None), ("Decoder.step", own("step")),
             ("TeacherForcing.forward", own("forward"))]
    return [label for label, theirs in found if theirs]


def _assemble(attention_class: type | None, decoder_class: type, name: str) -> type:
    namespace = {"attention_class": attention_class or BahdanauAttention,
                 "yours": tuple(_whose(decoder_class, attention_class)), "__module__": __name__}
    return type(name, (_Assembled, decoder_class), namespace)


def uses_only_yours(decoder_class: type) -> bool:
    """Whether an assembled decoder runs the student's three pieces (no library piece standing
    in for one)."""
    return len(getattr(decoder_class, "yours", ())) == len(PIECES)


def with_your_attention(decoder_class: type) -> type:
    """Notebook 3: ``decoder_class`` (the decoder the notebook's checks returned) with the
    attention module kept by notebook 2's check in ``self.attention``, or the library's
    :class:`~course_utils.attention.BahdanauAttention` when none was kept; says which."""
    if not (isinstance(decoder_class, type) and issubclass(decoder_class, AttentionDecoder)):
        raise TypeError(f"decoder_class must be a subclass of AttentionDecoder; got "
                        f"{decoder_class!r}")
    attention = kept("attention")
    if attention is None:
        print("attention: the library's BahdanauAttention (no MyBahdanauAttention of yours "
              "was kept: notebook 2's check keeps yours once it passes)")
    else:
        print(f"attention: your MyBahdanauAttention from notebook 2 "
              f"({display_path(Path(origin(attention)['file']))})")  # type: ignore[index]
    return _assemble(attention, decoder_class, decoder_class.__name__)


def your_attention_decoder() -> type:
    """Exercise E10.2: the attention decoder built from the three kept pieces (the library's
    for a piece never kept), printing whose each piece is."""
    namespace: dict = {}
    attention = kept("attention", namespace)
    namespace.setdefault("Decoder", AttentionDecoder)
    step = kept("step", namespace)
    if step is None:
        namespace["Decoder"] = AttentionDecoder
    forcing = kept("teacher forcing", namespace)
    if forcing is not None and not issubclass(forcing, AttentionDecoder):
        forcing = None
    base: type = forcing or step or AttentionDecoder
    assembled = _assemble(attention, base, "YourAttentionDecoder")
    yours = list(assembled.yours)  # type: ignore[attr-defined]
    missing = [label for label in ("MyBahdanauAttention", "Decoder.step",
                                   "TeacherForcing.forward") if label not in yours]
    print("attention model: " + (f"yours ({', '.join(yours)}), kept when their checks passed "
                                 "in notebooks 2 and 3" if yours else "the library's")
          + (f"; the library's stands in for {', '.join(missing)} (run the check under it in "
             "the lecture notebook until it passes)" if missing else ""))
    return assembled

