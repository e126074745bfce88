"""Running a plan: the numpy engine, the table of operations, and exact mode (fractions and
surds)."""
