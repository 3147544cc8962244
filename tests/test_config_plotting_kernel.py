import json
import sys

import numpy as np
import pytest
import torch
from matplotlib.figure import Figure

from course_utils import plot_attention, plot_weights, quick_mode, scaled
from course_utils.tools.kernel import KERNEL_NAME, install_kernel


@pytest.mark.parametrize("value, expected", [("1", True), ("true", True), ("0", False), ("", False)])
def test_course_quick_switches_scale(monkeypatch, value, expected):
    monkeypatch.setenv("COURSE_QUICK", value)
    assert quick_mode() is expected
    assert scaled(quick="quick", cpu="cpu", gpu="gpu", device=torch.device("cpu")) == (
        "quick" if expected else "cpu"
    )


def test_gpu_value_is_used_on_cuda(monkeypatch):
    monkeypatch.setenv("COURSE_QUICK", "0")
    assert scaled(quick=1, cpu=2, gpu=3, device=torch.device("cuda")) == 3


def test_bad_course_quick_value_is_an_error(monkeypatch):
    monkeypatch.setenv("COURSE_QUICK", "maybe")
    with pytest.raises(ValueError, match="COURSE_QUICK must be one of .* got 'maybe'"):
        quick_mode()


def test_heatmap_has_token_labels_and_returns_the_figure():
    weights = np.array([[0.9, 0.1], [0.2, 0.8], [0.5, 0.5]])
    fig = plot_attention(torch.tensor(weights), ["a", "b"], ["x", "y", "z"])
    assert isinstance(fig, Figure)
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["a", "b"]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["x", "y", "z"]
    assert "0.90" in [t.get_text() for t in ax.texts]  # small matrices are annotated


def test_heatmap_title_keeps_the_callers_line_breaks_and_wraps_long_lines():
    fig = plot_attention(np.eye(3), title="dot, luong\nalignment 0.99")
    assert fig.axes[0].get_title() == "dot, luong\nalignment 0.99"
    long = " ".join(["word"] * 30)  # a whole translation as the title
    lines = plot_attention(np.eye(3), title=long).axes[0].get_title().splitlines()
    assert len(lines) > 1 and " ".join(lines) == long
    maths = "Energies " + " ".join([r"$e_{2j} + \alpha$"] * 12)  # never broken inside $...$
    assert plot_weights([0.5, 0.5], title=maths).axes[0].get_title() == maths


def test_heatmap_rejects_labels_of_the_wrong_length():
    with pytest.raises(ValueError, match=r"source_tokens must have one label per column \(2\); got 3"):
        plot_attention(np.eye(2), ["a", "b", "c"])
    with pytest.raises(ValueError, match=r"non-empty \(tgt_len, src_len\) matrix; got shape \(3,\)"):
        plot_attention(np.ones(3))


def test_bar_plot_highlights_the_largest_weight():
    fig = plot_weights([0.2, 0.5, 0.3], ["h1", "h2", "h3"])
    bars = fig.axes[0].patches
    assert bars[1].get_facecolor() != bars[0].get_facecolor() == bars[2].get_facecolor()
    with pytest.raises(ValueError, match="must be a vector"):
        plot_weights(np.eye(2))


def test_kernel_spec_runs_this_python(tmp_path):
    install_kernel(prefix=str(tmp_path))
    spec = json.loads((tmp_path / "share/jupyter/kernels" / KERNEL_NAME / "kernel.json").read_text())
    assert spec["argv"][0] == sys.executable


def test_quick_runs_never_share_a_folder_with_real_runs(monkeypatch, tmp_path):
    from course_utils.config import runs_dir

    monkeypatch.setenv("COURSE_RUNS_DIR", str(tmp_path))
    monkeypatch.setenv("COURSE_QUICK", "0")
    assert runs_dir() == tmp_path
    monkeypatch.setenv("COURSE_QUICK", "1")
    assert runs_dir() == tmp_path / "quick"


def _texts(fig: Figure) -> str:
    return " ".join(t.get_text() for ax in fig.axes for t in ax.texts)


