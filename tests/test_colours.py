"""The course's figures stay readable for colour-blind readers (issue 28): the line colours stay
apart under simulated protanopia, deuteranopia and tritanopia, the colour maps rise in
lightness, and the notebooks run with that style from their own folders."""

import inspect
import itertools
import os
import subprocess
import sys

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pytest
from helpers import ROOT
from matplotlib.colors import to_rgba

#: The course's style sits beside the notebooks of each folder a kernel runs in.
STYLE_FOLDERS = ("notebooks", "exercises", "solutions")
STYLE = ROOT / "notebooks" / "matplotlibrc"

# Machado, Oliveira & Fernandes (2009), "A Physiologically-based Model for Simulation of Color
# Vision Deficiency", IEEE TVCG 15(6): the matrices for severity 1.0 (dichromacy), applied to
# linear RGB.
PROTAN = np.array([[0.152286, 1.052583, -0.204868],
                   [0.114503, 0.786281, 0.099216],
                   [-0.003882, -0.048116, 1.051998]])
DEUTAN = np.array([[0.367322, 0.860646, -0.227968],
                   [0.280085, 0.672501, 0.047413],
                   [-0.011820, 0.042940, 0.968881]])
TRITAN = np.array([[1.255528, -0.076749, -0.178779],
                   [-0.078411, 0.930809, 0.147602],
                   [0.004733, 0.691367, 0.303900]])
VISIONS = {"normal vision": np.eye(3), "protanopia": PROTAN, "deuteranopia": DEUTAN,
           "tritanopia": TRITAN}
#: Two line colours stay apart when their CIELAB distance (CIE 1976 ΔE*ab) is at least this,
#: for every kind of vision above: about six times the just-noticeable difference (2.3), so
#: that thin lines and small markers are told apart, not only large patches.
MIN_DELTA_E = 15.0


def course_colours() -> list[str]:
    """The course's line colours: the colour cycle of its matplotlibrc."""
    params = matplotlib.rc_params_from_file(str(STYLE), use_default_template=False)
    return params["axes.prop_cycle"].by_key()["color"]


def linear_rgb(colour) -> np.ndarray:
    """sRGB (any matplotlib colour) to linear RGB (IEC 61966-2-1)."""
    srgb = np.asarray(to_rgba(colour)[:3]) if isinstance(colour, str) else np.asarray(colour)
    return np.where(srgb <= 0.04045, srgb / 12.92, ((srgb + 0.055) / 1.055) ** 2.4)


def cielab(linear: np.ndarray) -> np.ndarray:
    """Linear RGB (..., 3) to CIELAB under the D65 white point."""
    to_xyz = np.array([[0.4124564, 0.3575761, 0.1804375],
                       [0.2126729, 0.7151522, 0.0721750],
                       [0.0193339, 0.1191920, 0.9503041]])
    xyz = linear @ to_xyz.T / np.array([0.95047, 1.0, 1.08883])
    f = np.where(xyz > (6 / 29) ** 3, np.cbrt(xyz), xyz / (3 * (6 / 29) ** 2) + 4 / 29)
    return np.stack([116 * f[..., 1] - 16, 500 * (f[..., 0] - f[..., 1]),
                     200 * (f[..., 1] - f[..., 2])], axis=-1)


def seen(colour, vision: np.ndarray) -> np.ndarray:
    """The CIELAB colour a reader with ``vision`` sees for ``colour``."""
    return cielab(np.clip(linear_rgb(colour) @ vision.T, 0.0, 1.0))


def closest_pair(colours: list[str]) -> tuple[float, str, str, str]:
    """The two colours hardest to tell apart under any vision: ``(ΔE, a, b, vision)``."""
    return min((float(np.linalg.norm(seen(a, m) - seen(b, m))), a, b, name)
               for (a, b), (name, m) in itertools.product(itertools.combinations(colours, 2),
                                                          VISIONS.items()))


def test_the_course_style_is_the_same_in_every_folder_a_notebook_runs_in():
    for folder in STYLE_FOLDERS:
        path = ROOT / folder / "matplotlibrc"
        assert path.is_file(), f"{folder}/ has no matplotlibrc: its notebooks plot in tab10"
        assert path.read_bytes() == STYLE.read_bytes(), f"{folder}/matplotlibrc differs"


def test_every_pair_of_line_colours_stays_apart_for_colour_blind_readers():
    colours = course_colours()
    assert len(colours) >= 6, colours
    delta, a, b, vision = closest_pair(colours)
    assert delta >= MIN_DELTA_E, (f"{a} and {b} are {delta:.1f} apart (CIELAB ΔE) under "
                                  f"{vision}; expected at least {MIN_DELTA_E}")


def test_matplotlibs_default_red_and_green_fail_the_same_measure():
    """The measure tells the problem the style solves: tab10's green and red merge for a
    deuteranope (and its orange and green for a protanope)."""
    delta, a, b, vision = closest_pair(["tab:blue", "tab:orange", "tab:green", "tab:red"])
    assert delta < MIN_DELTA_E and vision in ("protanopia", "deuteranopia"), (delta, a, b)
    green_red = np.linalg.norm(seen("tab:green", DEUTAN) - seen("tab:red", DEUTAN))
    assert green_red < MIN_DELTA_E


