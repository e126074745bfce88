"""Cases of issue 41's fourth hostile corpus that no test named (found by the audit in
notes/wt-polish.md): two loss options at once were accepted silently (exit 0, one of them won)
by explain, quiz and train; now one message, exit 2, naming both."""

from __future__ import annotations

import pytest

from tests.conftest import one_message

ATTEND_GRAD = ["--attend", "1 1 2", "--grad-output", "1 0; 0 1; 1 1"]
TARGET_ATTEND = ["--target", "1 0; 0 1; 1 1", "--attend", "1 1 2"]
CASES = [  # train has no --grad-output: it trains from --target or --attend
    ("explain", ATTEND_GRAD),
    ("explain", TARGET_ATTEND),
    ("quiz", ATTEND_GRAD),
    ("quiz", TARGET_ATTEND),
    ("train", TARGET_ATTEND),
]


@pytest.mark.parametrize(("command", "options"), CASES)
def test_two_loss_options_at_once_are_one_message(cli, command, options):
    extra = ["--backward"] if command == "explain" else []
    result = cli(command, "--preset", "sentence", *extra, *options)
    names = [o for o in options if o.startswith("--")]
    one_message(result, "give one loss option, not several", *names)
