"""Reading a data-spec for `spec apply`: frontmatter (with the rollback guards' keys) plus either the
setup sections of the canonical seed spec or an ordered `## Operations` list of typed operations.

Operations are YAML lists in fenced ```yaml blocks under `## Operations`; each item is an operation
name or a mapping `{op: name, ...arguments}`. SQL blocks are never executed: a fenced block of any
other language under `## Operations` is an error, so a reader cannot mistake illustrative SQL for
something the applier runs.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from markdown_it import MarkdownIt

from autonumber.errors import SpecError
from autonumber.setup.dataspec import API_VERSION, SECTIONS, DataSpec, parse_spec

OPERATIONS_SECTION = "Operations"
KNOWN_KEYS = frozenset(
    {
        "apiVersion",
        "id",
        "scope",
        "status",
        "tables",
        "backup",
        "depends_on",
        "incident_ticket",
        "approvals",
    }
)
_STATUS_LINE = re.compile(r"^status:.*$", re.MULTILINE)


@dataclass(frozen=True)
class Approval:
    """One approver named in the frontmatter."""

    name: str
    role: str


@dataclass(frozen=True)
class Operation:
    """One typed operation of a spec, in the order written."""

    name: str
    args: Mapping[str, Any]
    line: int


@dataclass(frozen=True)
class SpecDocument:
    """A data-spec as the applier sees it."""

    source: str
    id: str
    status: str
    scope: str
    digest: str
    """blake2b of the text without its `status:` line: the same spec across its status flips."""
    incident_ticket: object = None
    approvals: object = None
    operations: tuple[Operation, ...] = ()
    setup: DataSpec | None = None
    raw: Mapping[str, Any] = field(default_factory=dict)


def read_document(path: str | Path) -> SpecDocument:
    """Read a data-spec file; SpecError naming the file (and line) on any problem."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise SpecError(f"cannot read data-spec {p}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise SpecError(
            f"data-spec {p} is not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at offset {exc.start})"
        ) from None
    return parse_document(text, str(path))


def spec_digest(text: str) -> str:
    """The digest that ties a staging apply to the production apply of the same spec."""
    return hashlib.blake2b(_STATUS_LINE.sub("status:", text, count=1).encode(), digest_size=16).hexdigest()


def parse_document(text: str, source: str) -> SpecDocument:
    """Parse a data-spec's text."""
    data, body, offset = _frontmatter(text, source)
    tokens = MarkdownIt("commonmark").enable("table").parse(body)
    headings = {
        tokens[i + 1].content.strip()
        for i, t in enumerate(tokens)
        if t.type == "heading_open" and t.tag == "h2"
    }
    operations = _operations(tokens, offset, source) if OPERATIONS_SECTION in headings else ()
    setup: DataSpec | None = None
    if headings & set(SECTIONS):
        if OPERATIONS_SECTION in headings:
            raise SpecError(
                f"{source}: a data-spec has either the setup sections "
                f"({', '.join(SECTIONS)}) or '## Operations', not both"
            )
        setup = parse_spec(text, source)
    elif not operations:
        raise SpecError(
            f"{source}: nothing to apply: no '## Operations' list and no setup sections "
            f"({', '.join(SECTIONS)})"
        )
    return SpecDocument(
        source=source,
        id=_text(data, "id", source),
        status=_text(data, "status", source),
        scope=_text(data, "scope", source),
        digest=spec_digest(text),
        incident_ticket=data.get("incident_ticket"),
        approvals=data.get("approvals"),
        operations=operations,
        setup=setup,
        raw=data,
    )


def _frontmatter(text: str, source: str) -> tuple[dict[str, Any], str, int]:
    lines = text.split("\n")
    if not lines or lines[0].strip() != "---":
        raise SpecError(f"{source} line 1: must start with a YAML frontmatter block between '---' lines")
    end = next((i for i in range(1, len(lines)) if lines[i].strip() == "---"), None)
    if end is None:
        raise SpecError(f"{source} line 1: the frontmatter block is not closed by a '---' line")
    try:
        data = yaml.safe_load("\n".join(lines[1:end]))
    except yaml.YAMLError as exc:
        raise SpecError(f"{source}: frontmatter is not valid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise SpecError(f"{source}: frontmatter must be a mapping")
    unknown = sorted(set(data) - KNOWN_KEYS)
    if unknown:
        raise SpecError(f"{source}: unknown frontmatter key(s) {', '.join(unknown)}")
    if data.get("apiVersion") != API_VERSION:
        raise SpecError(f"{source}: apiVersion must be {API_VERSION!r}, got {data.get('apiVersion')!r}")
    return data, "\n".join(lines[end + 1 :]), end + 1


def _text(data: Mapping[str, Any], key: str, source: str) -> str:
    value = data.get(key)
    if not isinstance(value, str) or not value.strip():
        raise SpecError(f"{source}: frontmatter key {key!r} must be a non-empty string, got {value!r}")
    return value.strip()


def _operations(tokens: list[Any], offset: int, source: str) -> tuple[Operation, ...]:
    out: list[Operation] = []
    inside = False
    for i, tok in enumerate(tokens):
        if tok.type == "heading_open" and tok.tag == "h2":
            inside = tokens[i + 1].content.strip() == OPERATIONS_SECTION
        elif inside and tok.type in ("fence", "code_block"):
            line = offset + (tok.map[0] if tok.map else 0) + 1
            lang = tok.info.strip().split(" ")[0].lower() if tok.type == "fence" else ""
            if lang != "yaml":
                raise SpecError(
                    f"{source} line {line}: '## Operations' holds only ```yaml blocks of typed "
                    f"operations; a {lang or 'plain'} block is not executed — remove it or "
                    "move it to another section"
                )
            out.extend(_items(tok.content, line, source))
    if not out:
        raise SpecError(f"{source}: '## Operations' lists no operation (expected a ```yaml list)")
    return tuple(out)


def _items(content: str, line: int, source: str) -> list[Operation]:
    try:
        value = yaml.safe_load(content)
    except yaml.YAMLError as exc:
        raise SpecError(f"{source} line {line}: operations block is not valid YAML: {exc}") from None
    if not isinstance(value, list):
        raise SpecError(f"{source} line {line}: an operations block must be a YAML list")
    ops: list[Operation] = []
    for item in value:
        if isinstance(item, str):
            ops.append(Operation(item, {}, line))
        elif isinstance(item, dict) and isinstance(item.get("op"), str):
            args = {k: v for k, v in item.items() if k != "op"}
            ops.append(Operation(item["op"], args, line))
        else:
            raise SpecError(f"{source} line {line}: operation {item!r} must be a name or a mapping with 'op'")
    return ops
