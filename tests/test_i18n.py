"""English and Korean: the two catalogs agree key for key and placeholder for placeholder, the
language is chosen as documented, no English sentence reaches a Korean run, and tables with
Korean token names stay aligned (wide characters take two cells)."""

from __future__ import annotations

import json
import re
import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.cells import cell_len

from qkvcalc.catalog.en import MESSAGES as EN
from qkvcalc.catalog.ko import MESSAGES as KO
from qkvcalc.i18n import resolve_lang, translate
from tests.conftest import ROOT

CATALOGS = {"en": EN, "ko": KO}
PRESETS = sorted(path.stem for path in (ROOT / "presets").glob("*.json"))
LANG_VARS = ("QKVCALC_LANG", "LC_ALL", "LC_MESSAGES", "LANG")


def placeholders(template: str) -> set[tuple[str, str | None, str]]:
    """The {name!conversion:spec} fields of a template (escaped {{ }} are not fields). A
    plural's noun ({n:token|tokens}) is English grammar, not a value: Korean needs none."""
    return {
        (name, conversion, spec or "")
        for _, name, spec, conversion in string.Formatter().parse(template)
        if name is not None and "|" not in (spec or "")
    }


# ---- (a)–(c) the catalogs ----------------------------------------------------------------


def test_korean_has_exactly_the_english_keys():
    missing = [key for key in EN if key not in KO]
    extra = [key for key in KO if key not in EN]
    assert not missing, f"keys without Korean: {missing}"
    assert not extra, f"Korean keys that en.py does not have: {extra}"


def test_korean_keeps_the_english_order():
    # ko.py mirrors en.py section by section, so a reviewer can read them side by side
    assert list(KO) == list(EN)


@pytest.mark.parametrize("key", sorted(EN.keys() & KO.keys()))
def test_placeholders_match(key):
    assert placeholders(KO[key]) == placeholders(EN[key])


@pytest.mark.parametrize("lang", ["en", "ko"])
def test_every_message_formats_and_shows_every_value(lang):
    for key, template in CATALOGS[lang].items():
        params = {
            name.split(".")[0].split("[")[0]: f"⟨{name}⟩" for name, *_ in placeholders(template)
        }
        text = translate(key, lang, **params)
        for value in params.values():
            assert value in text, (key, text)
        # a field that was not filled in, or a brace that should have been doubled
        assert not re.search(r"\{[A-Za-z_]\w*(![rsa])?\}", text), (key, text)


@settings(max_examples=50, deadline=None)
@given(value=st.one_of(st.integers(), st.text(max_size=30), st.floats(allow_nan=False)))
def test_any_value_formats_in_both_languages(value):
    for lang, catalog in CATALOGS.items():
        for key, template in catalog.items():
            params = {name: value for name, *_ in placeholders(template)}
            assert isinstance(translate(key, lang, **params), str)


def test_no_korean_entry_is_left_in_english():
    # an entry with a plain English word of 3+ letters must not be the English text
    for key, en_text in EN.items():
        words = [w for w in plain_words(en_text) if len(w) >= 3]
        if words:
            assert KO[key] != en_text, key
            assert re.search(r"[가-힣]", KO[key]), (key, KO[key])


# ---- language selection --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("explicit", "env", "expected"),
    [
        (None, {}, "en"),
        (None, {"LANG": "ko_KR.UTF-8"}, "ko"),
        (None, {"LANG": "ko"}, "ko"),
        (None, {"LANG": "KO_kr.utf8"}, "ko"),
        (None, {"LANG": "en_US.UTF-8"}, "en"),
        (None, {"LANG": "C.UTF-8"}, "en"),
        (None, {"LC_MESSAGES": "ko_KR.UTF-8", "LANG": "en_US.UTF-8"}, "ko"),
        (None, {"LC_ALL": "ko_KR.UTF-8", "LANG": "en_US.UTF-8"}, "ko"),
        # LC_ALL overrides LANG (POSIX), also when it says English
        (None, {"LC_ALL": "C", "LANG": "ko_KR.UTF-8"}, "en"),
        (None, {"LC_ALL": "en_GB.UTF-8", "LC_MESSAGES": "ko_KR.UTF-8"}, "en"),
        # an empty variable counts as unset
        (None, {"LC_ALL": "", "LANG": "ko_KR.UTF-8"}, "ko"),
        # QKVCALC_LANG wins over the locale, both ways
        (None, {"QKVCALC_LANG": "ko", "LC_ALL": "en_US.UTF-8"}, "ko"),
        (None, {"QKVCALC_LANG": "en", "LC_ALL": "ko_KR.UTF-8", "LANG": "ko_KR.UTF-8"}, "en"),
        # --lang wins over everything
        ("en", {"QKVCALC_LANG": "ko", "LC_ALL": "ko_KR.UTF-8"}, "en"),
        ("ko", {"QKVCALC_LANG": "en", "LANG": "C"}, "ko"),
    ],
)
def test_resolve_lang(monkeypatch, explicit, env, expected):
    for var in LANG_VARS:
        monkeypatch.delenv(var, raising=False)
    for var, value in env.items():
        monkeypatch.setenv(var, value)
    assert resolve_lang(explicit) == expected


