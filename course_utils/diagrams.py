"""Diagrams of the Bahdanau model, drawn in the lesson's symbols.

:func:`plot_attention_shapes` shows the attention module's computation with the shape of every
tensor (notebook 2, section 2: what the student's ``forward`` computes);
:func:`plot_decoding_step` shows one decoder step (energies, weights, context, the GRU update and
the deep output); :func:`plot_encoder_decoder` the whole model on one sentence pair (the
bidirectional encoder, the bridge to ``s_0``, and one step's attention entering its state).
Both are 8 inches wide, the width of a notebook's output at 100 dpi, so their text (9 points or
more) is printed at its size; every arrow starts at the box its meaning names and no arrow or
line crosses a text. (Bahdanau, Cho and Bengio, 2015, section 3 and appendix A.)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import FancyBboxPatch
from numpy.typing import ArrayLike

from course_utils.colours import BLUE, GREEN, ORANGE, TINTS
from course_utils.tensors import to_numpy

__all__ = ["plot_attention_shapes", "plot_decoding_step", "plot_encoder_decoder"]

WIDTH = 8.0  # inches: a notebook's output width at 100 dpi (see course_utils.plotting)
GREY = "0.2"  # side labels: dark enough to read as text, not as lines


def _box(ax: Axes, x: float, y: float, text: str, *, width: float, height: float = 0.42,
         color: str = TINTS["blue"], fontsize: float = 10, edge: str = "0.35",
         linestyle: str = "-") -> None:
    """A rounded box centred on (x, y) with ``text`` in it."""
    ax.add_patch(FancyBboxPatch((x - width / 2, y - height / 2), width, height,
                                boxstyle="round,pad=0.0,rounding_size=0.08",
                                facecolor=color, edgecolor=edge, lw=1.0, ls=linestyle))
    if text:
        ax.text(x, y, text, ha="center", va="center", fontsize=fontsize)


def _arrow(ax: Axes, start: tuple[float, float], end: tuple[float, float], *,
           lw: float = 1.2, color: str = GREY, rad: float = 0.0, style: str = "-|>",
           linestyle: str = "-") -> None:
    ax.annotate("", xy=end, xytext=start,
                arrowprops={"arrowstyle": style, "lw": lw, "color": color, "ls": linestyle,
                            "shrinkA": 0, "shrinkB": 1,
                            "connectionstyle": f"arc3,rad={rad}"})


def _new_axes(ax: Axes | None, height: float) -> tuple[Figure, Axes]:
    if ax is None:
        _, ax = plt.subplots(figsize=(WIDTH, height), layout="constrained")
    return cast(Figure, ax.figure), ax


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
    ``s_i``, ``c_i`` and ``y_(i-1)`` (an arrow from each).

    ``weights`` is one non-negative vector summing to 1 (2 to 8 source positions);
    ``source`` optionally names the source words.
    """
    alpha = to_numpy(weights).astype(float)
    if alpha.ndim != 1 or not 2 <= alpha.shape[0] <= 8:
        raise ValueError(f"weights must be a vector of 2 to 8 weights; got shape {alpha.shape}")
    if not np.all(np.isfinite(alpha)) or alpha.min() < 0 or not np.isclose(alpha.sum(), 1.0,
                                                                          atol=1e-3):
        raise ValueError(f"weights must be non-negative and sum to 1 (a softmax); got {alpha}")
    n = alpha.shape[0]
    if source is not None and len(source) != n:
        raise ValueError(f"source must have one label per source word ({n}); got {len(source)}")
    words = list(source) if source is not None else [f"$x_{j + 1}$" for j in range(n)]

    fig, ax = _new_axes(ax, 6.0)
    # the encoder side: columns between x = 1.3 and 4.7, a 1.0-wide margin for row names
    step = min(1.05, 3.4 / (n - 1))
    xs = [1.3 + step * j for j in range(n)]
    box = min(0.75, step - 0.12)
    y_word, y_h, y_e, y_bar, bar_max = 0.25, 0.95, 2.25, 2.75, 0.9
    for j, x in enumerate(xs):
        ax.text(x, y_word, words[j], ha="center", va="center", fontsize=10)
        _arrow(ax, (x, y_word + 0.15), (x, y_h - 0.21))
        _box(ax, x, y_h, f"$h_{j + 1}$", width=box, color=TINTS["green"])
        _arrow(ax, (x - 0.1, y_h + 0.21), (x - 0.1, y_e - 0.21))  # h_j -> e_ij
        _box(ax, x, y_e, f"$e_{{i{j + 1}}}$", width=box, color=TINTS["orange"])
        height = bar_max * alpha[j]
        ax.add_patch(plt.Rectangle((x - 0.15, y_bar), 0.3, height, color=ORANGE,
                                   alpha=0.85))
        ax.text(x, y_bar + height + 0.04, f"{alpha[j]:.2f}", ha="center", va="bottom",
                fontsize=9)
        _arrow(ax, (x, y_e + 0.21), (x, y_bar - 0.02), lw=1.0)  # e_ij -> alpha_ij
    for a, b in zip(xs, xs[1:]):  # the bidirectional encoder reads both ways
        ax.annotate("", xy=(b - box / 2, y_h), xytext=(a + box / 2, y_h),
                    arrowprops={"arrowstyle": "<|-|>", "lw": 0.9, "color": "0.45",
                                "shrinkA": 0, "shrinkB": 0})
    left = xs[0] - box / 2 - 0.1
    for y, name in [(y_h, "encoder\n(biGRU)"), (y_e, "energies"),
                    (y_bar + 0.3, "weights\n(an example)")]:
        ax.text(left, y, name, ha="right", va="center", fontsize=10, color=GREY)

    # the query s_(i-1): a dashed line under the energies, an arrow up into each of them
    x_query, y_query = 5.55, 1.6
    _box(ax, x_query, y_query, "$s_{i-1}$", width=0.75, color=TINTS["blue"])
    ax.plot([xs[0] + 0.12, x_query - 0.375], [y_query, y_query], color=BLUE, lw=1.0,
            ls="--")
    for x in xs:
        _arrow(ax, (x + 0.12, y_query), (x + 0.12, y_e - 0.21), color=BLUE, lw=1.0)
    ax.text(x_query, y_query - 0.3, "query: the state\nbefore step $i$", ha="center",
            va="top", fontsize=9, color=BLUE)

    # the context: an arrow from each weighted h_j, as thick as its weight
    x_c, y_c = (xs[0] + xs[-1]) / 2, 4.45
    _box(ax, x_c, y_c, r"$c_i = \sum_j \alpha_{ij} h_j$", width=1.7, height=0.5,
         color=TINTS["green"])
    for j, x in enumerate(xs):
        top = y_bar + bar_max * alpha[j] + 0.25  # above the printed weight
        end = (x_c + (x - x_c) * 0.4, y_c - 0.25)
        _arrow(ax, (x, top), end, lw=0.4 + 4.0 * alpha[j], color=GREEN)

    # the decoder: the GRU reads s_(i-1), y_(i-1) and c_i; the deep output s_i, c_i, y_(i-1)
    x_gru, y_gru, w_gru = 6.3, 4.45, 2.15
    x_prev, x_out, y_out = 7.45, 6.45, 5.55
    _box(ax, x_gru, y_gru, "GRU\n$s_i = f(s_{i-1}, y_{i-1}, c_i)$", width=w_gru, height=0.6,
         color=TINTS["blue"])
    _box(ax, x_prev, y_query, "$y_{i-1}$", width=0.6, color="#f0f0f0")
    ax.text(x_prev, y_query - 0.3, "previous\nword", ha="center", va="top", fontsize=10,
            color=GREY)
    _box(ax, x_out, y_out, "deep output: maxout,\nthen $W_o$ → $p(y_i)$", width=2.6,
         height=0.6, color=TINTS["orange"])
    _arrow(ax, (x_query, y_query + 0.21), (x_query, y_gru - 0.3))  # s_(i-1) -> GRU
    _arrow(ax, (x_prev - 0.15, y_query + 0.21), (x_prev - 0.15, y_gru - 0.3))  # y -> GRU
    _arrow(ax, (x_prev + 0.2, y_query + 0.21), (x_prev + 0.2, y_out - 0.3))  # y -> output
    _arrow(ax, (x_c + 0.85, y_c), (x_gru - w_gru / 2, y_c))  # c_i -> GRU
    _arrow(ax, (x_c + 0.5, y_c + 0.25), (x_out - 1.15, y_out - 0.3))  # c_i -> output
    _arrow(ax, (x_gru, y_gru + 0.3), (x_gru, y_out - 0.3))  # s_i -> output
    ax.text(x_gru + 0.08, (y_gru + y_out) / 2, "$s_i$", ha="left", va="center", fontsize=10,
            color=GREY)

    # the two formulas the boxes do not hold
    ax.text(0.05, 5.75, r"$e_{ij} = v^\top \tanh(W_s\, s_{i-1} + W_h h_j)$", ha="left",
            va="center", fontsize=10)
    ax.text(0.05, 5.35, r"$\alpha_{ij} = \mathrm{softmax}_j(e_{ij})$", ha="left",
            va="center", fontsize=10)
    ax.set_xlim(0.0, WIDTH)
    ax.set_ylim(0.0, 6.05)
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

    The bidirectional encoder: a forward and a backward GRU whose states, outlined together,
    are ``h_j = [h_fwd_j; h_bwd_j]``; the bridge ``s_0 = tanh(W [h_fwd_T; h_bwd_1])``, with an
    arrow from each of the two states it reads; the decoder states ``s_1, s_2, ...`` each fed
    ``y_(i-1)``. For decoder step ``step`` (1-based) a line runs from every ``h_j`` to the
    context ``c_step``, which ``s_(step-1)`` queries and which enters ``s_step``.
    """
    if not source or not target:
        raise ValueError("source and target must each hold at least one word")
    if not 1 <= step <= len(target):
        raise ValueError(f"step must be between 1 and len(target) = {len(target)}; got {step}")
    if len(source) > 8 or len(target) > 7:
        raise ValueError(f"the diagram has room for 8 source and 7 target words; got "
                         f"{len(source)} and {len(target)}")
    n, m = len(source), len(target)
    fig, ax = _new_axes(ax, 5.0)
    gap = min(1.0, 3.2 / max(n - 1, 1))
    xs = [1.5 + gap * j for j in range(n)]
    box = min(0.7, gap - 0.15)
    y_word, y_fwd, y_bwd, y_path = 0.3, 1.0, 1.7, 0.04
    for j, x in enumerate(xs):
        ax.text(x, y_word, source[j], ha="center", va="center", fontsize=10)
        _arrow(ax, (x, y_word + 0.15), (x, y_fwd - 0.21))
        _box(ax, x, y_fwd, rf"$\overrightarrow{{h}}_{j + 1}$", width=box, color=TINTS["green"])
        _box(ax, x, y_bwd, rf"$\overleftarrow{{h}}_{j + 1}$", width=box, color=TINTS["green"])
        # h_j: the two directions' states, outlined together
        _box(ax, x, (y_fwd + y_bwd) / 2, "", width=box + 0.1, height=1.2, color="none",
             edge=GREEN, linestyle="--")
    for a, b in zip(xs, xs[1:]):
        _arrow(ax, (a + box / 2, y_fwd), (b - box / 2, y_fwd))
        _arrow(ax, (b - box / 2, y_bwd), (a + box / 2, y_bwd))
    label_x = xs[-1] + box / 2 + 0.45
    ax.text(label_x, y_fwd, "forward GRU", ha="left", va="center", fontsize=10, color=GREY)
    ax.text(label_x, y_bwd, "backward GRU", ha="left", va="center", fontsize=10, color=GREY)
    ax.text(label_x, 0.55, r"$h_j = [\overrightarrow{h}_j; \overleftarrow{h}_j]$ (outlined)",
            ha="left", va="center", fontsize=9, color=GREEN)

    # decoder states along the top, s_0 above the bridge at the left
    x_bridge, y_bridge, y_s = 0.6, 2.55, 4.0
    dgap = min(1.2, (WIDTH - 0.5 - x_bridge) / m)
    ds = [x_bridge + dgap * i for i in range(m + 1)]  # s_0, s_1, ..., s_m
    for i, x in enumerate(ds):
        _box(ax, x, y_s, f"$s_{i}$", width=0.6, color=TINTS["blue"])
        if not i:
            continue
        _arrow(ax, (ds[i - 1] + 0.3, y_s), (x - 0.3, y_s))
        ax.text(x, y_s + 0.6, target[i - 1], ha="center", va="center", fontsize=10)
        _arrow(ax, (x, y_s + 0.21), (x, y_s + 0.45))
        previous = "<bos>" if i == 1 else target[i - 2]
        ax.text(x - 0.15, y_s - 0.6, previous, ha="center", va="center", fontsize=10, color=GREY)
        _arrow(ax, (x - 0.15, y_s - 0.48), (x - 0.15, y_s - 0.21), color="0.55")

    # the bridge reads the forward GRU's last state and the backward GRU's last (h_bwd_1)
    _box(ax, x_bridge, y_bridge, "bridge", width=0.8, fontsize=9, color="#f0f0f0")
    _arrow(ax, (x_bridge, y_bridge + 0.21), (x_bridge, y_s - 0.21))
    _arrow(ax, (xs[0] - box / 2, y_bwd), (x_bridge + 0.2, y_bridge - 0.21), color="0.45")
    path_x = [xs[-1] + box / 2, xs[-1] + box / 2 + 0.2, xs[-1] + box / 2 + 0.2,
              x_bridge - 0.2, x_bridge - 0.2]
    path_y = [y_fwd, y_fwd, y_path, y_path, y_bridge - 0.3]
    ax.plot(path_x, path_y, color="0.45", lw=1.2, label="bridge from the forward GRU")
    _arrow(ax, (x_bridge - 0.2, y_bridge - 0.31), (x_bridge - 0.2, y_bridge - 0.21),
           color="0.45")
    ax.text(label_x, 0.15, r"bridge: $s_0 = \tanh(W[\overrightarrow{h}_T;"
            r" \overleftarrow{h}_1])$", ha="left", va="center", fontsize=9, color=GREY)

    # step `step`: s_(step-1) queries, every h_j is read, c_step enters s_step
    x_c, y_c = ds[step] + 0.15, 2.9
    _box(ax, x_c, y_c, f"$c_{step}$", width=0.5, height=0.38, fontsize=10, color=TINTS["orange"])
    _arrow(ax, (x_c, y_c + 0.19), (x_c, y_s - 0.21), color=ORANGE)
    _arrow(ax, (ds[step - 1] + 0.3, y_s - 0.12), (x_c - 0.25, y_c + 0.05), color=ORANGE,
           linestyle="--", lw=1.0)
    for x in xs:
        ax.plot([x, x_c + 0.2 * np.sign(x - x_c)], [y_bwd + 0.25, y_c - 0.19],
                color=ORANGE, lw=1.0, alpha=0.9, label="attention")
    ax.text(WIDTH - 0.05, 4.95, f"step {step}: $s_{{{step - 1}}}$ queries every $h_j$; the "
            f"context $c_{step}$ enters $s_{step}$, which writes “{target[step - 1]}”",
            ha="right", va="center", fontsize=9, color=ORANGE)
    ax.set_xlim(0.0, WIDTH)
    ax.set_ylim(-0.05, 5.1)
    ax.axis("off")
    ax.set_title(title)
    return fig


def plot_attention_shapes(ax: Axes | None = None,
                          title: str = "One attention step for a batch, shape by shape") -> Figure:
    """The additive attention module's ``forward`` as a flow of tensors, each with its shape.

    ``s_(i-1)`` through ``W_s`` to the query and the ``h_j`` through ``W_h`` to the keys; their
    broadcast sum through ``tanh`` and ``v`` to the energies; padding set to minus infinity,
    a softmax over the source positions, and the weighted sum of the ``h_j``, the context.
    Notebook 2, section 2 draws it: the student writes the module from it and the equations.
    """
    fig, ax = _new_axes(ax, 3.3)
    top, mid, low = 3.0, 1.9, 0.55
    query_colour, key_colour, out_colour = TINTS["blue"], TINTS["green"], TINTS["orange"]
    _box(ax, 0.95, top, "$s_{i-1}$  (B, $d_s$)", width=1.6, color=query_colour)
    _box(ax, 2.35, top, "$W_s$", width=0.55, color="#f0f0f0")
    _box(ax, 3.75, top, "query  (B, 1, $d_a$)", width=1.75, color=query_colour)
    _box(ax, 0.95, mid, "$h_j$  (B, $T_x$, $d_h$)", width=1.6, color=key_colour)
    _box(ax, 2.35, mid, "$W_h$", width=0.55, color="#f0f0f0")
    _box(ax, 3.75, mid, "keys  (B, $T_x$, $d_a$)", width=1.75, color=key_colour)
    for y in (top, mid):
        _arrow(ax, (1.75, y), (2.07, y))
        _arrow(ax, (2.63, y), (2.87, y))
    _box(ax, 6.0, (top + mid) / 2, "tanh(query + keys)\n(B, $T_x$, $d_a$)", width=1.95,
         height=0.62, color="#f0f0f0")
    _arrow(ax, (4.63, top), (5.02, (top + mid) / 2 + 0.12))
    _arrow(ax, (4.63, mid), (5.02, (top + mid) / 2 - 0.12))
    _box(ax, 7.35, (top + mid) / 2, "$v$", width=0.4, color="#f0f0f0")
    _arrow(ax, (6.98, (top + mid) / 2), (7.15, (top + mid) / 2))
    ax.text(7.2, 1.35, "energies $e$  (B, $T_x$)", ha="right", va="center", fontsize=10)
    _arrow(ax, (7.35, (top + mid) / 2 - 0.21), (7.35, low + 0.21))
    _box(ax, 7.0, low, "padding: $-\\infty$", width=1.35, color="#f0f0f0", fontsize=9)
    _box(ax, 5.35, low, "softmax over $j$", width=1.45, color="#f0f0f0", fontsize=9)
    _box(ax, 3.65, low, "weights $\\alpha$  (B, $T_x$)", width=1.6, color=out_colour)
    _box(ax, 1.0, low, "context $\\Sigma_j\\, \\alpha_j h_j$  (B, $d_h$)", width=1.95,
         color=out_colour)
    _arrow(ax, (6.32, low), (6.08, low))
    _arrow(ax, (4.62, low), (4.46, low))
    _arrow(ax, (2.85, low), (1.98, low))
    _arrow(ax, (0.6, mid - 0.21), (0.6, low + 0.21), color=GREEN)  # the h_j are summed
    ax.text(0.7, (mid + low) / 2, "weighted by $\\alpha$", ha="left", va="center", fontsize=9,
            color=GREEN)
    ax.set_xlim(0.0, WIDTH)
    ax.set_ylim(0.2, 3.4)
    ax.axis("off")
    ax.set_title(title)
    return fig
