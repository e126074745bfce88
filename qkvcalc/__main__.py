"""`python -m qkvcalc` is the same program as `qkvcalc`."""

from qkvcalc.cli import main

main()
