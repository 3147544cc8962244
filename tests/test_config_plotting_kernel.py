import json
import sys

import numpy as np
import pytest
import torch
from matplotlib.figure import Figure

from course_utils import plot_attention, plot_weights, quick_mode, scaled
from course_utils.kernel import KERNEL_NAME, install_kernel


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
