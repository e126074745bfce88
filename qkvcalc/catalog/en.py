"""English messages. Every user-facing sentence of qkvcalc, by key; ko.py has the same keys."""

MESSAGES: dict[str, str] = {
    # ---- stages: title and why the stage exists ------------------------------------------
    "stage.x.title": "Input X",
    "stage.x.why": "Each row is one token's vector as it enters the attention layer "
    "(an embedding plus position, or the previous layer's output).",
    "stage.source.title": "Source (keys and values come from here)",
    "stage.source.why": "In cross-attention the queries come from X, but the keys and values "
    "come from another sequence, such as the encoder's output that a decoder reads.",
    "stage.split.title": "Split into heads",
    "stage.split.why": "Each head works on its own slice of columns, so it can learn its own "
    "notion of which tokens matter; the heads run side by side and are joined at the end.",
    "stage.q.title": "Query projection",
    "stage.q.why": "A query is what this token is looking for. Multiplying X by the learned "
    "W_Q re-mixes each token's numbers into that role; each cell is a weighted sum of one row "
    "of X.",
    "stage.k.title": "Key projection",
    "stage.k.why": "A key is what each token offers to be found by. W_K is a second, separately "
    "learned view of the same input, so comparing and looking-for can differ.",
    "stage.v.title": "Value projection",
    "stage.v.why": "A value is the content a token hands over once it is chosen. The scores "
    "only say who matters; V carries what is actually mixed into the output.",
    "stage.kt.title": "Transpose of K",
    "stage.kt.why": "Q is n×d_k and K is m×d_k. Turning K on its side (m×d_k into d_k×m) makes "
    "the inner dimensions meet, so one matrix product compares every query with every key.",
    "stage.scores.title": "Attention scores",
    "stage.scores.why": "Each cell is the dot product of one query with one key: large when "
    "they point the same way. All n×m pairs at once, which is why attention costs grow with "
    "n².",
    "stage.scaled.title": "Scaling",
    "stage.scaled.why": "A dot product of d_k terms grows with d_k. Large scores push softmax "
    "to put almost all weight on one key, where its gradients vanish; dividing by √d_k keeps "
    "them in a range where learning works.",
    "stage.masked.title": "Mask",
    "stage.masked.why": "A mask forbids some query–key pairs (future tokens, padding) by "
    "setting their scores to −∞, so softmax gives them weight exactly 0.",
    "stage.exp.title": "Softmax, step 1: exponentials",
    "stage.exp.why": "Softmax exponentiates each score. Subtracting the row's maximum first "
    "changes nothing in the result (it cancels in the division) but keeps e^s from "
    "overflowing.",
    "stage.weights.title": "Softmax, step 2: attention weights",
    "stage.weights.why": "Dividing each exponential by its row's sum turns scores into weights "
    "that are positive and sum to 1: how much of each value this query takes.",
    "stage.output.title": "Weighted sum of values",
    "stage.output.why": "Each output row is the weights of that query times V: a blend of the "
    "values, mostly of the tokens it attends to.",
    "stage.concat.title": "Concatenate the heads",
    "stage.concat.why": "The heads' outputs are laid side by side, head 1's columns first, "
    "back to one row per token.",
    "stage.output.final.title": "Output projection",
    "stage.output.final.why": "W_O mixes the heads' joined results into one vector per token, "
    "the width the next layer expects.",
    "stage.output.concat.title": "Output (the joined heads)",
    "stage.output.concat.why": "With no W_O given, the joined heads are the output.",
    # ---- notes on stages ---------------------------------------------------------------
    "note.scale_default": "d_k = {d_k}, so every score is divided by {root} = {value}.",
    "note.scale_given": "scale = {scale} (given), instead of 1/√d_k with d_k = {d_k}.",
    "note.mask_convention": "Mask convention: 1 / true = may attend (PyTorch's "
    "scaled_dot_product_attention). nn.MultiheadAttention's boolean masks mean the opposite "
    "(True = blocked).",
    "note.causal_topleft": "Causal with {n} queries and {m} keys: aligned top-left, as "
    "is_causal=True, so query i sees keys 1…i.",
    "note.kv_shared": "Grouped-query attention: K/V head {kv_head} is shared by query heads "
    "{first}–{last}.",
    "note.split": "H = {heads} query heads with d_k = {d_k} each; G = {kv_heads} key/value "
    "heads with d_k = {d_k} and d_v = {d_v} each. Query head h reads K/V head ⌈h·G/H⌉.",
    "note.no_arithmetic": "Arithmetic left out: {reason}.",
    "note.too_big_cells": "{cells} cells, more than {limit} to write out",
    "note.too_long_sums": "each cell sums {inner} products, more than {limit}",
    "note.hidden": "{rows} rows and {cols} columns hidden (…).",
    "note.hidden_rows": "{rows} rows hidden (⋮).",
    "note.hidden_cols": "{cols} columns hidden (…).",
    "note.brief": "Tables only (--detail brief).",
    # ---- warnings ------------------------------------------------------------------------
    "warn.fully_masked": "Every key is masked for {rows}: the plain formula would give "
    "0/0 = NaN there, so those weights and outputs are 0, as PyTorch's "
    "scaled_dot_product_attention returns.",
    "warn.fully_masked_head": "Head {head}: every key is masked for {rows}: the plain formula "
    "would give 0/0 = NaN there, so those weights and outputs are 0, as PyTorch's "
    "scaled_dot_product_attention returns.",
    # ---- the words of tables and arithmetic ------------------------------------------------
    "ui.shape": "shape",
    "ui.head": "head {head}",
    "ui.heads_group": "Head {head} of {heads}",
    "ui.row_max": "row max",
    "ui.row_sum": "sum",
    "ui.masked": "masked",
    "ui.row": "row",
    "ui.softmax_row": "row {row} ({token}): max = {max}; sum of exponentials = {sum}",
    "ui.masked_row": "row {row} ({token}): {keys} → −∞",
    "ui.all_masked_row": "row {row} ({token}): every key masked, weights 0",
    "ui.warning": "warning",
    "ui.output_final": "Output",
    "ui.arithmetic": "Arithmetic",
    "ui.problem": "queries n = {n}, keys m = {m}, d_model = {d_model}, d_k = {d_k}, "
    "d_v = {d_v}, heads = {heads}, mask: {mask}",
    "ui.problem_direct": "queries n = {n}, keys m = {m} (Q, K, V given), d_k = {d_k}, "
    "d_v = {d_v}, heads = {heads}, mask: {mask}",
    "ui.preset": "preset {name}: {description}",
    "ui.presets_title": "Presets",
    "ui.presets_name": "name",
    "ui.presets_description": "description",
    "ui.presets_hint": "Run one: qkvcalc explain --preset NAME · edit one: "
    "qkvcalc presets show NAME > mine.json",
    "ui.split_row": "head {head}: {q}[:, {qcols}], {k}[:, {kcols}], {v}[:, {vcols}] (K/V head {g})",
    # ---- the bundled presets' descriptions (i18n.preset_description) ----------------
    "preset.cross.description": "Cross-attention: the French 'le chat dort' reads the English "
    "'the cat is sleeping'",
    "preset.doc.description": "One token, x = [1, 2]: the worked example of Q, K, V by hand",
    "preset.gqa.description": "Grouped-query attention: 4 query heads share 2 key/value heads "
    "(d_k = 1, causal)",
    "preset.multihead.description": "Two heads on 'I love cats': each head reads its own two "
    "columns, then W_O mixes them",
    "preset.padding.description": "A batch row padded to four tokens: key_padding keeps attention "
    "off <pad>",
    "preset.sentence.description": "Three tokens, 'I love cats', with the doc weights and a "
    "causal mask",
    # ---- input errors: keys and structure ----------------------------------------------
    "key.unknown_suggest": "unknown key {key!r}: did you mean {suggestion!r}?",
    "key.unknown": "unknown key {key!r}; the input format knows: {known}",
    "key.not_string": "keys must be strings, found {key}",
    "key.duplicate": "key {key!r} is given twice (as {canonical!r}): keep one",
    "input.not_object": "the input must be a JSON object with keys x, wq, wk, wv …, not a {kind}",
    "kind.list": "list",
    "kind.string": "string",
    "kind.number": "number",
    "kind.bool": "true/false value",
    "kind.null": "null value",
    "kind.value": "value of another kind",
    "input.missing": "missing {missing}: give X and the weights W_Q, W_K, W_V "
    "(or Q, K, V directly)",
    "input.missing_direct": "missing {missing}: when Q, K, V are given directly, all three "
    "are needed",
    "input.mixed": "give either X with W_Q, W_K, W_V, or Q, K, V directly, not both "
    "(found {direct} and {projecting})",
    "input.bo_without_wo": "b_O is given without W_O: the output bias belongs to the output "
    "projection",
    "input.empty": 'the input is empty: expected a JSON object such as {{"x": [1, 2], "wq": …}}',
    "input.none": "no input: give a JSON file, '-' to read standard input, --preset NAME, or "
    "--x/--wq/--wk/--wv (try: qkvcalc explain --preset doc)",
    "input.json": "not valid JSON at line {line}, column {col}: {reason}",
    "input.json_value": "not valid JSON: {reason}",
    "input.json_deep": "the JSON is nested too deeply: a matrix is a list of rows, two levels deep",
    "input.not_utf8": "the input is not UTF-8 text (byte {offset} is {byte})",
    "input.too_big": "the input is larger than {limit} bytes; raise the limit with "
    "--max-bytes if you mean it",
    "input.file_missing": "no such file: {path}",
    "input.file_unreadable": "cannot read {path}: {reason}",
    "input.trace_without_input": "this is a qkvcalc trace (schema qkvcalc.trace/1) without "
    'its "input": write it again with this version\'s --format json to run it again',
    "input.trace_brief": "this trace was written with --detail brief, which leaves out the "
    "big matrices of its input ({fields}): write it with --detail full to run it again",
    "input.from": "in {origin}",
    "input.inline": "in --{option}",
    "inline.grammar": "--{option} {text!r}: write a matrix as rows of numbers split by ';', "
    'e.g. "1 2; 3 4"',
    # ---- input errors: numbers and matrices ------------------------------------------------
    "number.grammar": "{field}: {text!r} is not a number qkvcalc reads. Write an integer, "
    "a decimal, a fraction or a square root: 3, -0.5, 1/2, -3e-2, sqrt(2), 1/sqrt(2)",
    "number.empty": "{field}: an empty string is not a number",
    "number.too_long": "{field}: a number written with more than {limit} characters",
    "number.zero_division": "{field}: {text!r} divides by zero",
    "number.negative_sqrt": "{field}: {text!r} takes the square root of a negative number",
    "number.not_finite": "{field}: {text} is not a finite number; every number must be finite",
    "number.nan": "{field} is NaN: every number must be finite",
    "matrix.not_list": "{field} must be a matrix (a list of rows of numbers), not {value}",
    "matrix.empty": "{field} is empty: a matrix needs at least one row of numbers",
    "matrix.empty_row": "{field}: row {row} is empty: a row needs at least one number",
    "matrix.mixed": "{field}: row {row} is a number among rows: write every row as a list",
    "matrix.ragged": "{field}: row {row} is {length} long but row 1 is {width} long: every "
    "row of a matrix has the same length",
    "matrix.too_deep": "{field}{where} is a list where a number belongs: a matrix is a list of "
    "rows of numbers, two levels deep",
    "matrix.bool": "{field}{where} is true/false where a number belongs: write 1 or 0",
    "matrix.null": "{field}{where} is null where a number belongs",
    "matrix.not_number": "{field}{where} is {value}, not a number",
    "vector.not_flat": "{field} must be a flat list (one number per column), not {rows} rows",
    "heads.not_positive": "{field} must be a whole number from 1 to {limit}, not {value}",
    "heads.kv_divide": "heads = {heads} is not a multiple of kv_heads = {kv_heads}: each "
    "key/value head serves the same number of query heads",
    "tokens.not_strings": "{field} must be a list of names (strings), one per row",
    "tokens.count": "{field} has {count} names but {rows} has {n} rows: one name per row",
    "tokens.source_without_source": "source_tokens is given without a source matrix",
    "scale.not_number": "scale must be a number, not {value}",
    "layout.unknown": 'layout must be "rows" (Q = X·W_Q) or "torch" (weights as PyTorch '
    "stores them, out×in), not {value}",
    # ---- input errors: shapes -------------------------------------------------------------
    "shape.weight_rows": "{field} is {shape}, but {what} has {rows} columns: in "
    "{what}·{field} the inner dimensions must meet, so {field} needs {rows} rows",
    "shape.weight_rows_hint_torch": "{field} is {shape}, but {what} has {rows} columns: in "
    "{what}·{field} the inner dimensions must meet, so {field} needs {rows} rows. It looks "
    'transposed, the way PyTorch stores a linear layer (out×in): add "layout": "torch" '
    "(or --layout torch)",
    "shape.weight_rows_hint_rows": "{field} is {shape} as given in the torch layout (out×in), "
    "but {what} has {rows} columns, so it needs {rows} columns there. It looks like the rows "
    'layout (in×out): drop "layout": "torch"',
    "shape.source_width": "source is {source} but X is {x}: keys and values are projected "
    "from the source with the same W_K, W_V, so both need d_model columns",
    "shape.kv_rows": "K is {k} and V is {v}: they need the same number of rows (one key and "
    "one value per token)",
    "shape.heads_divide": "{field} has {cols} columns, which do not split into {what} = "
    "{heads} equal slices: the column count must be a multiple of {heads}",
    "shape.dk_mismatch": "{q} has {qcols} columns, so with heads = {heads} each query head has "
    "d_k = {d_k}; {k} has {kcols} columns, so with kv_heads = {kv_heads} each key head has "
    "d_k = {dk2}: queries and keys must have the same d_k to be multiplied in Q·Kᵀ",
    "shape.bias": "{field} is {length} long but {weight} has {cols} columns: a bias adds "
    "one number to each column",
    "mask.unknown": 'mask must be "none", "causal" or a 0/1 matrix, not {value}',
    "mask.shape": "mask is {shape} but the scores are {n}×{m} (queries × keys): the mask "
    "needs one 0/1 per score",
    "mask.not_flags": "{field}{where} must be a list of 0/1, not {value}",
    "mask.not_flag": "{field}{where} is {value}: mask entries are 1 (may attend) or 0 (masked)",
    "mask.padding_length": "key_padding has {length} entries but there are {m} keys: one "
    "1 (real token) or 0 (padding) per key",
    "overflow": "the numbers overflow float64 at {stage}, row {row}, column {col} (head "
    "{head}): scale the input down",
    # ---- command line -------------------------------------------------------------------
    "cli.preset_unknown": "no preset named {name!r}; the presets are: {names}",
    "cli.presets_missing": "the presets folder is missing from this installation ({path}): "
    "reinstall qkvcalc",
    "cli.preset_unknown_suggest": "no preset named {name!r}: did you mean {suggestion!r}? "
    "(qkvcalc presets lists them)",
    "cli.two_sources": "give one input, not several: {sources}",
    "cli.bad_option": "--{option}: {reason}",
    "cli.interrupted": "interrupted",
    "cli.stdout_failed": "cannot write to standard output: {reason}",
    "cli.error_prefix": "error",
    # ---- torch script (issue 3) ---------------------------------------------------------
    "ui.heads_group_kv": "Head {head} of {heads} · reads key/value head {kv_head} "
    "(shared by query heads {first}–{last})",
    "ui.concat_span": "{cols} from head {head}",
    "note.concat_columns": "Columns {spans}.",
    "note.cross_axes": "Rows are the {n} queries (from X), columns the {m} keys (from the "
    "source): cross-attention scores are n×m, and n need not equal m.",
    # ---- exports: markdown, latex, html, svg (issue 4) ------------------------------------
    "export.title": "Attention, step by step",
    "export.rows": "Rows: {labels}.",
    "export.cols": "Columns: {labels}.",
    "export.output_unwritable": "cannot write {path}: {reason}",
    "export.output_extension": "--output {path}: the extension {ext} names no format; use "
    "one of {known}, or choose one with --format",
    # ---- step mode (issue 4) ------------------------------------------------------------
    "step.option_help": "Show one stage at a time in the terminal: Enter, Space or → next; "
    "b or ← back; q quit.",
    "step.header": "stage {number} of {total} — {formula}",
    "step.header_head": "stage {number} of {total} — {formula} · head {head}",
    "step.keys": "Enter, Space or → next  ·  b or ← back  ·  q or Esc quit",
    "step.done": "All {total} stages shown. The result:",
    "quiz.no_terminal": "the problem came in on standard input, so the answers are read from a "
    "terminal, and there is none here: give the problem as a file or --preset, or grade a sheet "
    "with --answers",
    "step.no_terminal": "--step reads keys from a terminal, and there is none here (no "
    "/dev/tty): run it in a terminal, or leave out --step to print every stage at once",
    "step.with_format": "--step shows the table one stage at a time in the terminal, so it "
    "does not combine with --format {format}: leave out one of them",
    "step.with_output": "--step shows the stages in the terminal, so it does not combine with "
    "--output: leave out --step to write the file",
    # ---- quiz and new (issue 5) ---------------------------------------------------------
    "quiz.intro": "Work each stage out by hand and type one cell at a time: 7, -0.5, 7/sqrt(2) "
    "or 4.95 are all fine. An answer is right when it agrees to {precision} decimals. "
    "Ctrl-C quits.",
    "quiz.random_seed": "A random problem, seed {seed}. The same one again: "
    "qkvcalc quiz --random --seed {seed} --size {size}",
    "quiz.stage_heading": "Stage {number}/{total}: {title}  ·  {formula}  ·  {shape}",
    "quiz.prompt": "{cell} = ",
    "quiz.bad_answer": "{reason}. Try again.",
    "quiz.wrong": "{cell} is {expected}, not {answer}.",
    "quiz.carried": "{cell} is {expected}, not {answer}. Worked from your own earlier answers "
    "it is {own}, so this step is done right: the mistake started at {origin}.",
    "quiz.stage_score": "{name}: {right} of {total} right",
    "quiz.cell_head": "{cell} (head {head})",
    "quiz.score_title": "Score per stage",
    "quiz.col_stage": "stage",
    "quiz.col_score": "right",
    "quiz.col_cells": "cells",
    "quiz.legend": "✓ right, → carried from an earlier mistake, ✗ wrong, · missing",
    "quiz.verdict.right": "right",
    "quiz.verdict.carried": "carried",
    "quiz.verdict.wrong": "wrong",
    "quiz.verdict.missing": "missing",
    "quiz.cells_title": "Cells to look at again",
    "quiz.detail_wrong": "{cell}: you wrote {answer}, the answer is {expected}",
    "quiz.detail_carried": "{cell}: you wrote {answer}, the answer is {expected}; carried "
    "forward from your mistake at {origin}",
    "quiz.detail_missing": "{cell}: no answer; the answer is {expected}",
    "quiz.stage_missing": "{key}: not answered",
    "quiz.all_right": "All {total} cells right.",
    "quiz.total": "{right} of {total} cells right.",
    "quiz.in_sheet": "in the answer sheet {origin}",
    "quiz.sheet_not_object": 'an answer sheet is a JSON object mapping stage ids ("k", '
    '"scores", "2/scores" for head 2) to matrices, not a {kind}',
    "quiz.sheet_key": "unknown stage {key!r}; this problem's stages are: {known}",
    "quiz.sheet_key_suggest": "unknown stage {key!r}: did you mean {suggestion!r}?",
    "quiz.sheet_not_matrix": "{key} must be a matrix (a list of rows of numbers), not {value}",
    "quiz.sheet_shape": "{key} is {shape}, but that stage is {rule} = {expected} in this problem",
    "quiz.stage_head": "--stages {name}: the head before the slash is a whole number, as in "
    "2/scores",
    "quiz.stage_unknown": "--stages: no stage {name!r}; choose from {known} (2/scores: head 2 "
    "only)",
    "quiz.stages_none": "--stages {names}: none of these is in this problem, which has: {known}",
    "quiz.no_problem": "no problem to work on: give --preset NAME, a JSON file (or - for "
    "standard input), or --random (try: qkvcalc quiz --preset doc)",
    "quiz.random_with_source": "--random makes its own problem: leave out {given}",
    "quiz.seed_without_random": "--seed and --size describe a random problem: add --random",
    "quiz.stdin_twice": "the problem and the answer sheet cannot both come from standard "
    "input: give one of them as a file",
    "quiz.json_needs_answers": "--format json is for graded answer sheets: add --answers FILE",
    "quiz.size": "--size {text!r}: write the number of tokens and the width as n,d (e.g. 3,2), "
    "each from 1 to {limit}",
    "quiz.seed": "--seed {seed}: a seed is a whole number from 0 to {limit}",
    "new.intro": "A new attention problem, step by step. Numbers may be written 3, -0.5, 1/2 "
    "or sqrt(2); Enter takes the value in [brackets]; Ctrl-C quits without saving.",
    "new.tokens": "Number of tokens n{default}:",
    "new.names": "Names of the {n} tokens, split by spaces [{default}]:",
    "new.names_count": "{count} names for {n} tokens: give exactly {n}, or none for the "
    "default names.",
    "new.d_model": "d_model, the width of each token's vector{default}:",
    "new.d_k": "d_k, the width of a query and a key (per head){default}:",
    "new.d_v": "d_v, the width of a value (per head){default}:",
    "new.heads": "Number of heads H{default}:",
    "new.whole_bad": "{value!r} is not a whole number from {low} to {high}.",
    "new.matrix": "{matrix} is {rule} = {rows}×{cols}: {rows} rows of {cols} numbers.",
    "new.row": "{matrix} row {row} of {rows} ({cols} numbers):",
    "new.row_length": "{matrix} row {row} is {length} long, but {matrix} is {rule} = "
    "{rows}×{cols}: every row needs {cols}. Type the row again.",
    "new.cell_bad": "{reason}. Type the row again.",
    "new.mask": "Mask: none, causal, or matrix (type it row by row) [none]:",
    "new.mask_bad": "{value!r}: type none, causal or matrix.",
    "new.mask_row": "mask row {row} of {rows} ({cols} zeros or ones, 1 = may attend):",
    "new.mask_row_bad": "mask row {row} needs {cols} entries, each 1 (may attend) or 0 "
    "(masked). Type the row again.",
    "new.yes_words": "y,yes",
    "new.no_words": "n,no",
    "new.yes_no": "Type y or n.",
    "new.overwrite": "{path} exists. Replace it? [y/N]",
    "new.not_saved": "Nothing written.",
    "new.saved": "Saved to {path}.",
    "new.explain_now": "Explain it now? [Y/n]",
    "new.explain_later": "Explain it any time: qkvcalc explain {path}",
    "new.ended": "the input ended before the problem was complete; nothing was saved",
    # ---- exact (issue 5) ----------------------------------------------------------------
    "note.exact_surd": "√{d_k} is irrational, so each scaled score is kept exactly as a "
    "whole number over a square root (7/√2, with the smallest root), beside its decimal.",
    "note.exact_scale_irrational": "The given scale {scale} is irrational, so the scaled "
    "scores are shown in decimals.",
    "note.exact_stops": "No exact fractions from here on: e^x of a rational x other than 0 is "
    "irrational (Lindemann's theorem), so the exponentials, the weights and the output are "
    "decimals.",
    "note.exact_partial": "Cells that depend on an irrational input (a square root) are shown "
    "in decimals.",
    "note.exact_skipped": "Exact fractions left out: this problem needs {count} "
    "multiplications of fractions, more than {limit}; --exact is for problems small enough "
    "to work by hand.",
    "note.exact_skipped_digits": "Exact fractions left out: with these numbers a cell would "
    "grow to about {digits} digits (numerator and denominator), more than {limit}; --exact is "
    "for numbers a person can read.",
    "note.exact_skipped_work": "Exact fractions left out: {count} multiplications of fractions "
    "of up to about {digits} digits would take too long; --exact is for problems small "
    "enough to work by hand.",
    # ---- limits and safety (issue 6) ----------------------------------------------------
    "limits.input_elements": "{field} is {rows} rows of {cols} numbers, which brings the "
    "input to {count} numbers, more than the limit of {limit}; raise it with --max-elements "
    "if you mean it",
    "limits.stage_elements": "with {heads} heads, {n} queries and {m} keys the stages would "
    "hold {count} numbers ({gigabytes} GB: every head keeps its {n}×{m} scores, and working "
    "one out takes four more), "
    "more than the limit of {limit}; use fewer tokens or heads, or raise the limit with "
    "--max-elements if you mean it",
    "number.too_large": "{field}: {text} is too large: float64 numbers stop near 1.8e308",
    "input.json_long_number": "not valid JSON here: a number of more than {limit} digits "
    "(float64 keeps about 17)",
    # ---- command-line help ----------------------------------------------------------------
    "help.app": "A step-by-step calculator for Transformer attention: every stage, every "
    "cell's arithmetic. Start with: qkvcalc explain --preset doc",
    "help.version": "Show the version and exit.",
    "help.lang": "en or ko (default: from QKVCALC_LANG, LC_ALL, LANG).",
    "help.no_color": "No colours (NO_COLOR works too).",
    "help.explain": "Compute attention for a problem and show every stage, with each cell's "
    "arithmetic.",
    "help.explain.source": "A JSON file of the input format, or - for standard input (piped "
    "input is read when no other input is given).",
    "help.explain.preset": "A bundled preset (qkvcalc presets lists them).",
    "help.explain.x": 'Input X, rows split by ";": "1 2; 0 1".',
    "help.explain.wq": "W_Q, inline.",
    "help.explain.wk": "W_K, inline.",
    "help.explain.wv": "W_V, inline.",
    "help.explain.wo": "W_O, inline (multi-head output projection).",
    "help.explain.tokens": 'Token names, split by spaces: "I love cats".',
    "help.explain.mask": 'none, causal, or a 0/1 matrix "1 0; 1 1" (1 = may attend).',
    "help.explain.heads": "Number of heads H.",
    "help.explain.kv_heads": "Key/value heads G (grouped-query attention).",
    "help.explain.scale": "The factor the scores are multiplied by (default 1/√d_k): 0.5, "
    "1/sqrt(8).",
    "help.explain.layout": "rows: Q = X·W_Q; torch: weights as PyTorch stores them (out×in).",
    "help.explain.format": "What to print (default: table, or from --output's extension).",
    "help.explain.output": "Write to this file instead of standard output.",
    "help.explain.detail": "full: each cell's arithmetic where it fits; brief: tables only.",
    "help.explain.precision": "Decimals shown.",
    "help.explain.exact": "Show exact fractions where the numbers stay rational.",
    "help.explain.max_bytes": "Refuse inputs larger than this.",
    "help.explain.max_elements": "Refuse problems whose inputs and stages hold more numbers "
    "than this.",
    "help.presets": "List the bundled presets, or print one as JSON.",
    "help.presets.list": "List the presets with a one-line description.",
    "help.presets.show": "Print one preset as JSON: a template to copy and edit.",
    "help.presets.name": "The preset's name.",
    "help.quiz": "Work out attention by hand: each cell is checked, a mistake is traced to "
    "where it began.",
    "help.quiz.source": "A JSON file of the input format, or - for standard input.",
    "help.quiz.preset": "A bundled preset (qkvcalc presets lists them).",
    "help.quiz.random": "A fresh problem of small integers.",
    "help.quiz.seed": "With --random: the same problem every time.",
    "help.quiz.size": "With --random: tokens,width (default 3,2).",
    "help.quiz.stages": "The stages to work out, in order: q,k,v,kt,scores,scaled,masked,exp,"
    "weights,output (2/scores: head 2 only). Default: q,k,v,scores,scaled,weights,output.",
    "help.quiz.answers": "Grade an answer sheet without questions: a JSON file mapping stage "
    'ids ("k", "2/scores") to matrices, or - for standard input.',
    "help.quiz.format": "With --answers: a table, or JSON for autograders.",
    "help.quiz.precision": "Decimals an answer must agree to (half a unit of the last).",
    "help.new": "Type a problem in step by step, each row checked as it comes; save it as JSON.",
    "help.new.file": "Save the problem here (default: print it to standard output).",
}
