"""`python -m qkvcalc` is the same program as `qkvcalc`."""

from qkvcalc.launch import main

main()
