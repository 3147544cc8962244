"""Plots every notebook shares: attention heatmaps and bar charts of weights.

Each function draws on ``ax`` when given (so notebooks can build grids) and returns the
matplotlib ``Figure``, which tests inspect and notebooks can save.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from typing import Any, cast

import matplotlib.pyplot as plt
import numpy as np
import seaborn as sns
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import FancyBboxPatch
from numpy.typing import ArrayLike

from course_utils.tensors import to_numpy

__all__ = [
    "plot_attention",
    "plot_attention_grid",
    "plot_decoding_step",
    "plot_encoder_decoder",
    "plot_weights",
]


def _as_numpy(array: object) -> np.ndarray:
    return to_numpy(array).astype(float)  # a tensor on any device, or an array


def _check_labels(name: str, labels: Sequence[str] | None, expected: int, axis: str) -> None:
    if labels is not None and len(labels) != expected:
        raise ValueError(
            f"{name} must have one label per {axis} ({expected}); got {len(labels)}"
        )


def _tick_fontsize(n: int) -> float:
    return 10.0 if n <= 15 else 9.0 if n <= 25 else 8.0


def plot_attention(
    weights: ArrayLike,
    source_tokens: Sequence[str] | None = None,
    target_tokens: Sequence[str] | None = None,
    *,
    ax: Axes | None = None,
    title: str = "Attention weights",
    annotate: bool | None = None,
    cmap: str = "viridis",
    colorbar: bool = True,
    mark_alignment: bool = False,
    highlight_rows: Sequence[int] = (),
    highlight_cells: Sequence[tuple[int, int]] = (),
) -> Figure:
    """Heatmap of an attention matrix: row i is output step i, column j source position j.

    Readable up to about 40 tokens a side: the figure grows with the sentence, source labels
    turn vertical past 10 tokens (or when a word is long) and the font shrinks past 15 and 25.

    Args:
        weights: ``(tgt_len, src_len)`` array or tensor; each row a distribution.
        source_tokens: ``src_len`` labels for the columns.
        target_tokens: ``tgt_len`` labels for the rows.
        annotate: write each weight in its cell; by default only when the matrix is small
            enough to read (at most 12 x 12).
        mark_alignment: mark each row's largest weight (the hard alignment) with a dot.
        highlight_rows: output steps to outline (such as the current step of decoding).
        highlight_cells: ``(row, column)`` cells to outline (such as a pattern's words).
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
    if annotate is None:
        annotate = max(tgt_len, src_len) <= 12

    if ax is None:
        cell = 0.42  # inches per token: room for a 10-point label
        width = min(2.6 + cell * src_len, 18.0)
        height = min(1.8 + cell * tgt_len, 16.0)
        fig, ax = plt.subplots(figsize=(width, height), layout="constrained")
    fig = cast(Figure, ax.figure)
    sns.heatmap(
        weights,
        ax=ax,
        vmin=0.0,
        vmax=1.0,
        cmap=cmap,
        square=True,
        annot=annotate,
        fmt=".2f",
        annot_kws={"fontsize": 8},
        cbar=colorbar,
        cbar_kws={"label": "attention weight α", "shrink": 0.8} if colorbar else None,
        xticklabels=list(source_tokens) if source_tokens is not None else True,
        yticklabels=list(target_tokens) if target_tokens is not None else True,
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
        ax.add_patch(plt.Rectangle((0, row), src_len, 1, fill=False, edgecolor="tab:red",
                                   linewidth=2.0, zorder=4))
    for row, column in highlight_cells:
        ax.add_patch(plt.Rectangle((column, row), 1, 1, fill=False, edgecolor="tab:red",
                                   linewidth=2.0, zorder=4))
    ax.set_xlabel("source position j")
    ax.set_ylabel("output step i")
    # a long title (such as a whole translation) wraps to the heatmap's width; line breaks the
    # caller wrote are kept
    width = max(32, int(4.2 * src_len))
    ax.set_title("\n".join(textwrap.fill(line, width=width) for line in title.splitlines()))
    longest = max((len(str(t)) for t in source_tokens), default=0) if source_tokens else 0
    upright = src_len > 10 or longest > 5  # long words would collide side by side
    ax.tick_params(axis="x", labelrotation=90 if upright else 0,
                   labelsize=_tick_fontsize(src_len))
    ax.tick_params(axis="y", labelrotation=0, labelsize=_tick_fontsize(tgt_len))
    return fig


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


def plot_attention_grid(
    items: Sequence,
    *,
    titles: Sequence[str] | None = None,
    ncols: int = 2,
    mark_alignment: bool = False,
    highlight_cells: Sequence[Sequence[tuple[int, int]]] | None = None,
    cmap: str = "viridis",
) -> Figure:
    """Heatmaps of several sentences side by side, sharing one colour scale.

    Args:
        items: Translations (from :mod:`course_utils.translation`) or
            ``(weights, source_tokens, target_tokens)`` tuples.
        titles: one title per item.
        highlight_cells: per item, ``(row, column)`` cells to outline.
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
    ncols = min(ncols, len(items))
    nrows = -(-len(items) // ncols)
    shapes = [_as_numpy(w).shape for w, _, _ in items]
    cell = 0.36
    width = ncols * (1.6 + cell * max(s[1] for s in shapes)) + 1.2
    height = nrows * (1.9 + cell * max(s[0] for s in shapes))
    fig, axes = plt.subplots(nrows, ncols, figsize=(min(width, 22), min(height, 30)),
                             layout="constrained", squeeze=False)
    for n, (weights, source, target) in enumerate(items):
        ax = axes[n // ncols][n % ncols]
        plot_attention(weights, source, target, ax=ax, colorbar=False, cmap=cmap,
                       annotate=False, mark_alignment=mark_alignment,
                       title=titles[n] if titles is not None else f"sentence {n + 1}",
                       highlight_cells=highlight_cells[n] if highlight_cells else ())
    for ax in axes.flat[len(items):]:
        ax.set_visible(False)
    mappable = plt.cm.ScalarMappable(plt.Normalize(0.0, 1.0), cmap=cmap)
    fig.colorbar(mappable, ax=axes, shrink=0.6, label="attention weight α")
    return fig


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
    """Bar chart of one vector of weights (or energies), the largest bar highlighted."""
    values = _as_numpy(weights)
    if values.ndim != 1:
        raise ValueError(f"weights must be a vector (src_len,); got shape {values.shape}")
    _check_labels("labels", labels, values.shape[0], "bar")
    labels = list(labels) if labels is not None else [f"{j + 1}" for j in range(len(values))]

    if ax is None:
        fig, ax = plt.subplots(figsize=(1.0 + 0.6 * len(values), 3.2), layout="constrained")
    fig = cast(Figure, ax.figure)
    colors = ["tab:blue"] * len(values)
    if highlight_max and len(values):
        colors[int(np.argmax(values))] = "tab:orange"
    bars = ax.bar(range(len(values)), values, color=colors)
    ax.set_xticks(range(len(values)), labels)
    if annotate:
        ax.bar_label(bars, fmt="%.2f", fontsize=8, padding=2)
    if ylim is not None:
        top = max(ylim[1], float(values.max()) * 1.15 if len(values) else ylim[1])
        ax.set_ylim(min(ylim[0], float(values.min()) * 1.15), top)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    return fig


def _box(ax: Axes, x: float, y: float, text: str, *, width: float, height: float = 0.7,
         color: str = "#e8eef7", fontsize: float = 10) -> None:
    """A rounded box centred on (x, y) with ``text`` in it."""
    ax.add_patch(FancyBboxPatch((x - width / 2, y - height / 2), width, height,
                                boxstyle="round,pad=0.02,rounding_size=0.12",
                                facecolor=color, edgecolor="0.35", lw=1.0))
    ax.text(x, y, text, ha="center", va="center", fontsize=fontsize)


def _arrow(ax: Axes, start: tuple[float, float], end: tuple[float, float], *,
           lw: float = 1.2, color: str = "0.3", rad: float = 0.0) -> None:
    ax.annotate("", xy=end, xytext=start,
                arrowprops={"arrowstyle": "-|>", "lw": lw, "color": color,
                            "shrinkA": 2, "shrinkB": 2,
                            "connectionstyle": f"arc3,rad={rad}"})


def plot_decoding_step(
    weights: ArrayLike = (0.1, 0.6, 0.25, 0.05),
    source: Sequence[str] | None = None,
    *,
    ax: Axes | None = None,
    title: str = "One decoding step of the Bahdanau model",
) -> Figure:
    """A diagram of decoder step ``i``, in the lesson's symbols.

    Bottom to top: the source words ``x_j`` and the encoder states
    ``h_j = [h_fwd_j; h_bwd_j]``; one energy ``e_ij = v^T tanh(W_s s_(i-1) + W_h h_j)`` per
    encoder state, all queried with the previous decoder state ``s_(i-1)``; the weights
    ``alpha_ij = softmax_j(e_ij)`` drawn as bars of height ``weights``; the context
    ``c_i = sum_j alpha_ij h_j`` (arrows as thick as the weights); the GRU update
    ``s_i = f(s_(i-1), y_(i-1), c_i)``; and the deep output layer that predicts ``y_i`` from
    ``s_i``, ``c_i`` and ``y_(i-1)``.

    ``weights`` is one non-negative vector summing to 1 (2 to 8 source positions);
    ``source`` optionally names the source words.
    """
    alpha = _as_numpy(weights).astype(float)
    if alpha.ndim != 1 or not 2 <= alpha.shape[0] <= 8:
        raise ValueError(f"weights must be a vector of 2 to 8 weights; got shape {alpha.shape}")
    if not np.all(np.isfinite(alpha)) or alpha.min() < 0 or not np.isclose(alpha.sum(), 1.0,
                                                                          atol=1e-3):
        raise ValueError(f"weights must be non-negative and sum to 1 (a softmax); got {alpha}")
    n = alpha.shape[0]
    _check_labels("source", source, n, "source word")
    words = list(source) if source is not None else [f"$x_{j + 1}$" for j in range(n)]

    if ax is None:
        fig, ax = plt.subplots(figsize=(10.5, 5.6), layout="constrained")
    fig = cast(Figure, ax.figure)
    step = 1.9
    xs = [1.2 + step * j for j in range(n)]
    right = xs[-1] + 2.6  # the decoder column
    width = min(1.5, step - 0.3)

    for j, x in enumerate(xs):
        ax.text(x, 0.3, words[j], ha="center", va="center", fontsize=10)
        _arrow(ax, (x, 0.55), (x, 1.05))
        _box(ax, x, 1.4, f"$h_{j + 1}$", width=width, color="#dbe9d6")
        _arrow(ax, (x, 1.75), (x, 2.75))
        _box(ax, x, 3.1, f"$e_{{i{j + 1}}}$", width=width, color="#f3e3d3")
        _arrow(ax, (x, 3.45), (x, 3.85))
        height = 1.3 * alpha[j]
        ax.add_patch(plt.Rectangle((x - 0.3, 3.9), 0.6, height, color="tab:orange", alpha=0.85))
        ax.text(x, 3.95 + height, f"{alpha[j]:.2f}", ha="center", va="bottom", fontsize=8)
    for a, b in zip(xs, xs[1:]):  # the bidirectional encoder reads both ways
        ax.annotate("", xy=(b - width / 2, 1.5), xytext=(a + width / 2, 1.5),
                    arrowprops={"arrowstyle": "<|-|>", "lw": 0.9, "color": "0.45"})
    ax.text(xs[0] - width / 2 - 0.15, 1.4, "encoder\n(biGRU)", ha="right", va="center",
            fontsize=9, color="0.3")
    ax.text((xs[0] + xs[-1]) / 2, 2.1,
            r"$e_{ij} = v^\top \tanh(W_s\, s_{i-1} + W_h h_j)$", ha="center", va="center",
            fontsize=10, bbox={"facecolor": "white", "edgecolor": "none", "pad": 1})
    ax.text(xs[0] - width / 2 - 0.15, 4.4, r"$\alpha_{ij} = \mathrm{softmax}_j(e_{ij})$",
            ha="right", va="center", fontsize=10)

    # decoder column: s_(i-1) queries every energy, then the GRU and the output layer
    _box(ax, right, 3.1, "$s_{i-1}$", width=1.3, color="#dde3f3")
    ax.plot([xs[0] + 0.35, right - 0.65], [2.5, 2.5], color="tab:blue", lw=1.0, ls="--")
    ax.plot([right - 0.65, right - 0.65], [2.5, 3.1], color="tab:blue", lw=1.0, ls="--")
    for x in xs:
        _arrow(ax, (x + 0.35, 2.5), (x + 0.35, 2.78), color="tab:blue")
    ax.text(right, 2.45, "query: the state\nbefore this step", ha="center", va="top",
            fontsize=8, color="tab:blue")

    _box(ax, right - 1.3, 6.0, r"$c_i = \sum_j \alpha_{ij} h_j$", width=2.2, color="#dbe9d6")
    for j, x in enumerate(xs):
        _arrow(ax, (x, 3.95 + 1.3 * alpha[j] + 0.4), (right - 1.3 - 0.6, 5.75),
               lw=0.4 + 4.0 * alpha[j], color="tab:green")
    _box(ax, right + 1.0, 4.6, "$y_{i-1}$", width=1.0, color="#f0f0f0")
    _box(ax, right + 0.6, 7.3, "GRU: $s_i = f(s_{i-1}, y_{i-1}, c_i)$", width=3.6,
         color="#dde3f3")
    _arrow(ax, (right - 1.3, 6.35), (right - 0.2, 6.95))
    _arrow(ax, (right, 3.45), (right + 0.1, 6.95), rad=0.0)
    _arrow(ax, (right + 1.0, 4.95), (right + 1.1, 6.95))
    _box(ax, right + 0.6, 8.7, "deep output: maxout, then $W_o$  →  $p(y_i)$", width=4.4,
         color="#f3e3d3")
    _arrow(ax, (right + 0.6, 7.65), (right + 0.6, 8.35))
    _arrow(ax, (right - 2.2, 6.35), (right - 1.3, 8.35), color="0.55")
    ax.text(right + 0.75, 8.0, "$s_i$", ha="left", va="center", fontsize=9, color="0.3")
    ax.text(right - 2.05, 7.4, "$c_i$", ha="right", va="center", fontsize=9, color="0.3")
    ax.text(right + 2.9, 8.0, "(and $y_{i-1}$)", ha="right", va="center", fontsize=8,
            color="0.3")

    ax.set_xlim(-0.9, right + 3.3)
    ax.set_ylim(0.0, 9.3)
    ax.set_aspect("auto")
    ax.axis("off")
    ax.set_title(title)
    return fig


def plot_encoder_decoder(
    source: Sequence[str] = ("a", "dog", "runs", "."),
    target: Sequence[str] = ("ein", "hund", "rennt", "."),
    *,
    step: int = 2,
    ax: Axes | None = None,
    title: str = "The Bahdanau encoder-decoder",
) -> Figure:
    """Overview of the whole model on one sentence pair, in the lesson's symbols.

    The bidirectional encoder (a forward and a backward GRU whose states are concatenated into
    ``h_j``), the bridge ``s_0 = tanh(W [h_fwd_T; h_bwd_1])``, and the decoder states
    ``s_1, s_2, ...`` each fed ``y_(i-1)``; for decoder step ``step`` (1-based) the lines show
    attention from ``s_(step-1)`` to every ``h_j``.
    """
    if not source or not target:
        raise ValueError("source and target must each hold at least one word")
    if not 1 <= step <= len(target):
        raise ValueError(f"step must be between 1 and len(target) = {len(target)}; got {step}")
    n, m = len(source), len(target)
    if ax is None:
        fig, ax = plt.subplots(figsize=(10.5, 4.6), layout="constrained")
    fig = cast(Figure, ax.figure)
    gap = 1.5
    xs = [0.8 + gap * j for j in range(n)]
    start = xs[-1] + 2.2
    ds = [start + gap * i for i in range(m + 1)]  # s_0, s_1, ..., s_m

    for j, x in enumerate(xs):
        ax.text(x, 0.3, source[j], ha="center", va="center", fontsize=10)
        _arrow(ax, (x, 0.5), (x, 0.95))
        _box(ax, x, 1.3, rf"$\overrightarrow{{h}}_{j + 1}$", width=1.0, color="#dbe9d6")
        _box(ax, x, 2.3, rf"$\overleftarrow{{h}}_{j + 1}$", width=1.0, color="#dbe9d6")
    for a, b in zip(xs, xs[1:]):
        _arrow(ax, (a + 0.5, 1.3), (b - 0.5, 1.3))
        _arrow(ax, (b - 0.5, 2.3), (a + 0.5, 2.3))
    ax.text(xs[0] - 0.65, 1.3, "forward\nGRU", ha="right", va="center", fontsize=8)
    ax.text(xs[0] - 0.65, 2.3, "backward\nGRU", ha="right", va="center", fontsize=8)
    ax.text(xs[0] - 0.5, 3.35, r"$h_j = [\overrightarrow{h}_j; \overleftarrow{h}_j]$",
            ha="left", va="center", fontsize=10)

    for i, x in enumerate(ds):
        _box(ax, x, 4.6, f"$s_{i}$", width=1.0, color="#dde3f3")
        if i:
            _arrow(ax, (ds[i - 1] + 0.5, 4.6), (x - 0.5, 4.6))
            ax.text(x, 5.75, target[i - 1], ha="center", va="center", fontsize=10)
            _arrow(ax, (x, 4.95), (x, 5.55))
            previous = "<bos>" if i == 1 else target[i - 2]
            ax.text(x - 0.3, 3.75, previous, ha="center", va="center", fontsize=8, color="0.35")
            _arrow(ax, (x - 0.3, 3.9), (x - 0.3, 4.25), color="0.55")
    _arrow(ax, (xs[-1] + 0.5, 1.3), (ds[0], 4.25), color="0.55", rad=0.25)
    ax.text(ds[0] + 0.15, 2.3, r"bridge: $s_0 = \tanh(W[\overrightarrow{h}_T;"
            r" \overleftarrow{h}_1])$", ha="left", va="center", fontsize=9, color="0.3")
    query = ds[step - 1]
    for x in xs:  # attention of step `step`: queried with s_(step-1)
        ax.plot([query, x], [4.25, 2.65], color="tab:orange", lw=1.0, alpha=0.8)
    ax.text(ds[step], 6.35, f"step {step}: $s_{{{step - 1}}}$ attends to every $h_j$, "
            f"then $s_{step}$ writes “{target[step - 1]}”", ha="center", va="center",
            fontsize=9, color="tab:orange")
    ax.set_xlim(-0.9, ds[-1] + 0.8)
    ax.set_ylim(0.0, 6.7)
    ax.axis("off")
    ax.set_title(title)
    return fig
