"""CSV files an instructor opens in a spreadsheet: text that cannot become a formula, and a file
the grader edits cell by cell, keeping every other byte as the instructor's program saved it.

``marks.csv`` (:mod:`.marks`) is written by two hands: the grader adds rows and keeps a few cells
of its own up to date, the instructor types the marks. Reading it with :mod:`csv` and writing it
back would re-quote every cell, change the line endings and drop nothing but still rewrite each
byte the instructor's program chose. :class:`Sheet` instead keeps the text as it was and the
place of every cell in it (:func:`parse`), so that :meth:`Sheet.edited` replaces only the cells
it is asked to and appends new rows with the file's own delimiter and line ending.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["FORMULA_START", "Row", "Sheet", "SheetError", "cell_text", "from_spreadsheet_text",
           "parse", "spreadsheet_text"]

#: What makes a spreadsheet read a cell as a formula (or a command, in some of them).
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")

#: The delimiters a spreadsheet saves CSV with (LibreOffice and Excel in many locales: ``;``).
DELIMITERS = (",", ";", "\t")


def spreadsheet_text(text: str) -> str:
    """Text a spreadsheet shows as text: one starting with ``=``, ``+``, ``-``, ``@`` (or a tab
    or carriage return) would be read as a formula, so it gets a leading apostrophe."""
    return "'" + text if text[:1] in FORMULA_START else text


def from_spreadsheet_text(text: str) -> str:
    """The text :func:`spreadsheet_text` guarded: its apostrophe taken off again."""
    return text[1:] if text[:1] == "'" and text[1:2] in FORMULA_START else text


class SheetError(ValueError):
    """Text that is not CSV (a quoted cell never closed)."""


@dataclass(frozen=True)
class Row:
    """One record of a CSV text: its cells' values and where each cell's text lies."""

    number: int  # as a spreadsheet numbers it: the header is row 1
    cells: tuple[str, ...]
    spans: tuple[tuple[int, int], ...]  # each cell's text in the file, quotes included
    end: int  # where the record ends, before its line ending

    def cell(self, index: int) -> str:
        """The value of cell ``index`` ('' where the row stops before it)."""
        return self.cells[index] if index < len(self.cells) else ""


def cell_text(value: str, delimiter: str) -> str:
    """``value`` as a CSV cell: quoted (RFC 4180) only where it has to be."""
    if any(c in value for c in (delimiter, '"', "\n", "\r")) or value != value.strip():
        return '"' + value.replace('"', '""') + '"'
    return value


def _records(text: str, delimiter: str) -> list[Row]:
    """Every record of ``text``, as :mod:`csv` reads them (quotes doubled inside quoted cells,
    line breaks inside them kept), with the span of each cell."""
    rows: list[Row] = []
    i, n = (1 if text.startswith("\ufeff") else 0), len(text)  # a byte-order mark: no cell's
    while i < n:
        cells: list[str] = []
        spans: list[tuple[int, int]] = []
        while True:  # one cell per turn
            start, value = i, []
            if i < n and text[i] == '"':
                i += 1
                while True:
                    close = text.find('"', i)
                    if close < 0:
                        raise SheetError(f"row {len(rows) + 1}: a quoted cell is never closed")
                    value.append(text[i:close])
                    if text.startswith('""', close):
                        value.append('"')
                        i = close + 2
                    else:
                        i = close + 1
                        break
            while i < n and text[i] not in (delimiter, "\n", "\r"):  # unquoted (or after)
                value.append(text[i])
                i += 1
            cells.append("".join(value))
            spans.append((start, i))
            if i < n and text[i] == delimiter:
                i += 1
                continue
            break
        end = i
        i += 2 if text.startswith("\r\n", i) else 1
        rows.append(Row(len(rows) + 1, tuple(cells), tuple(spans), end))
    return rows


@dataclass(frozen=True)
class Sheet:
    """A CSV text as the instructor's program saved it: the rows (the header first), the
    delimiter and the line ending it uses."""

    text: str
    rows: tuple[Row, ...]
    delimiter: str
    newline: str

    @property
    def header(self) -> list[str]:
        """The column names, stripped and lower-cased."""
        return [c.strip().lower() for c in self.rows[0].cells] if self.rows else []

    def edited(self, cells: dict[tuple[int, int], str], new_rows: list[list[str]]) -> str:
        """The text with the cells ``{(row number, column index): value}`` replaced and
        ``new_rows`` appended; every other byte as it was."""
        text = self.text
        by_row: dict[int, dict[int, str]] = {}
        for (number, column), value in cells.items():
            by_row.setdefault(number, {})[column] = value
        edits: list[tuple[int, int, str]] = []
        for number, values in by_row.items():
            row = self.rows[number - 1]
            for column, value in values.items():
                if column < len(row.spans):
                    edits.append((*row.spans[column], cell_text(value, self.delimiter)))
            extra = range(len(row.cells), max(values) + 1)
            if extra:  # the row stops short: its missing cells are added at its end
                edits.append((row.end, row.end, "".join(
                    self.delimiter + cell_text(values.get(c, ""), self.delimiter)
                    for c in extra)))
        for start, end, replacement in sorted(edits, reverse=True):
            text = text[:start] + replacement + text[end:]
        if new_rows:
            if text and not text.endswith(("\n", "\r")):
                text += self.newline
            text += "".join(self.delimiter.join(cell_text(c, self.delimiter) for c in row)
                            + self.newline for row in new_rows)
        return text


def parse(text: str, columns: tuple[str, ...]) -> Sheet:
    """``text`` as a :class:`Sheet`; its delimiter is the first of :data:`DELIMITERS` whose
    header names all of ``columns``, else a comma. Empty text is an empty sheet."""
    first = text.splitlines()[0] if text.strip() else ""
    delimiter = next((d for d in DELIMITERS if set(columns) <= {
        c.lstrip("\ufeff").strip().strip('"').lower() for c in first.split(d)}), ",")
    rows = tuple(_records(text, delimiter))
    newline = "\r\n"
    if rows:
        after = text[rows[0].end:rows[0].end + 2]
        newline = "\r\n" if after == "\r\n" else (after[:1] if after[:1] in ("\n", "\r")
                                                  else "\r\n")
    return Sheet(text, rows, delimiter, newline)
