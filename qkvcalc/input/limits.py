"""The default limits of one run, defined once: the CLI's options and the library share them.

Plain constants, no imports: the command line reads them while it starts.
"""

MAX_BYTES = 100_000_000  # 100 MB of input: a GPT-2-small layer is about 60 MB of JSON
# The numbers one problem may hold, inputs and every stage together (float64: 8 bytes each).
# A GPT-2-small layer (n = 1024, d_model = 768, 12 heads, W_O) holds about 68 million;
# `--max-elements` raises the limit. Checked from the shapes, before anything is allocated.
MAX_ELEMENTS = 100_000_000
