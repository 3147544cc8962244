"""Reading one translation's attention in class: which sentence to show, and what it shows.

Notebook 4 shows one heatmap of its attention model and reads it with the class. The sentence
is chosen by a rule, so the reading stays true for whatever model a run produces:
:func:`best_translated_reordering` picks, among translations of readable length with a
confident crossing (:func:`course_utils.alignment.find_examples`), the one closest to its
reference; :func:`read_alignment` says in words what the heatmap shows (the near-diagonal,
the crossing, one-to-many links) and what a hard alignment (one source word per output word,
the row's arg max) keeps of the soft one and what it throws away; :func:`plot_reading` draws
the heatmap those lines read.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import sacrebleu
from matplotlib.figure import Figure

from course_utils.alignment import (
    Example,
    find_examples,
    hard_alignment,
    monotonicity,
    one_to_many,
    word_class,
)
from course_utils.plotting import plot_attention
from course_utils.translation import Translation

__all__ = ["best_translated_reordering", "plot_reading", "read_alignment"]


def best_translated_reordering(
    outputs: Sequence[Translation],
    references: Sequence[str],
    *,
    min_tokens: int = 8,
    max_tokens: int = 14,
) -> tuple[int, Example | None]:
    """``(index into outputs, crossing)``: among translations of ``min_tokens`` to
    ``max_tokens`` source tokens with a confident crossing of two German content words (each
    word's largest weight at least 0.5, at most 4 steps apart), the one closest to its
    reference (sentence chrF against the lowercased reference), so that the reordering is
    one German needs rather than a mistake. Function words and punctuation are left out:
    their attention often looks ahead to the word they belong to.

    Without any crossing the crossing is ``None`` and the index is the readable translation
    closest to its reference (or 0 when no translation has a readable length).
    """
    if len(outputs) != len(references):
        raise ValueError(f"need one reference per output; got {len(references)} references "
                         f"for {len(outputs)} outputs")
    if not outputs:
        raise ValueError("no translations to choose from")
    if any(o.attention is None for o in outputs):
        raise ValueError("these translations have no attention (a vanilla seq2seq model)")
    readable = [i for i, o in enumerate(outputs)
                if min_tokens <= len(o.source_tokens) <= max_tokens and o.output_tokens]
    if not readable:
        return 0, None
    quality = {i: sacrebleu.sentence_chrf(outputs[i].text, [references[i].lower()]).score
               for i in readable}
    not_content = [[word_class(w) != "content" for w in outputs[i].output_tokens]
                   for i in readable]
    found = find_examples([outputs[i].word_attention for i in readable], "reordering",
                          k=len(readable), exclude=not_content)
    if not found:
        return max(readable, key=lambda i: (quality[i], -i)), None
    best = max(found, key=lambda e: (quality[readable[e.index]], -e.index))
    return readable[best.index], best


def read_alignment(translation: Translation, crossing: Example | None = None) -> list[str]:
    """The heatmap of ``translation`` in words, one line per observation: the sentence, how
    diagonal it is, the crossing (if given), one-to-many links, and how much of each row's
    weight the hard alignment keeps."""
    weights = translation.word_attention  # (German words, English words)
    english, german = translation.source_tokens, translation.output_tokens
    if not german:
        raise ValueError("the translation is empty: there is no attention to read")
    hard = hard_alignment(weights)
    lines = [f"EN: {' '.join(english)}", f"DE: {' '.join(german)}",
             f"near-diagonal: {monotonicity(weights):.0%} of consecutive German words move "
             f"forward (or stay) in the English"]
    if crossing is not None:
        (i, k), (p, q) = crossing.steps, crossing.positions
        lines.append(f"crossing: '{english[q]}' comes before '{english[p]}' in English, but "
                     f"'{german[i]}' (reading '{english[p]}') comes before '{german[k]}' "
                     f"(reading '{english[q]}') in German")
    links = one_to_many(weights, 0.5)
    for position, steps in links.items():
        lines.append(f"one-to-many: {' + '.join(repr(german[s]) for s in steps)} all read "
                     f"'{english[position]}' most")
    if not links:
        lines.append("one-to-many: no English word is the confident (>= 0.5) choice of two "
                     "German words here")
    kept = weights.max(axis=1)  # (German words,) the weight on the hard alignment's cell
    lines.append(f"hard alignment: keeps {kept.mean():.0%} of a row's weight on average "
                 f"(from {kept.min():.0%} to {kept.max():.0%}) and drops the rest")
    least = np.argsort(kept, kind="stable")[:3]
    lines.append("least decided rows: " + ", ".join(
        f"'{german[s]}' ({kept[s]:.0%} on '{english[hard[s]]}')" for s in least))
    unread = [w for j, w in enumerate(english) if j not in set(hard.tolist())]
    lines.append("English words no German word reads most: "
                 + (", ".join(repr(w) for w in unread) if unread else "none"))
    return lines


def plot_reading(translation: Translation, crossing: Example | None = None, *,
                 title: str = "One translation") -> Figure:
    """Notebook 4, section 7: the heatmap :func:`read_alignment` reads: ``translation``'s
    attention over the English words, a dot on each row's largest weight (the hard
    alignment) and the cells of ``crossing`` outlined; the title quotes the translation."""
    return plot_attention(translation.word_attention, translation.source_tokens,
                          translation.output_tokens, mark_alignment=True,
                          highlight_cells=crossing.cells if crossing is not None else (),
                          title=f"{title}: “{translation.text}”\n(dots: the hard alignment)")
