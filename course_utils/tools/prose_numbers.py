"""Prose bound to its outputs: every result a notebook's text quotes is one its cells print.

A notebook's Markdown says what its run showed ("the mean score, 0.572, is six times uniform
attention's 0.094"). After a re-run those numbers can drift from the outputs beside them. This
tool finds each number of a notebook's Markdown cells and figure descriptions that reads like a
result (a decimal, a percentage, a signed number, a number with a thousands separator, or a
number of 10 or more followed by a unit: ``14 min``, ``54 sentences``), and looks for it in

- the notebook's own outputs (text, tables, HTML), where a number written with fewer decimals
  matches one printed with more that rounds to it (``0.57`` for ``0.572``);
- the notebook's code cells (a setting the prose names: ``d = 16``, ``1,000 resamples``);
- :data:`SOURCED`, a short list of numbers quoted from the literature, each with its source.

What is not a result is not checked: numbers in code spans and fenced code, exercise and
section names (``E10.2``, ``section 4``, ``Figure 2``), years, dates, versions, citations and
formulas without decimals. ``docs/day_plan.md`` and ``docs/results.md`` are checked the same
way against the files their generators write beside them (``docs/day_plan.json``,
``docs/results.json``).

Command line::

    python -m course_utils.tools.prose_numbers notebooks/*.ipynb solutions/*.ipynb
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from decimal import ROUND_HALF_EVEN, ROUND_HALF_UP, Decimal, InvalidOperation
from pathlib import Path
from typing import Any

import nbformat

from course_utils.tools.figures import ALT_KEYS

__all__ = ["SOURCED", "Unbound", "main", "numbers_in_prose", "numbers_printed",
           "unbound_in_document", "unbound_in_notebook"]

#: Numbers a notebook may quote without printing them, each with where it comes from.
SOURCED: dict[str, str] = {
    # Bahdanau, Cho and Bengio (2014/2015), Table 1: test BLEU, all sentences / no unknown word
    **{n: "Bahdanau et al. 2015, Table 1" for n in (
        "13.93", "24.19", "21.50", "31.44", "17.82", "26.71", "26.75", "34.16", "28.45",
        "36.15", "33.30", "35.63")},
    "348": "Bahdanau et al. 2015, section 4.1: 348M words of parallel text (WMT'14 En-Fr)",
    "30,000": "Bahdanau et al. 2015, section 4.1: the 30,000 most frequent words per language",
    "1,000": "Bahdanau et al. 2015, appendix A: 1,000 hidden units; also the test sets' size",
    "620": "Bahdanau et al. 2015, appendix A: 620-dimensional word embeddings",
    # reading paces the day plan cites
    "138": "Carver 1992, Journal of Reading 36(2): the memorizing gear, words a minute",
    "238": "Brysbaert 2019, Journal of Memory and Language 109: silent reading, words a minute",
    "300": "Cohen 2006, Best Kept Secrets of Peer Code Review (Cisco): lines an hour",
    # Multi30k (Elliott et al. 2016, 2017): the splits' published sizes
    "29,000": "Elliott et al. 2016: Multi30k's training split",
    "1,014": "Elliott et al. 2016: Multi30k's validation split",
}

#: Unit words that make a whole number of 10 or more a result (``14 min``, ``54 sentences``).
UNITS = ("min", "minute", "minutes", "s", "sec", "second", "seconds", "ms", "µs", "us", "BLEU",
         "token", "tokens", "sentence", "sentences", "epoch", "epochs", "parameter",
         "parameters", "batch", "batches", "point", "points", "percent", "%", "MB", "GB", "kB",
         "px", "word", "words", "step", "steps", "times", "x", "×", "lines", "students",
         "submissions", "copies", "runs", "models", "seeds", "pairs", "sequences")

_NUMBER = re.compile(r"(?<![\w.])([+\-−]?)(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?(?![\w])")
_SKIP = re.compile(
    r"`[^`\n]*`"  # code spans
    r"|```.*?```"  # fenced code
    r"|https?://\S+|arXiv:\s*\S+|doi:\s*\S+"  # addresses and identifiers
    r"|\bE\d+\.\d+\b"  # exercise names
    r"|\b\d+\.\d+\.\d+\b"  # versions, section numbers such as 3.1.2
    r"|\b\d{4}-\d{2}-\d{2}\b"  # dates
    r"|\b(?:[Ss]ections?|[Nn]otebooks?|[Ff]igures?|[Tt]ables?|[Aa]ppendix|[Ee]quations?|"
    r"[Dd]ay|[Pp]arts?|[Ss]teps?|[Cc]ells?|[Cc]hapter|[Ll]ines?|[Pp]ages?|pp\.|p\.|[Ee]xercises?"
    r"|[Pp]osition|[Ll]ength|[Ee]poch|[Rr]ow|[Cc]olumn|[Ll]ayer|[Hh]ead|[Ss]eed|[Ss]hard)"
    r"\s+[A-Z]?\d+(?:\.\d+)*(?:\s*(?:,|and|to|-|–)\s*\d+(?:\.\d+)*)*"
    r"|\b(?:19|20)\d{2}[a-z]?\b"  # years
    r"|\(\d+\)",  # issue and equation numbers: 36(2), (4)
    re.DOTALL)
_MATH = re.compile(r"\$\$.*?\$\$|\$[^$\n]+\$", re.DOTALL)


@dataclass(frozen=True)
class Unbound:
    """A number the text quotes that nothing it is bound to holds: where, and around it."""

    where: str
    number: str
    context: str

    def __str__(self) -> str:
        return f"{self.where}: {self.number!r} in \u201c{self.context}\u201d"


def _plain(number: str) -> str:
    """``"+1,234.50"`` as ``"1234.50"``: no sign, no thousands separator."""
    return number.lstrip("+-−").replace(",", "")


def numbers_in_prose(text: str) -> Iterator[tuple[str, str]]:
    """Each number of ``text`` that reads like a result, as written, with its context."""
    blanked = _SKIP.sub(lambda m: " " * len(m.group()), text)
    # in formulas, only decimals are results (constants and indices are not)
    spans = [m.span() for m in _MATH.finditer(blanked)]
    for match in _NUMBER.finditer(blanked):
        sign, whole, decimals = match.group(1), match.group(2), match.group(3) or ""
        number = sign + whole + decimals
        in_math = any(a <= match.start() < b for a, b in spans)
        after = blanked[match.end():match.end() + 12]
        percent = after.lstrip().startswith("%")
        unit = re.match(r"\s*-?\s*(" + "|".join(map(re.escape, UNITS)) + r")(?![\w])", after)
        if in_math and not decimals:
            continue
        result = bool(decimals) or percent or bool(sign and sign != "-") or "," in whole or (
            int(whole.replace(",", "")) >= 10 and unit is not None)
        if result:
            start, end = max(0, match.start() - 40), min(len(text), match.end() + 40)
            yield number, " ".join(text[start:end].split())


_PRINTED = re.compile(r"[+\-−]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:e[+-]?\d+)?")


def numbers_printed(texts: Iterable[str]) -> set[str]:
    """Every number in ``texts`` (outputs, code), without sign or thousands separator."""
    found: set[str] = set()
    for text in texts:
        for match in _PRINTED.finditer(text):
            found.add(_plain(match.group()))
            if "," in match.group():  # "1,000" may also be a list: 1 and 000
                found.update(part for part in match.group().split(",") if part)
    return found


def _bound(number: str, printed: set[str], sourced: Iterable[str]) -> bool:
    plain = _plain(number)
    if plain in printed or number in sourced or plain in {_plain(s) for s in sourced}:
        return True
    try:
        wanted = Decimal(plain)
    except InvalidOperation:
        return False
    places = -wanted.as_tuple().exponent  # type: ignore[operator]
    quantum = Decimal(1).scaleb(-places)
    for candidate in printed:
        try:
            value = Decimal(candidate)
        except InvalidOperation:
            continue
        if value == wanted:
            return True  # the same value with fewer zeros: 0.1 in the code, 0.10 in the prose
        if -value.as_tuple().exponent <= places:  # type: ignore[operator]
            continue  # only a more precise printed number rounds to the prose's
        for rounding in (ROUND_HALF_UP, ROUND_HALF_EVEN):
            if value.quantize(quantum, rounding=rounding) == wanted:
                return True
            # percentages printed as shares: 0.626 for 62.6%
            if (value * 100).quantize(quantum, rounding=rounding) == wanted:
                return True
    return False


def _output_texts(cell: Any) -> Iterator[str]:
    for output in cell.get("outputs", []):
        if "text" in output:
            yield "".join(output["text"]) if isinstance(output["text"], list) else output["text"]
        for kind, value in output.get("data", {}).items():
            if kind.startswith("text/"):
                yield "".join(value) if isinstance(value, list) else str(value)


def _alt(cell: Any) -> str | None:
    value: Any = cell.get("metadata", {})
    for key in ALT_KEYS:
        value = value.get(key) if isinstance(value, dict) else None
    return value if isinstance(value, str) else None


def unbound_in_notebook(path: Path, sourced: dict[str, str] = SOURCED,
                        documents: Iterable[Path] = ()) -> list[Unbound]:
    """The numbers of ``path``'s Markdown cells and figure descriptions that neither its
    outputs, nor its code, nor ``sourced`` hold, nor ``documents``: the project's measurements
    a header may quote (``docs/day_plan.md``'s minutes, ``docs/benchmarks.md``'s GPU runs)."""
    notebook = nbformat.read(path, as_version=4)
    printed = numbers_printed(
        [text for cell in notebook.cells for text in _output_texts(cell)]
        + [cell.source for cell in notebook.cells if cell.cell_type == "code"]
        + [document.read_text(encoding="utf-8") for document in documents])
    found = []
    for index, cell in enumerate(notebook.cells):
        texts = []
        if cell.cell_type == "markdown":
            texts.append(("", cell.source))
        alt = _alt(cell)
        if alt:
            texts.append((" (figure description)", alt))
        for label, text in texts:
            for number, context in numbers_in_prose(text):
                if not _bound(number, printed, sourced):
                    found.append(Unbound(f"{path.name}, cell {cell.get('id', index)}{label}",
                                         number, context))
    return found


def unbound_in_document(path: Path, bound_to: Iterable[Path],
                        sourced: dict[str, str] = SOURCED) -> list[Unbound]:
    """The numbers of a Markdown document (``docs/day_plan.md``) that the files it is generated
    from (``bound_to``: JSON data, notebooks) do not hold."""
    texts = []
    for source in bound_to:
        if source.suffix == ".ipynb":
            notebook = nbformat.read(source, as_version=4)
            texts += [text for cell in notebook.cells for text in _output_texts(cell)]
            texts.append(json.dumps(notebook.metadata))
        else:
            texts.append(source.read_text(encoding="utf-8"))
    printed = numbers_printed(texts)
    text = path.read_text(encoding="utf-8")
    return [Unbound(path.name, number, context) for number, context in numbers_in_prose(text)
            if not _bound(number, printed, sourced)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("notebooks", nargs="+", type=Path)
    parser.add_argument("--documents", type=Path, nargs="*",
                        default=[Path("docs/day_plan.md"), Path("docs/benchmarks.md")],
                        help="the project's measurements a header may quote")
    args = parser.parse_args(argv)
    documents = [d for d in args.documents if d.is_file()]
    found = [u for path in args.notebooks for u in unbound_in_notebook(path, documents=documents)]
    for unbound in found:
        print(unbound)
    print(f"{len(found)} numbers not bound to an output", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    raise SystemExit(main())
