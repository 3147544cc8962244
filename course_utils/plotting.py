"""Plots every notebook shares: attention heatmaps and bar charts of weights; and the few
result plots of notebooks 1 and 4 (what a fixed context remembers, loss curves, BLEU by length),
so that the code on those pages is the lesson and each plot is one call.

Used from notebook 1, section 4 on: every heatmap and weight chart of the day.

Each function draws on ``ax`` when given (so notebooks can build grids) and returns the
matplotlib ``Figure``, which tests inspect and notebooks can save. The diagrams of the model
live in :mod:`course_utils.diagrams` and are re-exported here.

Figures are drawn for a notebook: at most ``NOTEBOOK_WIDTH`` inches wide (a notebook's output
at 100 dpi; a wider figure is shrunk to fit, and its text with it), every text at least
``MIN_FONTSIZE`` points. A heatmap too long for its labels at that size shows every second
(or third ...) label rather than smaller ones. Weights are coloured on a square-root scale by
default (``gamma=0.5``): most weights of a row are small, and on a linear scale they would all
be the same dark colour.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

import matplotlib.pyplot as plt
import numpy as np
import seaborn as sns
from matplotlib.axes import Axes
from matplotlib.colors import PowerNorm
from matplotlib.figure import Figure
from matplotlib.font_manager import FontProperties
from matplotlib.textpath import TextToPath
from numpy.typing import ArrayLike

from course_utils.colours import BLUE, ORANGE, PALETTE, VERMILLION
from course_utils.diagrams import plot_decoding_step, plot_encoder_decoder
from course_utils.tensors import to_numpy

if TYPE_CHECKING:  # for the annotations only: drawing a heatmap needs no PyTorch
    from course_utils.metrics import LengthComparison
    from course_utils.training import History

__all__ = [
    "MIN_FONTSIZE",
    "NOTEBOOK_WIDTH",
    "model_colour",
    "plot_attention",
    "plot_attention_grid",
    "plot_bleu_by_length",
    "plot_decoding_step",
    "plot_encoder_decoder",
    "plot_loss_curves",
    "plot_weights",
    "weight_colorbar",
]

NOTEBOOK_WIDTH = 8.0  # inches: a notebook's output at the inline backend's 100 dpi
MIN_FONTSIZE = 9.0  # points, at that width
_MIN_CELL = 0.16  # inches per token: a 9-point label (0.125 in) per row or (upright) per column
_MAX_CELL = 0.42  # inches per token: room for a 10-point label side by side
_STACKED_CELL = 0.3  # inches per token at most when maps stand one above the other
_COLORBAR = 1.0  # inches the colour bar and its label take
_SCALE = {1.0: "", 0.5: " (square-root scale)"}  # the colour bar says a scale that is not linear


def _as_numpy(array: object) -> np.ndarray:
    return to_numpy(array).astype(float)  # a tensor on any device, or an array


def _check_labels(name: str, labels: Sequence[str] | None, expected: int, axis: str) -> None:
    if labels is not None and len(labels) != expected:
        raise ValueError(
            f"{name} must have one label per {axis} ({expected}); got {len(labels)}"
        )


def _tick_fontsize(n: int) -> float:
    """10 points for up to 15 labels, else the minimum: labels never shrink below it."""
    return 10.0 if n <= 15 else MIN_FONTSIZE


def _text_inches(text: str, fontsize: float) -> float:
    """Width of ``text`` printed at ``fontsize`` points, in inches."""
    if not text:
        return 0.0
    width, _, _ = TextToPath().get_text_width_height_descent(
        text, FontProperties(size=fontsize), ismath=False)
    return width / 72.0


def _labels_inches(labels: Sequence[str] | None, n: int, fontsize: float) -> float:
    texts = [str(t) for t in labels] if labels is not None else [str(n - 1)]
    return max((_text_inches(t, fontsize) for t in texts), default=0.0)


def _wrap(title: str, fontsize: float, width: float) -> str:
    """``title`` wrapped to ``width`` inches at ``fontsize``; the caller's line breaks kept,
    and a title with mathematics (``$...$``) left as written, since a break inside it would
    not render."""
    if "$" in title:
        return title
    chars_per_inch = max(len(title), 1) / max(_text_inches(title.replace("\n", " "),
                                                           fontsize), 1e-6)
    chars = max(16, int(width * chars_per_inch * 0.95))
    return "\n".join(textwrap.fill(line, width=chars) for line in title.splitlines())


def _label_step(cell: float) -> int:
    """Show every k-th label so that labels sit at least ``_MIN_CELL`` apart."""
    return max(1, math.ceil(_MIN_CELL / cell - 1e-9))


def _heatmap_margins(source_tokens: Sequence[str] | None, target_tokens: Sequence[str] | None,
                     src_len: int, tgt_len: int) -> tuple[float, float, bool]:
    """(left, bottom, upright): inches the y labels and the x labels take."""
    longest = max((len(str(t)) for t in source_tokens), default=0) if source_tokens else 0
    upright = src_len > 10 or longest > 5  # long words would collide side by side
    left = _labels_inches(target_tokens, tgt_len, _tick_fontsize(tgt_len)) + 0.45
    x_labels = _labels_inches(source_tokens, src_len, _tick_fontsize(src_len))
    bottom = (x_labels if upright else 0.2) + 0.5
    return left, bottom, upright


def plot_attention(
    weights: ArrayLike,
    source_tokens: Sequence[str] | None = None,
    target_tokens: Sequence[str] | None = None,
    *,
    ax: Axes | None = None,
    title: str = "Attention weights",
    annotate: bool | None = None,
    cmap: str = "viridis",
    gamma: float = 0.5,
    colorbar: bool = True,
    mark_alignment: bool = False,
    highlight_rows: Sequence[int] = (),
    highlight_cells: Sequence[tuple[int, int]] = (),
    label_step: int | None = None,
) -> Figure:
    """Heatmap of an attention matrix: row i is output step i, column j source position j.

    Drawn on its own, the figure fits a notebook's width (``NOTEBOOK_WIDTH``): cells shrink as
    the sentence grows, source labels turn upright past 10 tokens (or when a word is long),
    and labels stay at 9 points or more; past about 30 tokens a side every second label is
    shown (``label_step``).

    Args:
        weights: ``(tgt_len, src_len)`` array or tensor; each row a distribution.
        source_tokens: ``src_len`` labels for the columns.
        target_tokens: ``tgt_len`` labels for the rows.
        annotate: write each weight in its cell; by default only when the matrix is small
            enough to read (at most 12 x 12).
        gamma: colour = weight ** gamma (``PowerNorm``): 0.5, the default, spreads the small
            weights that fill most of a row over the colour map; 1 is a linear scale.
        mark_alignment: mark each row's largest weight (the hard alignment) with a dot.
        highlight_rows: output steps to outline (such as the current step of decoding).
        highlight_cells: ``(row, column)`` cells to outline (such as a pattern's words).
        label_step: label every k-th token; by default every one that fits at 9 points.
    """
    weights = _as_numpy(weights)
    if weights.ndim != 2 or 0 in weights.shape:
        raise ValueError(f"weights must be a non-empty (tgt_len, src_len) matrix; "
                         f"got shape {weights.shape}")
    tgt_len, src_len = weights.shape
    _check_labels("source_tokens", source_tokens, src_len, "column")
    _check_labels("target_tokens", target_tokens, tgt_len, "row")
    bad_rows = [r for r in highlight_rows if not 0 <= r < tgt_len]
    bad_cells = [c for c in highlight_cells if not (0 <= c[0] < tgt_len and 0 <= c[1] < src_len)]
    if bad_rows or bad_cells:
        raise ValueError(f"highlighted rows/cells outside the {tgt_len} x {src_len} matrix: "
                         f"{bad_rows + bad_cells}")
    if not gamma > 0:
        raise ValueError(f"gamma must be positive (1 = linear colours); got {gamma}")
    if annotate is None:
        annotate = max(tgt_len, src_len) <= 12

    left, bottom, upright = _heatmap_margins(source_tokens, target_tokens, src_len, tgt_len)
    if ax is None:
        side = _COLORBAR if colorbar else 0.15
        cell = min(_MAX_CELL, (NOTEBOOK_WIDTH - left - side) / src_len)
        if label_step is None:
            label_step = _label_step(cell)
        width = min(NOTEBOOK_WIDTH, left + cell * src_len + side)
        lines = len(_wrap(title, 12, width - 0.2).splitlines())
        height = 0.25 * lines + 0.2 + cell * tgt_len + bottom
        fig, ax = plt.subplots(figsize=(width, height), layout="constrained")
    fig = cast(Figure, ax.figure)
    step = label_step or 1
    sns.heatmap(
        weights,
        ax=ax,
        norm=PowerNorm(gamma, vmin=0.0, vmax=1.0),
        cmap=cmap,
        square=True,
        annot=annotate,
        fmt=".2f",
        annot_kws={"fontsize": MIN_FONTSIZE},
        cbar=colorbar,
        cbar_kws={"label": "attention weight α" + _SCALE.get(gamma, f" (colour ∝ α^{gamma:g})"),
                  "shrink": 0.8} if colorbar else None,
        xticklabels=_every(source_tokens, src_len, step),
        yticklabels=_every(target_tokens, tgt_len, step),
        linewidths=0.5 if annotate else 0.0,
        linecolor="white",
    )
    if mark_alignment:
        rows = np.arange(tgt_len)
        # with the weights printed in the cells, the dot goes to the cell's corner, off the number
        dx, dy = (0.14, 0.18) if annotate else (0.5, 0.5)
        ax.scatter(weights.argmax(axis=1) + dx, rows + dy, s=14, c="white",
                   edgecolors="black", linewidths=0.6, zorder=3, label="hard alignment")
    for row in highlight_rows:
        ax.add_patch(plt.Rectangle((0, row), src_len, 1, fill=False, edgecolor=VERMILLION,
                                   linewidth=2.0, zorder=4))
    for row, column in highlight_cells:
        ax.add_patch(plt.Rectangle((column, row), 1, 1, fill=False, edgecolor=VERMILLION,
                                   linewidth=2.0, zorder=4))
    ax.set_xlabel("source position j")
    ax.set_ylabel("output step i")
    # a long title (such as a whole translation) wraps to the figure's width, or to its share
    # of a grid; line breaks the caller wrote are kept
    room = ax.get_position().width * fig.get_figwidth() + left
    ax.set_title(_wrap(title, 12, min(room, fig.get_figwidth() - 0.2)))
    ax.tick_params(axis="x", labelrotation=90 if upright else 0,
                   labelsize=_tick_fontsize(src_len))
    ax.tick_params(axis="y", labelrotation=0, labelsize=_tick_fontsize(tgt_len))
    return fig


def _every(tokens: Sequence[str] | None, n: int, step: int) -> Any:
    """Tick labels for seaborn: all of them, or every ``step``-th (the others blank)."""
    labels = [str(t) for t in tokens] if tokens is not None else [str(k) for k in range(n)]
    if step == 1:
        return labels if tokens is not None else True
    return [label if k % step == 0 else "" for k, label in enumerate(labels)]


def _attention_item(item: Any) -> tuple:
    """``(weights, source_tokens, row_labels)`` from a Translation or a tuple."""
    if hasattr(item, "attention") and hasattr(item, "source_tokens"):
        if item.attention is None:
            raise ValueError("a translation without attention (vanilla model) has no heatmap")
        labels = getattr(item, "row_labels", None) or item.output_tokens
        return item.attention, item.source_tokens, labels
    if isinstance(item, tuple) and len(item) == 3:
        return item
    raise TypeError("each item must be a Translation or a (weights, source_tokens, "
                    f"target_tokens) tuple; got {type(item).__name__}")


def _grid_columns(wanted: int, lefts: list[float], shapes: list[tuple[int, int]]) -> int:
    """The most columns, at most ``wanted``, that fill every row (no empty slot) and fit a
    notebook's width with cells of at least ``_MIN_CELL``; 1 when no other does."""
    n = len(shapes)
    for ncols in range(min(wanted, n), 1, -1):
        if n % ncols:
            continue
        widths = [max(lefts[c::ncols]) + _MIN_CELL * max(s[1] for s in shapes[c::ncols])
                  for c in range(ncols)]
        if sum(widths) + (_COLORBAR if ncols == n else 0.0) <= NOTEBOOK_WIDTH:
            return ncols  # more than one row: the colour bar goes on top, taking no width
    return 1


def _equal_cells(fig: Figure, axes: list[Axes], shapes: list[tuple[int, int]]) -> None:
    """Lay the figure out once, then shrink every heatmap to the smallest cell any of them
    got (each stays centred at the top of its slot) and freeze the layout."""
    engine = fig.get_layout_engine()
    if engine is not None:
        engine.execute(fig)
    width, height = fig.get_size_inches()
    boxes = []
    for ax in axes:
        ax.apply_aspect()
        boxes.append(ax.get_position(original=False))
    cell = min(box.width * width / src for box, (_, src) in zip(boxes, shapes))
    for ax, box, (tgt, src) in zip(axes, boxes, shapes):
        w, h = cell * src / width, cell * tgt / height
        ax.set_position((box.x0 + (box.width - w) / 2, box.y1 - h, w, h))
    fig.set_layout_engine("none")


def plot_attention_grid(
    items: Sequence,
    *,
    titles: Sequence[str] | None = None,
    ncols: int = 2,
    mark_alignment: bool = False,
    highlight_cells: Sequence[Sequence[tuple[int, int]]] | None = None,
    cmap: str = "viridis",
    gamma: float = 0.5,
) -> Figure:
    """Heatmaps of several sentences, sharing one colour scale and one cell size.

    At most ``ncols`` side by side: fewer when the row would not fit a notebook's width, and
    never a half-empty last row (three maps come out as one column, not two by two). The
    colour bar stands beside a single row and above a grid of several rows.

    Args:
        items: Translations (from :mod:`course_utils.translation`) or
            ``(weights, source_tokens, target_tokens)`` tuples.
        titles: one title per item.
        highlight_cells: per item, ``(row, column)`` cells to outline.
        gamma: the colour scale, as in :func:`plot_attention`.
    """
    items = [_attention_item(item) for item in items]
    if not items:
        raise ValueError("items is empty: give at least one attention matrix to plot")
    if titles is not None and len(titles) != len(items):
        raise ValueError(f"titles must have one entry per item ({len(items)}); got {len(titles)}")
    if highlight_cells is not None and len(highlight_cells) != len(items):
        raise ValueError(f"highlight_cells must have one entry per item ({len(items)}); "
                         f"got {len(highlight_cells)}")
    if ncols < 1:
        raise ValueError(f"ncols must be >= 1; got {ncols}")
    shapes = [_as_numpy(w).shape for w, _, _ in items]
    margins = [_heatmap_margins(s, t, shape[1], shape[0])
               for (_, s, t), shape in zip(items, shapes)]
    lefts = [m[0] for m in margins]
    ncols = _grid_columns(ncols, lefts, shapes)
    nrows = len(items) // ncols
    src_max = [max(s[1] for s in shapes[c::ncols]) for c in range(ncols)]
    tgt_max = [max(s[0] for s in shapes[r * ncols:(r + 1) * ncols]) for r in range(nrows)]
    left_max = [max(lefts[c::ncols]) for c in range(ncols)]
    side = _COLORBAR if nrows == 1 else 0.0  # a taller grid has its colour bar on top
    largest = _MAX_CELL if ncols > 1 or nrows == 1 else _STACKED_CELL
    cell = min(largest, (NOTEBOOK_WIDTH - side - sum(left_max)) / sum(src_max))
    step = _label_step(cell)
    width = min(NOTEBOOK_WIDTH, sum(left_max) + cell * sum(src_max) + side)
    bottom = max(m[1] for m in margins)
    title_lines = max(len(_wrap(t, 12, cell * shape[1] + 0.3).splitlines())
                      for t, shape in zip(titles or ["x"] * len(shapes), shapes))
    height = sum(0.25 * title_lines + 0.3 + cell * t + bottom for t in tgt_max) + (side == 0) * 0.9
    fig, axes = plt.subplots(nrows, ncols, figsize=(width, height), layout="constrained",
                             squeeze=False, gridspec_kw={"width_ratios": src_max,
                                                         "height_ratios": tgt_max})
    for n, (weights, source, target) in enumerate(items):
        ax = axes[n // ncols][n % ncols]
        title = titles[n] if titles is not None else f"sentence {n + 1}"
        plot_attention(weights, source, target, ax=ax, colorbar=False, cmap=cmap, gamma=gamma,
                       annotate=False, mark_alignment=mark_alignment, label_step=step,
                       title=_wrap(title, 12, cell * shapes[n][1] + 0.3),  # its map's width
                       highlight_cells=highlight_cells[n] if highlight_cells else ())
    where = {"location": "right", "shrink": min(0.6, 4.0 / height)} if nrows == 1 else \
        {"location": "top", "shrink": 0.6, "aspect": 30}  # on top: not in a tall grid's middle
    weight_colorbar(fig, axes, gamma=gamma, cmap=cmap, **where)
    _equal_cells(fig, list(axes.flat), [(s[0], s[1]) for s in shapes])
    return fig


def weight_colorbar(fig: Figure, axes: Any, *, gamma: float = 0.5, cmap: str = "viridis",
                    **options: Any) -> Any:
    """One colour bar for the attention heatmaps on ``axes`` (drawn by :func:`plot_attention`
    with ``colorbar=False`` and this ``gamma``), labelled with its scale where it is not linear
    (``options``: :meth:`Figure.colorbar`'s, such as ``shrink``)."""
    mappable = plt.cm.ScalarMappable(PowerNorm(gamma, vmin=0.0, vmax=1.0), cmap=cmap)
    return fig.colorbar(mappable, ax=axes, **options,
                        label="attention weight α" + _SCALE.get(gamma, f" (colour ∝ α^{gamma:g})"))


def plot_weights(
    weights: ArrayLike,
    labels: Sequence[str] | None = None,
    *,
    ax: Axes | None = None,
    title: str = "Attention weights",
    ylabel: str = "weight α",
    annotate: bool = True,
    highlight_max: bool = True,
    ylim: tuple[float, float] | None = (0.0, 1.0),
) -> Figure:
    """Bar chart of one vector of weights (or energies), the largest bar highlighted.

    Drawn on its own it fits a notebook's width; labels that would not fit side by side at
    9 points turn upright, and so do the printed values."""
    values = _as_numpy(weights)
    if values.ndim != 1:
        raise ValueError(f"weights must be a vector (src_len,); got shape {values.shape}")
    _check_labels("labels", labels, values.shape[0], "bar")
    labels = list(labels) if labels is not None else [f"{j + 1}" for j in range(len(values))]

    if ax is None:
        fig, ax = plt.subplots(figsize=(min(NOTEBOOK_WIDTH, 1.0 + 0.6 * len(values)), 3.2),
                               layout="constrained")
    fig = cast(Figure, ax.figure)
    colors = [BLUE] * len(values)
    if highlight_max and len(values):
        colors[int(np.argmax(values))] = ORANGE
    bars = ax.bar(range(len(values)), values, color=colors)
    ax.set_xticks(range(len(values)), labels)
    # inches per bar, from the axes' share of the figure
    spacing = ax.get_position().width * fig.get_figwidth() / max(len(values), 1)
    fontsize = 10.0
    upright = max((_text_inches(str(t), fontsize) for t in labels), default=0.0) > spacing
    ax.tick_params(axis="x", labelsize=fontsize, labelrotation=90 if upright else 0)
    if annotate:
        vertical = _text_inches("0.00", MIN_FONTSIZE) > 0.9 * spacing
        ax.bar_label(bars, fmt="%.2f", fontsize=MIN_FONTSIZE, padding=2,
                     rotation=90 if vertical else 0)
    if ylim is not None:
        top = max(ylim[1], float(values.max()) * (1.3 if annotate else 1.15)
                  if len(values) else ylim[1])
        ax.set_ylim(min(ylim[0], float(values.min()) * 1.15), top)
    ax.set_ylabel(ylabel)
    ax.set_title(_wrap(title, 12, fig.get_figwidth() - 0.2))
    return fig


def model_colour(name: str, k: int) -> str:
    """The same colour for a model in every plot: attention blue, vanilla orange."""
    return {"attention": BLUE, "vanilla": ORANGE}.get(name, PALETTE[(k + 2) % len(PALETTE)])


def plot_loss_curves(
    histories: Mapping[str, History], *, title: str = "Training and validation loss"
) -> Figure:
    """Notebook 4, section 2: each model's training loss (dashed, circles) and validation
    loss (solid, squares) per epoch, a colour per model."""
    if not histories or any(not h.epoch for h in histories.values()):
        raise ValueError("histories must map each model's name to a History of at least one "
                         f"epoch; got {({n: len(h.epoch) for n, h in histories.items()})}")
    fig, ax = plt.subplots(figsize=(7.5, 4), layout="constrained")
    for k, (name, history) in enumerate(histories.items()):
        colour = model_colour(name, k)
        ax.plot(history.epoch, history.train_loss, "o--", color=colour, label=f"{name}: training")
        ax.plot(history.epoch, history.val_loss, "s-", color=colour, label=f"{name}: validation")
    epochs = sorted({e for h in histories.values() for e in h.epoch})
    ax.set(xlabel="epoch", ylabel="cross-entropy per target token", xticks=epochs, title=title)
    ax.legend(loc="best")
    return fig


def plot_bleu_by_length(comparison: LengthComparison, *, title: str = "BLEU by source length"
                        ) -> Figure:
    """Notebook 4, section 4: BLEU per source-length bucket, a bar per model (the baseline
    first) with its bootstrap interval, each bucket labelled with its number of sentences."""
    buckets = list(comparison.counts)
    models = [comparison.baseline, *(m for m in comparison.models if m != comparison.baseline)]
    fig, ax = plt.subplots(figsize=(7, 3.8), layout="constrained")
    width = 0.8 / len(models)
    for k, name in enumerate(models):
        scores = [comparison.bleu[name][b] for b in buckets]  # None: an empty bucket
        heights = [s.value if s else 0.0 for s in scores]
        errors = [[s.value - s.low if s else 0.0 for s in scores],
                  [s.high - s.value if s else 0.0 for s in scores]]
        offsets = np.arange(len(buckets)) + (k - (len(models) - 1) / 2) * width
        bars = ax.bar(offsets, heights, width, yerr=errors, capsize=3,
                      color=model_colour(name, k), label=name)
        ax.bar_label(bars, fmt="%.1f", fontsize=MIN_FONTSIZE, label_type="center", color="white")
    ax.set_xticks(np.arange(len(buckets)),
                  [f"{b} tokens\n({comparison.counts[b]} sentences)" for b in buckets])
    level = f"{comparison.confidence:.0%}"
    ax.set(ylabel=f"BLEU ({level} interval)", title=title)
    ax.legend()
    return fig