@pytest.mark.parametrize(
    ("args", "env", "korean"),
    [
        ((), {"LANG": "ko_KR.UTF-8"}, True),
        ((), {"LC_ALL": "ko_KR.UTF-8"}, True),
        ((), {"QKVCALC_LANG": "ko"}, True),
        (("--lang", "en"), {"QKVCALC_LANG": "ko", "LANG": "ko_KR.UTF-8"}, False),
        (("--lang", "ko"), {"LANG": "en_US.UTF-8"}, True),
        ((), {"LANG": "en_US.UTF-8"}, False),
    ],
)
def test_the_command_line_speaks_the_chosen_language(qkvcalc_proc, args, env, korean):
    result = qkvcalc_proc("explain", "--preset", "doc", *args, env=env)
    assert result.returncode == 0, result.stderr
    title = translate("stage.scores.title", "ko" if korean else "en")
    other = translate("stage.scores.title", "en" if korean else "ko")
    assert title in result.stdout and other not in result.stdout


# ---- (d) no English in a Korean run ----------------------------------------------------------

# A "word" is a whitespace-separated token made of letters only, once the punctuation around it
# is stripped; anything with a digit, _, ., /, -, =, ×, Hangul … (W_Q, d_k, --preset, Key가,
# scaled_dot_product_attention) is notation or Korean and ends a phrase, as does punctuation
# after a word (so "Q, K, V" is three one-word phrases).
_EDGE = "\"'“”‘’()[]«»"
_STOP = ",.;:!?…"
PHRASE = 2  # words in a row: short enough to catch a stage title such as "Query projection"


def plain_words(text: str) -> list[str]:
    return [w for run in phrases_of(text) for w in run]


def phrases_of(text: str) -> list[list[str]]:
    """Runs of consecutive plain words, lowercased."""
    runs: list[list[str]] = [[]]
    for token in text.split():
        core = token.strip(_EDGE)
        ends = core.endswith(tuple(_STOP))
        core = core.rstrip(_STOP).strip(_EDGE)
        if re.fullmatch(r"[A-Za-z]+(?:'[A-Za-z]+)?", core):
            runs[-1].append(core.lower())
            if ends:
                runs.append([])
        elif runs[-1]:
            runs.append([])
    return [run for run in runs if run]


def shingles(text: str, size: int = PHRASE) -> set[tuple[str, ...]]:
    out = set()
    for run in phrases_of(text):
        out.update(tuple(run[i : i + size]) for i in range(len(run) - size + 1))
    return out


def _english_phrases() -> set[tuple[str, ...]]:
    def filled(template: str) -> str:
        return re.sub(r"\{[^{}]*\}", " | ", template)  # a placeholder ends a phrase

    english = set().union(*(shingles(filled(t)) for t in EN.values()))
    # what Korean messages themselves contain (commands, option names, PyTorch names) is
    # notation shared by both languages, not an English sentence
    shared = set().union(*(shingles(filled(t)) for t in KO.values()))
    return english - shared


ENGLISH = _english_phrases()


