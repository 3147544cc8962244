"""The course's colours: the Okabe-Ito palette, readable for colour-blind readers.

The same colours as the line cycle of the course's ``matplotlibrc`` (beside the notebooks), named
here so that the plotting helpers use them whatever style is active. No two of them differ only
in red against green; ``tests/test_colours.py`` simulates protanopia, deuteranopia and tritanopia
and checks every pair stays apart.
"""

__all__ = ["BLUE", "GREEN", "ORANGE", "PALETTE", "TINTS", "VERMILLION"]

BLUE = "#0072B2"
ORANGE = "#E69F00"
GREEN = "#009E73"  # Okabe-Ito's "bluish green"
VERMILLION = "#D55E00"
#: The line cycle, in the order of the course's matplotlibrc.
PALETTE = (BLUE, ORANGE, GREEN, VERMILLION, "#CC79A7", "#56B4E9", "#F0E442")
#: Pale fills of the first three, for the boxes of the diagrams.
TINTS = {"blue": "#cce3f0", "orange": "#faeccc", "green": "#ccece3"}
