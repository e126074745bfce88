"""`qkvcalc check`: a person's own attention code graded, the mistake named, the smallest problem
that shows it.

    from qkvcalc.check.verdict import check_function
    verdict = check_function("mine.py", "attention")   # verdict.verdict, .mistake, .first …

The modules: problems (the person's parameters matched to roles; the problems tried, small to
large), reference (a numpy pipeline of named steps, equal to qkvcalc.explain), mutants (each
named mistake as that pipeline with one step replaced), runner and child (the person's code in
a process of its own, answering in JSON within a time limit), grade (the first difference and
the mistake that explains it), verdict (the whole check), stages (`--stages`: their tensors,
no code run). Plain: no rich, no typer; qkvcalc.render.check shows a verdict.

Nothing is imported here: `python -m qkvcalc.check.runner` loads this package first and must
stay light.
"""
