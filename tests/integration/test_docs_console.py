"""The console examples of docs/formats.md, docs/cross-record.md and docs/changing-rules.md that are
marked `<!-- docs-test: run -->` run as written: per document, in order, in one fresh directory on
SQLite, with the README test's rules (`# exit N`, `…` for any text, dates, times and Ids masked)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from test_readme import Block, blocks, check_output

DOCS = Path(__file__).resolve().parents[2] / "docs"
MARK = "<!-- docs-test: run -->"
DOCUMENTS = ("formats.md", "cross-record.md", "changing-rules.md")


def marked(text: str) -> list[Block]:
    """The console blocks written right under the run mark."""
    lines = text.splitlines()
    return [b for b in blocks(text) if b.line >= 2 and lines[b.line - 2].strip() == MARK]


@pytest.mark.slow  # a CLI subprocess per command (changing-rules.md: about 30): a whole-product run
@pytest.mark.parametrize("name", DOCUMENTS)
def test_marked_console_blocks_run_as_written(name: str, tmp_path: Path) -> None:
    text = (DOCS / name).read_text(encoding="utf-8")
    found = marked(text)
    assert found, f"docs/{name} has no console block marked {MARK}"
    assert text.count(MARK) == len(found), f"docs/{name}: a run mark that is not right above a console block"
    bin_dir = Path(sys.executable).parent
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("AUTONUMBER_") and k not in ("COLUMNS", "LINES")
    }
    env.update(PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}", COLUMNS="1000", NO_COLOR="1")
    bash = shutil.which("bash")
    assert bash is not None
    for block in found:
        for step in block.steps:
            done = subprocess.run(
                [bash, "-c", step.command], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600
            )
            output = done.stdout + done.stderr
            assert done.returncode == step.exit_code, (
                f"docs/{name}:{step.line}: `{step.command}` exited {done.returncode}, "
                f"the document says {step.exit_code}:\n{output}"
            )
            check_output(step, output)
