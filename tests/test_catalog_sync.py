"""The Korean catalog stays tied to the English it translates: tests/data/ko_translates.json
holds, for every key, a hash of the English sentence as it was when its Korean was written
(and reviewed). A changed English sentence then names its stale Korean here until the Korean
is brought in line and the record refreshed (QKVCALC_REGEN_GOLDEN=1 rewrites it: read the
English diff and the Korean first)."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from qkvcalc.catalog.en import MESSAGES as EN
from qkvcalc.catalog.ko import MESSAGES as KO

RECORD = Path(__file__).parent / "data" / "ko_translates.json"


def english_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def current() -> dict[str, str]:
    return {key: english_hash(EN[key]) for key in sorted(EN)}


def test_every_korean_entry_translates_the_english_of_today():
    now = current()
    if os.environ.get("QKVCALC_REGEN_GOLDEN"):
        RECORD.write_text(json.dumps(now, indent=0, sort_keys=True) + "\n", encoding="utf-8")
    recorded = json.loads(RECORD.read_text(encoding="utf-8"))
    stale = sorted(key for key in now if key in recorded and recorded[key] != now[key])
    new = sorted(set(now) - set(recorded))
    gone = sorted(set(recorded) - set(now))
    assert not stale, f"the English changed since their Korean was written: {stale}"
    assert not new, f"keys without a recorded English (write their Korean, then refresh): {new}"
    assert not gone, f"keys recorded that the catalogs no longer have: {gone}"
    assert set(KO) == set(EN)


def test_the_record_notices_a_changed_english_sentence(monkeypatch):
    key = "stage.scores.why"
    monkeypatch.setitem(EN, key, EN[key] + " (changed)")
    recorded = json.loads(RECORD.read_text(encoding="utf-8"))
    assert recorded[key] != current()[key]


def _package_strings() -> tuple[set[str], set[str]]:
    """Every string literal of the package outside the catalogs, and the constant beginnings
    of the keys it builds ("note.rope_pairs_" + style, f"stage.{topic}.title")."""
    import ast

    package = Path(__file__).parent.parent / "qkvcalc"
    consts: set[str] = set()
    prefixes: set[str] = set()
    suffixes: set[str] = set()
    for path in package.rglob("*.py"):
        if "catalog" in path.relative_to(package).parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                consts.add(node.value)
            elif isinstance(node, ast.JoinedStr) and node.values:
                first = node.values[0]
                if isinstance(first, ast.Constant) and isinstance(first.value, str):
                    prefixes.add(first.value)
            elif (
                isinstance(node, ast.BinOp)
                and isinstance(node.left, ast.Constant)
                and isinstance(node.left.value, str)
            ):
                prefixes.add(node.left.value)
            elif (  # key = "ui.preset"; key += "_bare"
                isinstance(node, ast.AugAssign)
                and isinstance(node.value, ast.IfExp)
                and isinstance(node.value.orelse, ast.Constant)
            ):
                suffixes.add(str(node.value.orelse.value))
            elif isinstance(node, ast.AugAssign) and isinstance(node.value, ast.Constant):
                suffixes.add(str(node.value.value))
    built = {c + s for c in consts for s in suffixes if "." in c and len(c) < 60}
    return consts, {p for p in prefixes if len(p) >= 4} | built


def test_every_catalog_key_is_used():
    """A key nothing asks for is a sentence nobody reads (and one the reviews keep reading)."""
    consts, prefixes = _package_strings()
    dead = [key for key in EN if key not in consts and not any(key.startswith(p) for p in prefixes)]
    assert dead == []


# strings of the package shaped like a key that are not one: input fields, a file name
NOT_KEYS = {
    "rope.theta",
    "rope.inv_freq",
    "rope.attention_factor",
    "page.js",
    "qk_norm.bias.q",
    "qk_norm.bias.k",
    "attn_temperature.floor_scale",
    "attn_temperature.attn_scale",
    "v_norm.eps",
    "differential.lambda",  # the fields differential's numbers are named by in messages
    "differential.lambda_init",
    "differential.eps",
    "kimi_delta.g",  # the fields Kimi Delta Attention's numbers are named by in messages
    "kimi_delta.beta",
}


def test_every_key_the_package_names_is_in_the_catalogs():
    import re

    consts, _ = _package_strings()
    spaces = {key.split(".")[0] for key in EN}
    named = {
        c
        for c in consts
        if re.fullmatch(r"[a-z_]+\.[a-z0-9_.]*[a-z0-9]", c) and c.split(".")[0] in spaces
    }
    assert sorted(named - set(EN) - NOT_KEYS) == []