def english_in(output: str, drop: tuple[str, ...] = (), excuse: tuple[str, ...] = ()) -> set[str]:
    """The English phrases of en.py found in `output`. `drop` removes input data (a preset's
    English description) first; `excuse` forgives the phrases of data that a format escapes
    (LaTeX, HTML) so that it cannot be removed word for word."""
    text = " ".join(output.split())
    for data in drop:
        text = text.replace(" ".join(data.split()), " ")
    forgiven = set().union(*(shingles(data) for data in excuse)) if excuse else set()
    return {" ".join(s) for s in (shingles(text) & ENGLISH) - forgiven}


def _preset_description(name: str) -> str:
    return json.loads((ROOT / "presets" / f"{name}.json").read_text(encoding="utf-8")).get(
        "description", ""
    )


def _preset_sentences(name: str) -> tuple[str, ...]:
    """The preset's tokens read as sentences ('the cat is sleeping'): input data, not prose."""
    doc = json.loads((ROOT / "presets" / f"{name}.json").read_text(encoding="utf-8"))
    docs = [doc, *doc.get("examples", ()), *doc.get("heldout", ())]  # a data set's sentences
    return tuple(" ".join(d[key]) for d in docs for key in ("tokens", "source_tokens") if key in d)


def test_the_english_phrase_list_is_substantial():
    assert len(ENGLISH) > 300
    for title in ("stage.q.title", "stage.scores.title", "stage.output.title"):
        assert shingles(EN[title]) & ENGLISH, title


def test_the_leak_check_catches_english(cli):
    doc = (_preset_description("doc"),)
    korean = cli("explain", "--preset", "doc", "--lang", "ko").stdout
    assert english_in(korean) == set()
    english = cli("explain", "--preset", "doc", "--lang", "en").stdout
    assert len(english_in(english, drop=doc)) > 30
    # one sentence slipped into a Korean run is found, wherever the terminal wrapped it
    for key in ("stage.kt.why", "note.mask_convention", "stage.x.title", "stage.scores.title"):
        assert english_in(korean.replace("\n", f"\n  {EN[key]}\n", 1), drop=doc), key
    wrapped = korean + "\n  A query is what this token is\n  looking for.\n"
    assert "looking for" in english_in(wrapped, drop=doc)


@pytest.mark.parametrize("name", PRESETS)
def test_a_korean_run_of_every_preset_has_no_english(cli, name):
    for detail in ("full", "brief"):
        result = cli("explain", "--preset", name, "--lang", "ko", "--detail", detail)
        assert result.exit_code == 0, result.stderr
        # the preset's description too; its example sentences are data (they are the tokens)
        assert english_in(result.stdout, excuse=_preset_sentences(name)) == set()
        assert re.search(r"[가-힣]", result.stdout)


@pytest.mark.parametrize("fmt", ["markdown", "latex", "html", "svg"])
def test_korean_exports_have_no_english(cli, fmt):
    import html

    for name in PRESETS:
        result = cli("explain", "--preset", name, "--lang", "ko", "--format", fmt)
        assert result.exit_code == 0, result.stderr
        # the interactive page's script is code, never shown; its data block (the words of its
        # buttons) is checked with the page
        code = re.sub(r"<script>.*?</script>", " ", result.stdout, flags=re.S)
        text = html.unescape(code)
        assert english_in(text, excuse=_preset_sentences(name)) == set(), name
        assert re.search(r"[가-힣]", text), name


EYE = "1 0; 0 1"
MULTIHEAD = [
    "--x",
    "1 2 0 1; 0 1 1 0; 1 1 2 0",
    "--wq",
    "1 0 0 1; 0 1 1 0; 1 1 0 0; 0 0 1 1",
    "--wk",
    "1 0; 0 1; 1 1; 0 0",
    "--wv",
    "1 1; 0 1; 1 0; 0 0",
    "--heads",
    "2",
    "--kv-heads",
    "1",
]
BIG = "; ".join(" ".join(str((i * j) % 3) for j in range(4)) for i in range(20))
EYE4 = "1 0 0 0; 0 1 0 0; 0 0 1 0; 0 0 0 1"

