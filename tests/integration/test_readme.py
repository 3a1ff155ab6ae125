"""README.md runs as written: every ```console block, in order, in one fresh directory on SQLite.

`$ ` lines are commands (run with bash, through the installed `autonumber`); a `# exit N` comment on
a command is the exit status it must end with (0 otherwise). The lines under a command are output
it must print, in that order (other lines may come between); `…` stands for any text; dates, times
and Ids are masked on both sides. Lines starting with `# ` are the README's comments. A block may
opt out only with a reason, written just above it: `<!-- readme-test: skip: <why> -->`.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"
SKIP = re.compile(r"<!--\s*readme-test:\s*skip:\s*(?P<reason>.*?)\s*-->\s*$")
EXIT = re.compile(r"#\s*exit (\d+)\b")
COMMENT = re.compile(r"\s{2,}#\s.*$")
MASKS = [
    (re.compile(r"\b\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?([+-]\d{2}:\d{2}|Z)?"), "<TIME>"),
    (re.compile(r"\b[0-9a-f]{32}\b"), "<ID>"),
    (re.compile(r"(?<!\d)20\d\d(0[1-9]|1[0-2])(0[1-9]|[12]\d|3[01])(?!\d)"), "<DATE>"),
]


@dataclass
class Step:
    """One command of the README and what it must print."""

    line: int
    command: str
    exit_code: int = 0
    expected: list[str] = field(default_factory=list)


@dataclass
class Block:
    """One ```console block."""

    line: int
    steps: list[Step]
    skip_reason: str | None = None


def mask(text: str) -> str:
    for pattern, token in MASKS:
        text = pattern.sub(token, text)
    return text


def blocks(text: str) -> list[Block]:
    """The console blocks of a README, parsed into commands and expected output."""
    lines = text.splitlines()
    out: list[Block] = []
    i = 0
    while i < len(lines):
        if lines[i].strip() != "```console":
            i += 1
            continue
        previous = lines[i - 1] if i else ""
        skip = SKIP.match(previous.strip())
        block = Block(i + 1, [], skip.group("reason") if skip else None)
        i += 1
        while lines[i].strip() != "```":
            raw = lines[i]
            if raw.startswith("$ "):
                command = raw[2:]
                while command.endswith("\\"):
                    i += 1
                    command = command[:-1] + " " + lines[i].strip()
                found = EXIT.search(command)
                block.steps.append(Step(i + 1, command, int(found.group(1)) if found else 0))
            elif not raw.startswith("# ") and raw.strip():
                assert block.steps, f"README.md:{i + 1}: output before any command"
                block.steps[-1].expected.append(COMMENT.sub("", raw))
            i += 1
        out.append(block)
        i += 1
    return out


def matcher(expected: str) -> re.Pattern[str]:
    return re.compile(".*?".join(re.escape(part) for part in mask(expected).split("…")))


def check_output(step: Step, output: str) -> None:
    """Every expected line appears, in order, among the output lines."""
    actual = [mask(line.rstrip()) for line in output.splitlines()]
    at = 0
    for want in step.expected:
        pattern = matcher(want)
        while at < len(actual) and not pattern.fullmatch(actual[at]):
            at += 1
        assert at < len(actual), (
            f"README.md:{step.line}: `{step.command}` did not print\n  {want}\nit printed:\n{output}"
        )
        at += 1


def test_every_skipped_block_says_why() -> None:
    parsed = blocks(README.read_text(encoding="utf-8"))
    assert len(parsed) >= 5
    for block in parsed:
        if block.skip_reason is not None:
            assert len(block.skip_reason) >= 10, f"README.md:{block.line}: a skip needs a reason"
    assert sum(block.skip_reason is None for block in parsed) >= len(parsed) - 2


def test_parser_masks_and_wildcards() -> None:
    step = Step(1, "x", expected=["id …, day 20260417, n 00000002"])
    check_output(step, "noise\nid 9eee5426c2c84e71a2932bae5db14196 and more, day 20261201, n 00000002\n")
    with pytest.raises(AssertionError):
        check_output(step, "id x, day 20261201, n 00000003\n")


@pytest.mark.slow
def test_readme_console_blocks_run_as_written(tmp_path: Path) -> None:
    bin_dir = Path(sys.executable).parent
    assert (bin_dir / "autonumber").exists(), "the autonumber command is not installed next to python"
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("AUTONUMBER_") and k not in ("COLUMNS", "LINES")
    }
    env.update(PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}", COLUMNS="1000", NO_COLOR="1")
    bash = shutil.which("bash")
    assert bash is not None
    ran = 0
    for block in blocks(README.read_text(encoding="utf-8")):
        if block.skip_reason is not None:
            continue
        for step in block.steps:
            done = subprocess.run(
                [bash, "-c", step.command],
                cwd=tmp_path,
                env=env,
                capture_output=True,
                text=True,
                timeout=600,
                check=False,
            )
            output = done.stdout + done.stderr
            assert done.returncode == step.exit_code, (
                f"README.md:{step.line}: `{step.command}` exited {done.returncode}, "
                f"the README says {step.exit_code}:\n{output}"
            )
            check_output(step, output)
            ran += 1
    assert ran >= 15