def default_colour_maps() -> dict[str, str]:
    from course_utils.plotting import plot_attention, plot_attention_grid

    params = matplotlib.rc_params_from_file(str(STYLE), use_default_template=False)
    return {"image.cmap of the course style": params["image.cmap"],
            "plot_attention's default": inspect.signature(plot_attention).parameters["cmap"]
            .default,
            "plot_attention_grid's default": inspect.signature(plot_attention_grid)
            .parameters["cmap"].default,
            "seaborn's heatmap default": "rocket"}


@pytest.mark.parametrize("vision", VISIONS)
def test_default_colour_maps_rise_in_lightness_for_every_reader(vision):
    import seaborn  # noqa: F401  (registers "rocket")

    for where, name in default_colour_maps().items():
        rgb = matplotlib.colormaps[name](np.linspace(0, 1, 256))[:, :3]
        linear = np.where(rgb <= 0.04045, rgb / 12.92, ((rgb + 0.055) / 1.055) ** 2.4)
        lightness = cielab(np.clip(linear @ VISIONS[vision].T, 0, 1))[:, 0]
        steps = np.diff(lightness)
        assert (steps > 0).all(), (f"{name} ({where}) falls in lightness under {vision} "
                                   f"at {np.argmin(steps)}/255")
        assert lightness[-1] - lightness[0] > 50, f"{name} spans too little lightness"


def test_a_notebook_runs_with_the_course_style_from_its_folder():
    """A kernel runs in its notebook's folder (JupyterLab, nbval, course-execute, Binder), and
    matplotlib reads the matplotlibrc of the folder Python starts in."""
    env = {k: v for k, v in os.environ.items() if k not in ("MATPLOTLIBRC", "MPLCONFIGDIR")}
    for folder in STYLE_FOLDERS:
        printed = subprocess.run(
            [sys.executable, "-c", "import matplotlib as m; "
             "print(m.rcParams['axes.prop_cycle'].by_key()['color'])"],
            cwd=ROOT / folder, env=env, capture_output=True, text=True, check=True).stdout
        assert printed.strip() == str(course_colours()), folder


def drawn_colours(fig) -> set[tuple[float, float, float]]:
    """Every colour a figure's lines, patches and texts are drawn in (on white, alpha applied);
    images and heatmap cells (colour maps) are left out."""
    found = set()

    def add(colour, alpha=None):
        r, g, b, a = to_rgba(colour, alpha)
        if a > 0:
            found.add(tuple(round(1 - a + a * c, 3) for c in (r, g, b)))

    for artist in fig.findobj():
        if artist in (fig.patch, *[ax.patch for ax in fig.axes]):
            continue
        if isinstance(artist, matplotlib.lines.Line2D):
            add(artist.get_color(), artist.get_alpha())
        elif isinstance(artist, matplotlib.patches.Patch):
            if artist.get_fill():
                add(artist.get_facecolor())
            if artist.get_linewidth():
                add(artist.get_edgecolor())
        elif isinstance(artist, matplotlib.text.Text) and artist.get_text():
            add(artist.get_color())
        elif isinstance(artist, matplotlib.collections.PathCollection):  # scatter markers
            for colour in [*artist.get_facecolors(), *artist.get_edgecolors()]:
                add(colour)
    return found


def from_the_palette(colour: tuple[float, float, float], palette: list[str]) -> bool:
    """A grey, a palette colour, or a palette colour lightened towards white (a tint)."""
    rgb = np.array(colour)
    if np.ptp(rgb) < 0.03:
        return True
    for name in palette:
        p = np.array(to_rgba(name)[:3])
        t = np.clip(np.dot(rgb - 1, p - 1) / np.dot(p - 1, p - 1), 0, 1)  # along white -> p
        if np.abs(1 + t * (p - 1) - rgb).max() < 0.03:
            return True
    return False


def test_the_plotting_helpers_draw_in_the_course_palette():
    from course_utils import plotting

    palette = course_colours()
    with matplotlib.rc_context(fname=str(STYLE)):
        figures = {
            "plot_weights": plotting.plot_weights([0.1, 0.6, 0.3]),
            "plot_decoding_step": plotting.plot_decoding_step([0.1, 0.6, 0.25, 0.05],
                                                              ["a", "b", "c", "d"]),
            "plot_encoder_decoder": plotting.plot_encoder_decoder(
                ["a", "b", "c", "d"], ["d", "c", "b", "a"], step=2),
            "plot_attention": plotting.plot_attention(
                np.full((3, 3), 1 / 3), ["a", "b", "c"], ["x", "y", "z"], mark_alignment=True,
                highlight_rows=[1], highlight_cells=[(0, 0)]),
        }
    try:
        outside = {name: sorted(matplotlib.colors.to_hex(c) for c in drawn_colours(fig)
                                if not from_the_palette(c, palette))
                   for name, fig in figures.items()}
    finally:
        for fig in figures.values():
            plt.close(fig)
    outside = {name: colours for name, colours in outside.items() if colours}
    assert not outside, f"colours outside the course palette {palette}: {outside}"