# the problems that reach the notes and warnings the presets do not
KOREAN_RUNS = {
    "multi-head, grouped-query, W_O": [*MULTIHEAD, "--wo", EYE4, "--tokens", "a b c"],
    "multi-head without W_O": [*MULTIHEAD, "--mask", "causal"],
    "given scale": ["--x", "1 2; 0 1", "--wq", EYE, "--wk", EYE, "--wv", EYE, "--scale", "1/2"],
    "every key masked": [
        "--x",
        "1 2; 0 1",
        "--wq",
        EYE,
        "--wk",
        EYE,
        "--wv",
        EYE,
        "--mask",
        "0 0; 1 1",
    ],
    "large": ["--x", BIG, "--wq", EYE4, "--wk", EYE4, "--wv", EYE4],
}


@pytest.mark.parametrize("name", sorted(KOREAN_RUNS))
def test_korean_runs_beyond_the_presets_have_no_english(cli, name):
    result = cli("explain", *KOREAN_RUNS[name], "--lang", "ko")
    assert result.exit_code == 0, result.stderr
    assert english_in(result.stdout) == set()


def test_cross_attention_in_korean(cli):
    doc = {
        "tokens": ["나는", "고양이를"],
        "x": [[1, 2], [0, 1]],
        "source": [[1, 0], [0, 1], [1, 1]],
        "source_tokens": ["I", "like", "cats"],
        "wq": [[1, 0], [0, 1]],
        "wk": [[1, 1], [0, 1]],
        "wv": [[1, 0], [1, 1]],
        "mask": "causal",
    }
    result = cli("explain", "-", "--lang", "ko", input=json.dumps(doc))
    assert result.exit_code == 0, result.stderr
    assert translate("stage.source.title", "ko") in result.stdout
    assert english_in(result.stdout) == set()


ERRORS = {
    "bad JSON": (["explain", "-"], '{"x": [1, 2'),
    "not an object": (["explain", "-"], "[1, 2]"),
    "shape": (
        ["explain", "-"],
        '{"x": [1, 2], "wq": [[1, 0, 0]], "wk": [[1], [0]], "wv": [[1], [0]]}',
    ),
    "ragged": (["explain", "-"], '{"x": [[1, 2], [3]], "wq": [[1]], "wk": [[1]], "wv": [[1]]}'),
    "unknown key": (["explain", "-"], '{"x": [1, 2], "wqq": [[1]]}'),
    "unknown key, nothing close": (["explain", "-"], '{"zzzzzz": 1}'),
    "number": (["explain", "--x", "1 two", "--wq", "1", "--wk", "1", "--wv", "1"], None),
    "mask shape": (
        ["explain", "--x", "1; 2", "--wq", "1", "--wk", "1", "--wv", "1", "--mask", "1 0 1"],
        None,
    ),
    "heads": (["explain", "--preset", "doc", "--heads", "3"], None),
    "unknown preset": (["explain", "--preset", "nope"], None),
    "unknown preset, close": (["explain", "--preset", "sentenc"], None),
    "two inputs": (["explain", "--preset", "doc", "missing.json"], None),
    "missing file": (["explain", "no-such-file.json"], None),
    "no input": (["explain"], None),
    "quiz, no problem": (["quiz"], None),
    "quiz, seed without random": (["quiz", "--seed", "3"], None),
    "quiz, size": (["quiz", "--random", "--size", "99,1"], None),
}


@pytest.mark.parametrize("case", sorted(ERRORS))
def test_korean_errors_have_no_english(cli, case):
    args, stdin = ERRORS[case]
    result = cli(*args, "--lang", "ko", input=stdin)
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr.startswith(f"{KO['cli.error_prefix']}: "), result.stderr
    assert result.stderr.count("\n") == 1
    assert english_in(result.stderr) == set(), result.stderr


def test_the_error_cases_fail_in_english_too(cli):
    # the same inputs in English do show en.py sentences: the Korean check above can fail
    for args, stdin in ERRORS.values():
        result = cli(*args, "--lang", "en", input=stdin)
        assert result.exit_code == 2 and english_in(result.stderr), result.stderr


def test_presets_list_in_korean(cli):
    result = cli("presets", "list", "--lang", "ko")
    assert result.exit_code == 0
    for key in ("ui.presets_title", "ui.presets_name", "ui.presets_description"):
        assert KO[key] in result.stdout
    assert english_in(result.stdout) == set()
    for name in PRESETS:
        assert KO[f"preset.{name}.description"].split()[0] in result.stdout


