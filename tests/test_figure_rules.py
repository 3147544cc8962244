"""The course's figure rules, stated in code.

A notebook shows a figure at most about 8 inches wide (800 pixels at the inline backend's
100 dpi); a wider one is shrunk to fit, and its text with it. So every figure the plotting
helpers draw must be at most ``NOTEBOOK_WIDTH`` wide and print every text at ``MIN_FONTSIZE``
points or more; titles, labels and legends lie inside the figure; a grid of heatmaps has no
empty slot and one cell size; the colour scale shows the weights of a typical attention matrix;
no arrow or line of a diagram runs through a text; a legend does not cover a plotted line.
The last test reads the figures committed in the notebooks: none is wider than a notebook.
"""

import base64
import json
import struct
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pytest
import test_result_plots as result_plots  # the same data as the content tests
from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch
from matplotlib.text import Text
from matplotlib.transforms import Bbox

from course_utils.diagrams import plot_attention_shapes
from course_utils.exposure_bias import plot_accuracy_by_position
from course_utils.plotting import (
    MIN_FONTSIZE,
    NOTEBOOK_WIDTH,
    plot_attention,
    plot_attention_grid,
    plot_bleu_by_length,
    plot_decoding_step,
    plot_encoder_decoder,
    plot_loss_curves,
    plot_weights,
)
from course_utils.reversal import reversal_vocab
from course_utils.views import reversal as views
from course_utils.views.attention_cost import CostGrid, plot_attention_cost, show_padding_masks
from course_utils.views.intro import plot_bottleneck, plot_energies_and_weights
from course_utils.views.scores import plot_bleu_gains
from course_utils.views.translation import plot_sentence_lengths

ROOT = Path(__file__).resolve().parents[1]


def reversal_history():
    """A training history like notebook 3's: six epochs, snapshots at 0, 1, 2 and 6."""
    from course_utils.training import History

    anti = np.fliplr(np.eye(12)) * 0.6 + 0.4 / 12
    snapshots = {0: [np.full((12, 12), 1 / 12)], 1: [anti], 2: [anti], 6: [anti]}
    return History(epoch=list(range(1, 7)), train_loss=[1.7, 0.2, 0.04, 0.002, 8e-4, 6e-4],
                   val_loss=[1.1, 0.02, 0.003, 0.002, 1e-3, 9e-4],
                   val_token_accuracy=[0.6, 0.95, 0.99, 1.0, 1.0, 1.0],
                   val_exact_match=[0.24, 0.958, 0.998, 0.998, 1.0, 1.0],
                   seconds=[15.0, 30.0, 45.0, 60.0, 75.0, 90.0], snapshots=snapshots)