def test_decoding_step_diagram_shows_every_quantity_of_the_step():
    from matplotlib.patches import Rectangle

    from course_utils.plotting import plot_decoding_step

    weights = [0.1, 0.6, 0.3]
    fig = plot_decoding_step(weights, ["a", "dog", "runs"])
    text = _texts(fig)
    # the lesson's symbols: encoder states, energies queried with s_(i-1), weights, context,
    # the GRU update and the prediction of y_i
    for symbol in ["$h_1$", "$h_3$", "$e_{i2}$", "s_{i-1}", r"\alpha_{ij}", r"\sum_j",
                   "s_i = f(s_{i-1}, y_{i-1}, c_i)", "p(y_i)", "maxout", "dog"]:
        assert symbol in text, symbol
    # the weight bars are drawn to scale: heights proportional to the weights
    bars = [p for p in fig.axes[0].patches if isinstance(p, Rectangle)]
    heights = np.array([b.get_height() for b in bars])
    np.testing.assert_allclose(heights / heights.sum(), weights)


@pytest.mark.parametrize("weights", [[0.5, 0.6], [1.0], [-0.2, 1.2], [0.5, float("nan")]])
def test_decoding_step_diagram_refuses_weights_that_are_not_a_softmax(weights):
    from course_utils.plotting import plot_decoding_step

    with pytest.raises(ValueError, match="weights"):
        plot_decoding_step(weights)


def test_decoding_step_diagram_needs_one_word_per_weight():
    from course_utils.plotting import plot_decoding_step

    with pytest.raises(ValueError, match="source"):
        plot_decoding_step([0.5, 0.5], ["only one"])


def test_encoder_decoder_diagram_draws_both_directions_and_the_bridge():
    from course_utils.plotting import plot_encoder_decoder

    fig = plot_encoder_decoder(["a", "dog"], ["ein", "hund"], step=2)
    ax = fig.axes[0]
    text = _texts(fig)
    for symbol in [r"\overrightarrow{h}_1", r"\overleftarrow{h}_2", "$s_0$", "$s_2$", "bridge",
                   "<bos>", "hund", "$c_2$"]:
        assert symbol in text, symbol
    where = {t.get_text(): t.get_position() for t in ax.texts}
    # one attention line from each h_j (both directions, outlined together) to c_2 ...
    attention = [line for line in ax.lines if line.get_label() == "attention"]
    assert len(attention) == 2
    assert [line.get_xdata()[0] for line in attention] == [
        where[r"$\overrightarrow{h}_1$"][0], where[r"$\overrightarrow{h}_2$"][0]]
    # ... and c_2 sits under s_2, the state it enters
    assert abs(where["$c_2$"][0] - where["$s_2$"][0]) < 0.3
    # the bridge reads the forward GRU's last state h_fwd_T (here h_fwd_2): its path starts
    # at that box's height, right of it
    [bridge] = [line for line in ax.lines if line.get_label().startswith("bridge")]
    assert bridge.get_ydata()[0] == where[r"$\overrightarrow{h}_2$"][1]
    assert bridge.get_xdata()[0] > where[r"$\overrightarrow{h}_2$"][0]
    with pytest.raises(ValueError, match="step"):
        plot_encoder_decoder(["a"], ["ein"], step=2)


@pytest.mark.parametrize("annotate", [True, False])
def test_alignment_dots_never_cover_the_printed_weights(annotate):
    weights = np.array([[0.7, 0.2, 0.1], [0.1, 0.8, 0.1]])
    fig = plot_attention(weights, ["a", "b", "c"], ["x", "y"], annotate=annotate,
                         mark_alignment=True)
    ax = fig.axes[0]
    dots = ax.collections[-1].get_offsets()
    np.testing.assert_array_equal(np.floor(dots), [[0, 0], [1, 1]])  # in the arg max cells
    numbers = {t.get_position() for t in ax.texts}
    assert len(numbers) == (6 if annotate else 0)
    for x, y in dots:
        assert all(abs(x - tx) > 0.2 or abs(y - ty) > 0.2 for tx, ty in numbers)


@pytest.mark.parametrize("quick, kernel, shown", [
    ("1", True, True), ("0", True, False), ("1", False, False)])
def test_a_notebook_at_smoke_scale_says_so_once_at_the_top(quick, kernel, shown):
    import os
    import subprocess

    from course_utils import SMOKE_SCALE_NOTE

    fake_kernel = "import sys, types; sys.modules['ipykernel'] = types.ModuleType('ipykernel'); "
    code = (fake_kernel if kernel else "") + "import course_utils; import course_utils.metrics"
    env = {**os.environ, "COURSE_QUICK": quick}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True).stdout
    assert out.count(SMOKE_SCALE_NOTE) == (1 if shown else 0)
    assert "do not interpret these numbers" in SMOKE_SCALE_NOTE