def test_the_catalogs_hold_each_bundled_presets_own_description():
    """The English catalog's preset.<name>.description is the preset file's description, word
    for word: that is how a bundled preset's sentence is recognised and put into Korean."""
    for name in PRESETS:
        assert EN[f"preset.{name}.description"] == _preset_description(name), name


def test_the_catalogs_hold_each_bundled_presets_own_reference():
    """preset.<name>.reference is the preset file's reference word for word, and Korean has its
    own: a run that prints the reference can print it in either language."""
    from qkvcalc.i18n import preset_reference

    for name in PRESETS:
        doc = json.loads((ROOT / "presets" / f"{name}.json").read_text(encoding="utf-8"))
        assert EN[f"preset.{name}.reference"] == doc["reference"], name
        assert preset_reference(name, doc["reference"], "ko") == KO[f"preset.{name}.reference"]
        assert english_in(KO[f"preset.{name}.reference"], excuse=_preset_sentences(name)) == set()
    assert preset_reference("doc", "my own numbers", "ko") == "my own numbers"


@pytest.mark.parametrize("name", PRESETS)
def test_preset_texts_cite_no_internal_paths(name):
    """A preset's texts are shipped to users: they cite the articles by title, never a file of
    the team's (shared/sources/…, DESIGN.md)."""
    doc = json.loads((ROOT / "presets" / f"{name}.json").read_text(encoding="utf-8"))
    for lang in ("en", "ko"):
        for field in ("description", "reference"):
            text = doc[field] if lang == "en" else KO[f"preset.{name}.{field}"]
            assert not re.search(r"shared/|sources/|DESIGN|\.md\b|\.txt\b", text), (name, text)


# A particle right after a placeholder whose form depends on the value's last sound: 은/는, 이/가,
# 을/를, 와/과, 으로/로, and the copula's vowel-only forms 라/여 ({x}라서, {x}여야). Allowed: the
# copula written with 이 ({x}이므로, {x}이고, {x}이면, {x}이며, {x}이어야, {x}이라, {x}입니다,
# {x}인). A dual form — 은(는), 이(가), 을(를), 와(과), (으)로, (은)는 — is never allowed, after a
# placeholder or anything else: filled in, it reads "프리셋 sentence을(를)", "σ = 0.5은(는)", a
# form left unfilled (teaching review F19); the sentence is built around the value instead.
_SINGLE_PARTICLE = re.compile(  # also past a closing quote or bracket, or a parenthetical
    r"\}(?:['\"\]]|\([^()]*\))?"
    r"(?:은|을|와|이(?!므로|고|면|며|어|라|다|지|거나|었|던|니)|으로|[는를과가로라여])"
)
_DUAL_PARTICLE = re.compile(r"\((?:은|는|이|가|을|를|와|과|으|이)\)")


def single_particles(text: str) -> list[str]:
    found = [*_SINGLE_PARTICLE.finditer(text), *_DUAL_PARTICLE.finditer(text)]
    return [text[max(0, m.start() - 20) : m.end() + 5] for m in found]


def test_no_korean_particle_after_a_placeholder_depends_on_its_last_sound():
    """'{field}는' reads wrong when the field is 'bq' (비큐는 but 'mask' …); '{d_k}를' when d_k
    is 8 (팔을); '{x}을(를)' reads as a form left unfilled: every Korean entry builds the
    sentence around a placeholder (a colon, 의, a noun, a counter, a copula), with no dual form."""
    found = {key: single_particles(text) for key, text in KO.items() if single_particles(text)}
    assert not found, found


