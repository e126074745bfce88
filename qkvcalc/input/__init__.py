"""The input layer: the fields table, cell parsing, arrays, sources (JSON, stdin, inline, presets),
limits, and Problem, the validated numbers every later layer reads."""
