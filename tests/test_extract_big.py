"""Issue 22, item 5: a large model's layer on this machine. A MODEL that cannot be a folder
here is one message at once, without the network; `--output layer.npz` writes the problem as
arrays that `qkvcalc explain` reads back to the same numbers; the JSON writer's numbers read
back bit-exact; `--dtype float64` converts only the layers it runs (each when it runs), from a
checkpoint stored in float32, and still reproduces transformers' float64 attention to 1e-8."""

from __future__ import annotations

import socket

from tests.conftest import ROOT, run_qkvcalc


def one_message(result, *fragments: str) -> None:
    assert result.returncode == 2, (result.returncode, result.stderr)
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])


def test_a_name_that_can_only_be_a_folder_fails_at_once_without_the_network(tmp_path):
    """A typo'd folder (an absolute or ./ path, or one under a folder that is here: tests/ is
    one, beside the process's working directory) is said at once: the hub, pointed at a socket
    this test listens on, is never asked."""
    assert (ROOT / "tests").is_dir()
    with socket.socket() as hub:
        hub.bind(("127.0.0.1", 0))
        hub.listen()
        hub.settimeout(0.5)
        env = {"HF_ENDPOINT": f"http://127.0.0.1:{hub.getsockname()[1]}"}
        for name in (str(tmp_path / "my-mdoel"), "./my-mdoel", "tests/my-mdoel", "a/b/c"):
            for command in ("extract", "heads"):
                argv = [command, name, "--ids", "1"] + (["--layer", "0"] * (command == "extract"))
                one_message(run_qkvcalc(*argv, env=env, timeout=60), name, "no such folder")
        try:
            hub.accept()[0].close()
        except TimeoutError:
            pass
        else:
            raise AssertionError("a name that can only be a folder asked the hub")
