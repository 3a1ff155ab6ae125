"""README.md runs as written: every ```console and ```pycon block, in order, in one fresh directory
on SQLite, and each prints exactly the output the README shows.

Console blocks: `$ ` lines are commands, run with bash through the installed `autonumber`; a
`# exit N` comment on a command is the exit status it must end with (0 otherwise). The lines under
a command are ALL it prints (stdout then stderr), line for line; a command with no lines under it
prints nothing. Lines starting with `# ` are the README's comments, not output.

Pycon blocks (Python sessions): `>>> ` starts a statement, `... ` continues it, the lines under it
are what the interpreter echoes for it, line for line. Each block runs in a Python subprocess of
its own, statement by statement, in order between the console blocks around it.

Placeholders, the only text allowed to differ: `…` inside a line stands for any text (Ids, times,
elapsed seconds); a line that is only `…` stands for any number of lines. Ids (32 hex digits) and
timestamps are masked on both sides. The README shows the day it runs on as `TOUR_DAY`
(2026-11-30): the test writes that day in place of today's in what the commands print. A block may
opt out only with a reason, written just above it: `<!-- readme-test: skip: <why> -->`.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"
TOUR_DAY = date(2026, 11, 30)
SKIP = re.compile(r"<!--\s*readme-test:\s*skip:\s*(?P<reason>.*?)\s*-->\s*$")
EXIT = re.compile(r"#\s*exit (\d+)\b")
COMMENT = re.compile(r"\s{2,}#\s.*$")
MASKS = [
    (re.compile(r"\b\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?([+-]\d{2}:\d{2}|Z)?"), "<TIME>"),
    (re.compile(r"\b[0-9a-f]{32}\b"), "<ID>"),
]
ANY_LINES = "…"
SENTINEL = "\x00readme-step-done\x00"

DRIVER = f"""
import json, sys, traceback
namespace = {{"__name__": "__main__"}}
for source in json.load(sys.stdin):
    try:
        exec(compile(source, "<README.md>", "single"), namespace)
    except Exception as exc:
        print("".join(traceback.format_exception_only(exc)).rstrip())
    sys.stdout.flush()
    print({SENTINEL!r}, flush=True)
"""
"""Runs a pycon block's statements in one interpreter, echoing values as the interactive prompt does."""


@dataclass
class Step:
    """One command or Python statement of the README and what it must print."""

    line: int
    command: str
    exit_code: int = 0
    expected: list[str] = field(default_factory=list)


@dataclass
class Block:
    """One ```console or ```pycon block."""

    line: int
    kind: str
    steps: list[Step]
    skip_reason: str | None = None


def mask(text: str) -> str:
    for pattern, token in MASKS:
        text = pattern.sub(token, text)
    return text


def as_tour_day(text: str, days: set[date]) -> str:
    """`text` with each of `days` written as the README's day, in the forms formats print."""
    for day in days - {TOUR_DAY}:
        for form in ("%Y-%m-%d", "%Y%m%d", "%y%m%d"):
            text = re.sub(rf"(?<!\d){day.strftime(form)}(?!\d)", TOUR_DAY.strftime(form), text)
    return text


def _console_line(block: Block, lines: list[str], i: int) -> int:
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
    return i


def _pycon_line(block: Block, lines: list[str], i: int) -> int:
    raw = lines[i]
    if raw.startswith(">>> "):
        block.steps.append(Step(i + 1, raw[4:]))
    elif raw == "..." or raw.startswith("... "):
        assert block.steps, f"README.md:{i + 1}: continuation before any statement"
        block.steps[-1].command += "\n" + raw[4:]
    elif raw.strip():
        assert block.steps, f"README.md:{i + 1}: output before any statement"
        block.steps[-1].expected.append(raw)
    return i


def blocks(text: str) -> list[Block]:
    """The console and pycon blocks of a README, parsed into steps and expected output."""
    lines = text.splitlines()
    out: list[Block] = []
    i = 0
    while i < len(lines):
        kind = lines[i].strip().removeprefix("```")
        if not lines[i].strip().startswith("```") or kind not in ("console", "pycon"):
            i += 1
            continue
        previous = lines[i - 1] if i else ""
        skip = SKIP.match(previous.strip())
        block = Block(i + 1, kind, [], skip.group("reason") if skip else None)
        i += 1
        while lines[i].strip() != "```":
            i = (_console_line if kind == "console" else _pycon_line)(block, lines, i) + 1
        out.append(block)
        i += 1
    return out