@pytest.mark.parametrize(
    ("text", "bad"),
    [
        ("{field}는 정수여야 합니다", True),
        ("{field}가 넘습니다", True),
        ("Key {j}를 허용하면", True),
        ("{cell}은 칸입니다", True),
        ("i + {half}와 짝입니다", True),
        ("{dtype}로 실행", True),
        ("{dtype}으로 실행", True),
        ("{format}라는 형식", True),
        ("{name!r}이 없습니다", True),
        ("{field}은(는) 정수여야 합니다", True),
        ("{field}이(가) 넘습니다", True),
        ("Key {j}을(를) 허용하면", True),
        ("{half}와(과) 짝", True),
        ("{dtype}(으)로 실행", True),
        ("qkvcalc {command}(은)는 모델을", True),
        ("프리셋 sentence을(를) 씁니다", True),
        ("σ = 0.5은(는) 작습니다", True),
        ("W_Q은(는) 학습됩니다", True),
        ("{field}: 정수여야 합니다", False),
        ("{head}번 헤드가 없습니다", False),
        ("{dtype} 정밀도로 실행", False),
        ("속성 '{attribute}'가 없습니다", True),
        ('--shuffle "{order}"를 붙이세요', True),
        ("{src}[{i},{j}]가 들면", True),
        ("첫 바이트 {byte}(위치 {offset})로 시작하는", True),
        ("차원(i + {half})과 짝지어", False),
        ("'{attribute}' 속성이 없습니다", False),
        ("{model} 모델을 불러옵니다", False),
        ("W_Q는 학습됩니다(Query)", False),
        ("d_k = {d_k}이므로 {a}이고 {b}입니다, {c}이면 {d}이며 {e}이어야 {f}인가요", False),
        ("{head}의 {n}개, {origin}에서", False),
    ],
)
def test_the_particle_check_tells_single_forms_from_dual_ones(text, bad):
    assert bool(single_particles(text)) is bad


def test_korean_uses_one_word_for_query_and_names_self_attention():
    """Query/Key/Value stay in English in Korean (never 쿼리), and both kinds of attention are
    named: 셀프 어텐션 as well as 크로스 어텐션."""
    assert not [key for key, text in KO.items() if "쿼리" in text]
    assert any("셀프 어텐션" in text for text in KO.values())
    assert any("크로스 어텐션" in text for text in KO.values())
    # a value typed on the command line is glossed, never shown bare in a Korean header
    for key in ("ui.mask_none", "ui.mask_causal", "ui.mask_custom"):
        assert re.search(r"[가-힣]", KO[key]), key


def test_a_description_of_ones_own_is_shown_as_written(cli, tmp_path):
    """A file that kept a bundled preset's name but says something else is not 'translated'
    into the bundled preset's Korean sentence."""
    doc = json.loads((ROOT / "presets" / "doc.json").read_text(encoding="utf-8"))
    doc["description"] = "내가 만든 예제: 숫자를 바꿔 본 것"
    path = tmp_path / "mine.json"
    path.write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    result = cli("explain", str(path), "--lang", "ko")
    assert result.exit_code == 0, result.stderr
    assert "프리셋 doc: 내가 만든 예제: 숫자를 바꿔 본 것" in result.stdout
    assert KO["preset.doc.description"] not in result.stdout


# ---- (f) the usage layer --------------------------------------------------------------------


def test_no_input_in_korean(qkvcalc_proc):
    result = qkvcalc_proc("explain", "--lang", "ko")
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr == f"{KO['cli.error_prefix']}: {KO['input.none']}\n"


def test_no_input_in_korean_from_the_locale(qkvcalc_proc):
    result = qkvcalc_proc("explain", env={"LANG": "ko_KR.UTF-8"})
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == f"{KO['cli.error_prefix']}: {KO['input.none']}\n"


# ---- (e) Korean tables stay aligned ------------------------------------------------------------

KOREAN_TOKENS = ["나는", "고양이를", "좋아한다"]


def column_ends(line: str) -> list[int]:
    """The screen column (in cells) where each field of a table line ends; fields are split
    by two or more spaces (a table puts at least three between its columns)."""
    return [cell_len(line[: m.end()]) for m in re.finditer(r"\S+(?: \S+)*", line)]


def single_tables(text: str) -> list[list[str]]:
    """Each table printed on its own (not side by side in A · B = C): its header, then a rule of
    ━ alone, then its rows up to a blank line."""
    lines = text.split("\n")
    tables = []
    for i, line in enumerate(lines[1:], start=1):
        if line.strip() and set(line.strip()) == {"━"}:
            rows = []
            for row in lines[i + 1 :]:
                if not row.strip() or row.lstrip().startswith("•"):
                    break
                rows.append(row)
            tables.append([lines[i - 1], line, *rows])
    return tables