def typical_attention(tgt_len: int, src_len: int, seed: int = 0) -> np.ndarray:
    """Rows like a trained model's: softmax of N(0, 1) energies with one near-diagonal peak,
    which holds about 0.58 of a row on average (notebook 5's model after 5 epochs: 0.58)."""
    rng = np.random.default_rng(seed)
    energies = rng.normal(0.0, 1.0, (tgt_len, src_len))
    energies[np.arange(tgt_len), np.arange(tgt_len) * src_len // tgt_len] += 3.5
    weights = np.exp(energies)
    return weights / weights.sum(axis=1, keepdims=True)


def words(prefix: str, n: int) -> list[str]:
    return [f"{prefix}{k}" for k in range(n)]


CAPTION = ("ein mann in hellen farben kleidung spielt mit einer gruppe von männern und "
           "dunklen männern in einer <unk> .")


def heatmap(tgt: int, src: int, **kwargs) -> Figure:
    return plot_attention(typical_attention(tgt, src), words("source", src),
                          words("ziel", tgt), mark_alignment=True, **kwargs)


def grid(shapes: list[tuple[int, int]], **kwargs) -> Figure:
    items = [(typical_attention(t, s, seed), words("w", s), words("z", t))
             for seed, (t, s) in enumerate(shapes)]
    kwargs.setdefault("titles", [f"{t} x {s}" for t, s in shapes])
    return plot_attention_grid(items, **kwargs)


FIGURES = {
    "heatmap 5 x 6, annotated": lambda: heatmap(6, 5, annotate=True),
    "heatmap 26 x 20, a long title": lambda: heatmap(20, 26, title=f"“{CAPTION}”"),
    "heatmap 30 x 30, long words": lambda: plot_attention(
        typical_attention(30, 30), words("englishword", 30), words("deutscheswort", 30)),
    "heatmap 45 x 40": lambda: heatmap(40, 45),
    "grid of 3 sentences": lambda: grid([(8, 9), (15, 13), (19, 18)], ncols=2,
                                        mark_alignment=True),
    "grid of 4 sentences": lambda: grid([(8, 9), (15, 13), (10, 10), (12, 17)], ncols=2),
    "grid of 6 probes, long titles": lambda: grid(
        [(10, 10), (12, 10), (11, 12), (9, 8), (12, 12), (9, 10)], ncols=2,
        titles=[f"“{CAPTION[:40 + 5 * k]}”" for k in range(6)]),
    "grid of 3 epochs": lambda: grid([(14, 13)] * 3, ncols=3),
    "bars 4": lambda: plot_weights([0.1, 0.6, 0.25, 0.05], ["the", "cat", "sat", "."]),
    "bars 26": lambda: plot_weights(typical_attention(1, 26)[0], words("word", 26)),
    "decoding step, 4 words": lambda: plot_decoding_step([0.1, 0.6, 0.25, 0.05],
                                                         ["the", "cat", "sat", "."]),
    "decoding step, 2 words": lambda: plot_decoding_step([0.3, 0.7]),
    "decoding step, 8 words": lambda: plot_decoding_step(np.full(8, 0.125)),
    "encoder-decoder, notebook 3": lambda: plot_encoder_decoder(
        ["a", "b", "c", "d"], ["d", "c", "b", "a"], step=2,
        title="The Bahdanau encoder-decoder, reversing a b c d"),
    "encoder-decoder, first step": lambda: plot_encoder_decoder(step=1),
    "encoder-decoder, last step": lambda: plot_encoder_decoder(
        ["a", "dog", "runs", "in", "the", "park", "."],
        ["ein", "hund", "rennt", "im", "park", "."], step=6),
    # notebooks 1 and 4's result plots, on data like theirs (tests/test_result_plots.py)
    "bottleneck, notebook 1": lambda: plot_bottleneck(result_plots.fading_recall(),
                                                      state_dim=16, word_dim=4),
    "energies and weights, notebook 1": lambda: plot_energies_and_weights(
        [1.52, 2.01, -0.92], [0.37, 0.60, 0.03], ["$h_1$=[-1,2]", "$h_2$=[-1,0]", "$h_3$=[2,-1]"],
        step=2),
    "loss curves, notebook 4": lambda: plot_loss_curves(
        result_plots.histories(), title="Training and validation loss, same budget"),
    "BLEU by length, notebook 4": lambda: plot_bleu_by_length(
        result_plots.comparison(), title="BLEU by source length (test_2016_flickr)"),
    "BLEU gains, notebook 6": lambda: plot_bleu_gains(*result_plots.score_comparison()),
    "sentence lengths, notebook 4": lambda: plot_sentence_lengths(result_plots.length_data()),
    "accuracy by position, notebook 4": lambda: plot_accuracy_by_position(
        result_plots.position_accuracy(),
        title="The attention model, two ways of feeding it (test_2016_flickr)"),
    # notebooks 2 and 3's views (tests/test_attention_cost.py, tests/test_reversal_views.py)
    "attention shapes, notebook 2": plot_attention_shapes,
    "padding masks, notebook 2": lambda: show_padding_masks(),
    "attention cost, notebook 2": lambda: plot_attention_cost(CostGrid(
        (10, 20, 40, 80, 160), 1e-5 * np.outer([10, 20, 40, 80, 160], [10, 20, 40, 80, 160]) ** 0.9,
        32, "cpu")),
    "training, notebook 3": lambda: views.show_training(reversal_history()),
    "alignment emerging, notebook 3": lambda: views.plot_emerging(
        reversal_history(), list(range(4, 16)), reversal_vocab(20)),
    "bottleneck, notebook 3": lambda: views.plot_bottleneck(views.Bottleneck(
        {"attention": dict.fromkeys(range(2, 33), 1.0),
         "vanilla": {n: max(0.0, 1 - max(0, n - 5) / 12) for n in range(2, 33)}},
        {"attention": reversal_history(), "vanilla": reversal_history()})),
}


@pytest.fixture(params=list(FIGURES), scope="module")
def figure(request):
    fig = FIGURES[request.param]()
    fig.canvas.draw()
    yield fig
    plt.close(fig)


def drawn_tick_labels(axis) -> list[Text]:
    """The major tick labels matplotlib draws: those of ticks inside the axis's view limits (a
    locator also returns ticks beyond them, e.g. the next decade of a log axis, which are not
    drawn). Read after the figure has been drawn (:func:`texts` draws it once)."""
    low, high = sorted(axis.get_view_interval())
    span = 1e-9 * (high - low)
    return [tick.label1 for tick in axis.get_major_ticks()
            if low - span <= tick.get_loc() <= high + span]


def texts(fig: Figure) -> list[Text]:
    """Every text the figure prints: titles, annotations, legends, and the axes' labels and
    the tick labels it draws, where the axes are shown."""
    fig.canvas.draw()  # once: the tick labels, their positions and the layout as shown
    found: list[Text] = list(fig.texts)
    for ax in fig.axes:
        found += [ax.title, ax._left_title, ax._right_title, *ax.texts]
        if ax.axison:
            found += [ax.xaxis.label, ax.yaxis.label, *drawn_tick_labels(ax.xaxis),
                      *drawn_tick_labels(ax.yaxis)]
        legend = ax.get_legend()
        if legend is not None:
            found += list(legend.texts)
    return [t for t in found if t.get_visible() and t.get_text().strip()]


def test_every_figure_fits_a_notebooks_width(figure):
    assert figure.get_figwidth() <= NOTEBOOK_WIDTH + 1e-6


def test_every_text_is_printed_at_nine_points_or_more(figure):
    small = [(t.get_text(), t.get_fontsize()) for t in texts(figure)
             if t.get_fontsize() < MIN_FONTSIZE]
    assert not small, f"texts below {MIN_FONTSIZE} pt: {small[:5]}"


def test_titles_labels_and_legends_lie_inside_the_figure(figure):
    renderer = figure.canvas.get_renderer()
    inside = figure.bbox.padded(1.0)  # one pixel of rounding
    outside = [t.get_text() for t in texts(figure)
               if not _contains(inside, t.get_window_extent(renderer))]
    legends = [legend for ax in figure.axes for legend in [ax.get_legend()] if legend]
    outside += [f"legend of {len(legend.texts)} entries" for legend in legends
                if not _contains(inside, legend.get_window_extent(renderer))]
    assert not outside, f"outside the figure: {outside[:5]}"


def test_no_two_texts_overlap(figure):
    renderer = figure.canvas.get_renderer()
    boxes = [(t.get_text(), t.get_window_extent(renderer).shrunk(0.95, 0.8))
             for t in texts(figure)]
    clashes = [(a, b) for n, (a, box) in enumerate(boxes) for b, other in boxes[n + 1:]
               if box.overlaps(other)]
    assert not clashes, f"overlapping texts: {clashes[:3]}"


def _contains(outer: Bbox, inner: Bbox) -> bool:
    return (outer.x0 <= inner.x0 and inner.x1 <= outer.x1
            and outer.y0 <= inner.y0 and inner.y1 <= outer.y1)


def test_a_legend_never_covers_a_plotted_line(figure):
    for ax in figure.axes:
        assert not _legend_covers_lines(ax), f"the legend of {ax.get_title()!r} covers a line"


def _legend_covers_lines(ax) -> bool:
    legend = ax.get_legend()
    if legend is None:
        return False
    box = legend.get_window_extent(ax.figure.canvas.get_renderer())
    for line in ax.get_lines():
        if not line.get_visible() or line.get_label() == "_nolegend_":
            continue
        points = _dense(line.get_transform().transform(line.get_xydata()))
        if box.count_contains(points):
            return True
    return False


def test_the_legend_check_sees_a_legend_over_a_line():
    fig, ax = plt.subplots(figsize=(6, 3))
    ax.plot([0, 1], [1, 1], label="flat line near the top")
    ax.axhline(0.98, ls="--", label="uniform")
    ax.set_ylim(0, 1.05)
    ax.legend(loc="upper right")
    fig.canvas.draw()
    assert _legend_covers_lines(ax)
    ax.legend(loc="lower left")
    fig.canvas.draw()
    assert not _legend_covers_lines(ax)
    plt.close(fig)


def _dense(points: np.ndarray, step: float = 2.0) -> np.ndarray:
    """The polyline through ``points`` (display coordinates), sampled every ``step`` pixels."""
    out = [points[:1]]
    for a, b in zip(points, points[1:]):
        n = max(2, int(np.hypot(*(b - a)) / step))
        out.append(a + np.linspace(0.0, 1.0, n)[:, None] * (b - a))
    return np.concatenate(out)


def heatmaps(fig: Figure) -> list:
    return [ax for ax in fig.axes if ax.get_label() != "<colorbar>"]


@pytest.mark.parametrize("shapes", [[(8, 9), (15, 13), (19, 18)],
                                    [(8, 9), (15, 13), (10, 10), (12, 17)],
                                    [(10, 10), (12, 10), (11, 12), (9, 8), (12, 12)],
                                    [(14, 13)] * 3])
@pytest.mark.parametrize("ncols", [2, 3])
def test_a_grid_has_no_empty_slot_and_one_cell_size(shapes, ncols):
    fig = grid(shapes, ncols=ncols)
    fig.canvas.draw()
    maps = heatmaps(fig)
    assert len(maps) == len(shapes)  # one axes per sentence, none hidden or empty
    assert all(ax.get_visible() and ax.collections for ax in maps)
    cells = []
    for ax, (tgt, src) in zip(maps, shapes):
        box = ax.get_window_extent()
        cells.append((box.width / src, box.height / tgt))
    np.testing.assert_allclose(np.array(cells), cells[0][0], rtol=1e-3)
    plt.close(fig)


def test_three_maps_in_two_columns_become_one_column_not_two_by_two():
    fig = grid([(8, 9), (15, 13), (19, 18)], ncols=2)
    fig.canvas.draw()
    lefts = {round(ax.get_window_extent().x0, -1) for ax in heatmaps(fig)}
    tops = {round(ax.get_window_extent().y1) for ax in heatmaps(fig)}
    assert len(tops) == 3  # three rows
    assert len(lefts) <= 3  # and no fourth, empty slot beside any of them
    plt.close(fig)


def colour_bar(fig: Figure):
    [bar] = [ax for ax in fig.axes if ax.get_label() == "<colorbar>"]
    return bar


def test_a_grid_of_several_rows_has_its_colour_bar_on_top_and_a_single_row_beside_it():
    # notebook 5's four patterns, asked for in two columns: the colour bar on top leaves the
    # width to the maps, so they stand two by two (not one tall column with the bar halfway)
    fig = grid([(16, 17), (14, 13), (9, 8), (10, 8)], ncols=2)
    fig.canvas.draw()
    maps, bar = heatmaps(fig), colour_bar(fig).get_window_extent()
    assert len({round(ax.get_window_extent().y1, -1) for ax in maps}) == 2  # two rows of two
    assert bar.width > bar.height and bar.y0 >= max(ax.get_window_extent().y1 for ax in maps)
    plt.close(fig)
    fig = grid([(8, 9), (9, 10)], ncols=2)  # one row: the bar stands upright at its right
    fig.canvas.draw()
    bar = colour_bar(fig).get_window_extent()
    assert bar.height > bar.width and bar.x0 >= max(ax.get_window_extent().x1 for ax in heatmaps(fig))
    plt.close(fig)


def test_maps_stacked_in_one_column_get_smaller_cells_than_one_row():
    stacked, row = grid([(9, 9), (13, 14), (18, 19)], ncols=1), grid([(9, 9)], ncols=1)
    for fig in (stacked, row):
        fig.canvas.draw()
    cell = [heatmaps(f)[0].get_window_extent().width / 9 for f in (stacked, row)]
    assert cell[0] <= 0.3 * stacked.dpi + 1 < cell[1]
    plt.close("all")


def dark_share(fig: Figure, weights: np.ndarray) -> float:
    """Share of the cells coloured in the darkest tenth of the colour scale."""
    [mesh] = [c for c in heatmaps(fig)[0].collections if hasattr(c, "norm")][:1]
    return float(np.mean(np.asarray(mesh.norm(weights)) < 0.1))


def test_the_colour_scale_shows_the_small_weights_of_a_typical_matrix():
    # In a 20-token sentence most weights of a row are below 0.1: on a linear scale 0 to 1
    # more than 90% of the cells are the same darkest colour, and the second and third
    # candidates a row weighs are invisible. The default square-root scale leaves under 70%
    # of the cells in the darkest tenth.
    weights = typical_attention(20, 20)
    default = plot_attention(weights)
    linear = plot_attention(weights, gamma=1.0)
    assert dark_share(default, weights) < 0.7 < 0.9 < dark_share(linear, weights)
    plt.close("all")
    with pytest.raises(ValueError, match="gamma must be positive"):
        plot_attention(weights, gamma=0.0)


def test_a_long_sentence_thins_its_labels_instead_of_shrinking_them():
    fig = heatmap(40, 45)
    ax = fig.axes[0]
    shown = [t.get_text() for t in ax.get_xticklabels() if t.get_text()]
    assert 15 <= len(shown) < 45 and shown[:2] == ["source0", "source2"]
    assert {t.get_fontsize() for t in ax.get_xticklabels()} == {MIN_FONTSIZE}
    plt.close(fig)
    fig = heatmap(20, 26)  # notebook 5's longest sentence keeps every label
    assert all(t.get_text() for t in fig.axes[0].get_xticklabels())
    plt.close(fig)


DIAGRAMS = [name for name in FIGURES
            if name.startswith(("decoding", "encoder", "attention shapes"))]


@pytest.mark.parametrize("name", DIAGRAMS)
def test_no_arrow_or_line_of_a_diagram_runs_through_a_text(name):
    fig = FIGURES[name]()
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    [ax] = fig.axes
    boxes = [(t.get_text(), t.get_window_extent(renderer).shrunk(0.9, 0.8))
             for t in texts(fig) if t is not ax.title]
    strokes = [p for p in ax.patches if isinstance(p, FancyArrowPatch)]
    strokes += [t.arrow_patch for t in ax.texts if getattr(t, "arrow_patch", None)]
    crossings = []
    for stroke in strokes:
        for polygon in stroke.get_path().to_polygons(closed_only=False):
            points = _dense(stroke.get_transform().transform(polygon))
            crossings += [text for text, box in boxes if box.count_contains(points)]
    for line in ax.lines:
        points = _dense(line.get_transform().transform(line.get_xydata()))
        crossings += [text for text, box in boxes if box.count_contains(points)]
    assert not crossings, f"{name}: arrows or lines through {sorted(set(crossings))}"
    plt.close(fig)


def _committed_pngs():
    for folder in ("notebooks", "solutions"):
        for path in sorted((ROOT / folder).glob("*.ipynb")):
            for cell in json.loads(path.read_text())["cells"]:
                for output in cell.get("outputs", []):
                    png = output.get("data", {}).get("image/png")
                    if png:
                        data = base64.b64decode(png)
                        width, height = struct.unpack(">II", data[16:24])
                        yield f"{folder}/{path.name}", cell.get("id"), width


# bbox_inches="tight" pads a figure by 0.1 inch a side
MAX_PIXELS = round((NOTEBOOK_WIDTH + 0.2) * 100) + 1


def test_committed_figures_fit_a_notebooks_width():
    widths: dict[tuple[str, str], int] = {}
    for notebook, cell, width in _committed_pngs():
        key = (notebook, cell)
        widths[key] = max(width, widths.get(key, 0))
    too_wide = {key: w for key, w in widths.items() if w > MAX_PIXELS}
    # a wider figure is shrunk to the notebook's width when shown, and its text with it
    assert not too_wide, f"figures wider than {MAX_PIXELS} px (text shrinks below 9 pt): {too_wide}"
    assert all(width >= 400 for width in widths.values()), "a figure under 400 px wide"
