"""Interactive views of a Trace at a terminal: the step mode (`qkvcalc explain --step`).

These modules read keys and draw on the terminal, so they may use rich (like the renderers)
but never typer: the CLI calls them, and their errors are QkvcalcErrors like any other.
"""