def assert_aligned(table: list[str]) -> None:
    header, rule, *rows = (line.rstrip() for line in table)
    widths = {cell_len(line) for line in (header, rule, *rows)}
    assert len(widths) == 1, "\n".join(table)
    # every number column ends where its header ends (right-justified), in every row
    ends = column_ends(header)[1:]
    for row in rows:
        assert column_ends(row)[1:] == ends, "\n".join(table)


def test_korean_tokens_keep_tables_aligned(qkvcalc_proc):
    result = qkvcalc_proc(
        "explain",
        "--x",
        "1 2; 0 1; 1 1",
        "--wq",
        EYE,
        "--wk",
        "1 1; 0 1",
        "--wv",
        "1 0; 1 1",
        "--tokens",
        " ".join(KOREAN_TOKENS),
        "--mask",
        "causal",
        "--lang",
        "ko",
        env={"COLUMNS": "100"},
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert all(cell_len(line) <= 100 for line in out.split("\n"))
    tables = single_tables(out)
    # X, Kᵀ, the scaled, masked, exp and weight tables, and the final output
    assert len(tables) >= 6
    for table in tables:
        assert_aligned(table)
        labels = {line.split()[0] for line in table[2:]} | set(table[0].split())
        assert labels & set(KOREAN_TOKENS), "\n".join(table)
    # the names are shown whole, not cut to fit a column measured in characters
    kt = next(t for t in tables if t[0].split()[0] == "Kᵀ")
    assert kt[0].split()[1:] == KOREAN_TOKENS


hangul = st.characters(min_codepoint=0xAC00, max_codepoint=0xD7A3)
names = st.text(alphabet=st.one_of(hangul, st.sampled_from("abcxyz")), min_size=1, max_size=5)


@settings(max_examples=40, deadline=None)
@given(
    data=st.data(),
    n=st.integers(1, 4),
    m=st.integers(1, 4),
)
def test_matrix_tables_with_wide_names_stay_aligned(data, n, m):
    import numpy as np

    from qkvcalc.render import RenderOptions
    from qkvcalc.render.terminal import matrix_table, to_text

    rows = data.draw(st.lists(names, min_size=n, max_size=n))
    cols = data.draw(st.lists(names, min_size=m, max_size=m))
    value = (
        np.array(
            data.draw(
                st.lists(
                    st.lists(st.integers(-99, 99), min_size=m, max_size=m), min_size=n, max_size=n
                )
            ),
            dtype=float,
        )
        / 4
    )
    opts = RenderOptions(lang="ko", width=100, color=False)
    text = to_text(matrix_table(value, "점수", rows, cols, opts), opts)
    table = [line for line in text.split("\n") if line.strip()]
    assert_aligned(table)
    assert table[0].split() == ["점수", *cols]
    assert [line.split()[0] for line in table[2:]] == rows


def test_long_korean_names_are_not_cut(cli):
    tokens = [
        f"{word}토큰입니다"
        for word in ("첫째", "둘째", "셋째", "넷째", "다섯", "여섯", "일곱", "여덟")
    ]
    x = "; ".join("1 0" if i % 2 else "0 1" for i in range(len(tokens)))
    result = cli(
        "explain",
        "--x",
        x,
        "--wq",
        EYE,
        "--wk",
        EYE,
        "--wv",
        EYE,
        "--tokens",
        " ".join(tokens),
        "--lang",
        "ko",
        "--detail",
        "brief",
    )
    assert result.exit_code == 0
    kt = next(t for t in single_tables(result.stdout) if t[0].split()[0] == "Kᵀ")
    shown = [name for name in kt[0].split()[1:] if name != "…"]
    assert shown and all(name in tokens for name in shown), kt[0]
    assert_aligned(kt)


@pytest.mark.parametrize("data", ["[1, 2]", "null", '"x"', "true", "3"])
def test_what_the_input_is_instead_of_an_object_is_said_in_korean(cli, data):
    result = cli("explain", "-", "--lang", "ko", input=data)
    assert result.exit_code == 2
    kind = result.stderr.rsplit("종류: ", 1)[1].strip()
    assert re.search(r"[가-힣]", kind), result.stderr  # 리스트, null 값, 문자열 …
