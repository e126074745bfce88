"""The tutor: a quiz that checks a student's own arithmetic, and a guided way to enter a problem.

- grade.py     pure grading: answers against a Trace, cell by cell, mistakes traced to where
               they started (no printing, no rich)
- answers.py   reading answers: typed cells and JSON answer sheets, in the safe number grammar
- problems.py  fresh small-integer problems from a seed
- session.py   the interactive quiz at a terminal (prompts and corrections)
- report.py    a graded sheet as a rich table or as JSON
- entry.py     `qkvcalc new`: a problem typed in step by step, each row checked as it comes
"""
