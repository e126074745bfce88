"""qkvcalc studio: the calculator you change live. The problem's matrices are boxes to type in,
every stage is a table, and an edit recomputes every stage, marking each cell that changed
with its old value; the focused cell's arithmetic and the stage's why are shown below.

    >>> from qkvcalc.studio import Studio            # doctest: +SKIP
    >>> Studio({"x": [1, 2], "wq": …, "wk": …, "wv": …}, lang="en").run()

Textual is imported here and only here (and by the `qkvcalc studio` command): `qkvcalc explain`
never loads it. The session (what is edited and computed) is qkvcalc.studio.session; the
screen is qkvcalc.studio.app.
"""

from qkvcalc.studio.app import Studio

__all__ = ["Studio"]