def matcher(expected: str) -> re.Pattern[str]:
    return re.compile(".*?".join(re.escape(part) for part in mask(expected).split("…")))


def _match(expected: list[str], actual: list[str]) -> bool:
    """Whether `actual` is `expected` line for line, a lone `…` line standing for any lines."""
    if not expected:
        return not actual
    head, rest = expected[0], expected[1:]
    if head.strip() == ANY_LINES:
        return any(_match(rest, actual[at:]) for at in range(len(actual) + 1))
    return bool(actual) and matcher(head).fullmatch(actual[0]) is not None and _match(rest, actual[1:])


def check_output(step: Step, output: str, days: set[date] | None = None) -> None:
    """The output is exactly the expected lines (placeholders aside)."""
    actual = [mask(as_tour_day(line.rstrip(), days or set())) for line in output.splitlines()]
    assert _match(step.expected, actual), (
        f"README.md:{step.line}: `{step.command}` printed\n{output}\nthe README shows\n"
        + "\n".join(step.expected)
    )


def test_every_skipped_block_says_why() -> None:
    parsed = blocks(README.read_text(encoding="utf-8"))
    assert len(parsed) >= 5
    for block in parsed:
        if block.skip_reason is not None:
            assert len(block.skip_reason) >= 10, f"README.md:{block.line}: a skip needs a reason"
    assert sum(block.skip_reason is None for block in parsed) >= len(parsed) - 2
    assert sum(block.kind == "pycon" for block in parsed) >= 2


def test_parser_masks_days_and_wildcards() -> None:
    today = date(2027, 1, 2)
    step = Step(1, "x", expected=["id …, day 20261130, n 00000002", "…", "end"])
    check_output(
        step, "id 9eee5426c2c84e71a2932bae5db14196 and more, day 20270102, n 00000002\nend\n", {today}
    )
    check_output(step, "id x, day 20270102, n 00000002\nmore\nlines\nend\n", {today})
    for wrong in (
        "id x, day 20270102, n 00000003\nend\n",  # a number differs
        "id x, day 20270103, n 00000002\nend\n",  # another day than today
        "id x, day 20270102, n 00000002\nend\nextra\n",  # a line the README does not show
        "id x, day 20270102, n 00000002\n",  # a line missing
    ):
        with pytest.raises(AssertionError):
            check_output(step, wrong, {today})
    with pytest.raises(AssertionError):
        check_output(Step(1, "quiet"), "something\n")


def test_pycon_blocks_parse_statements_and_echoes() -> None:
    text = "```pycon\n>>> x = 1\n>>> with open('f') as f:\n...     y = 2\n...\n>>> x\n1\n```\n"
    (block,) = blocks(text)
    assert [(s.command, s.expected) for s in block.steps] == [
        ("x = 1", []),
        ("with open('f') as f:\n    y = 2\n", []),
        ("x", ["1"]),
    ]


def _run_console(step: Step, cwd: Path, env: dict[str, str], days: set[date]) -> None:
    bash = shutil.which("bash")
    assert bash is not None
    done = subprocess.run(
        [bash, "-c", step.command],
        cwd=cwd,
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
    check_output(step, output, days)


def _run_pycon(block: Block, cwd: Path, env: dict[str, str], days: set[date]) -> None:
    done = subprocess.run(
        [sys.executable, "-c", DRIVER],
        input=json.dumps([step.command + "\n" for step in block.steps]),
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, f"README.md:{block.line}: the Python session failed:\n{done.stderr}"
    outputs = done.stdout.split(SENTINEL + "\n")
    assert outputs[-1] == "" and len(outputs) == len(block.steps) + 1, done.stdout
    for step, output in zip(block.steps, outputs, strict=False):
        check_output(step, output, days)


@pytest.mark.slow
def test_readme_tour_runs_as_written(tmp_path: Path) -> None:
    bin_dir = Path(sys.executable).parent
    assert (bin_dir / "autonumber").exists(), "the autonumber command is not installed next to python"
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("AUTONUMBER_") and k not in ("COLUMNS", "LINES")
    }
    env.update(PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}", COLUMNS="1000", NO_COLOR="1")
    days = {datetime.now(UTC).date()}
    ran = 0
    for block in blocks(README.read_text(encoding="utf-8")):
        if block.skip_reason is not None:
            continue
        days.add(datetime.now(UTC).date())  # a run across midnight prints either day
        if block.kind == "pycon":
            _run_pycon(block, tmp_path, env, days)
        else:
            for step in block.steps:
                _run_console(step, tmp_path, env, days)
        ran += len(block.steps)
    assert ran >= 40
