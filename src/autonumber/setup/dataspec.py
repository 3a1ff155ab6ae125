"""The canonical data-spec (docs/setup.md): YAML frontmatter plus markdown tables, parsed and cross-checked.

Sections: `## Objects` (object | table | fields), `## Autonumber Fields` (object | field | format |
start | scope | token refs | length | notes) and `## RecordType Codes` (object | DeveloperName |
RecordTypeCode). Every error names the file, the section and the line.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from markdown_it import MarkdownIt
from markdown_it.token import Token

from autonumber.db.tables import LEGACY_TABLES
from autonumber.errors import AutonumberError, SpecError
from autonumber.format import parse_format
from autonumber.format.validate import check_seeded_taxonomy, date_source_of
from autonumber.identifiers import check_api_name
from autonumber.rules.store import RuleSpec, check_enums

from .pack import FieldSpec, ObjectSpec, RecordTypeSpec
from .paths import SPEC_PATH

API_VERSION = "data-spec/v1"
SECTIONS = ("Objects", "Autonumber Fields", "RecordType Codes")
RECORD_TYPE_OBJECT = "RecordType"
_FIELD = re.compile(r"^(?P<name>[^:]+):(?P<kind>text|ref|autonumber)\((?P<arg>[^)]*)\)$")


@dataclass(frozen=True)
class SpecMeta:
    """The data-spec's frontmatter."""

    api_version: str
    id: str
    scope: str
    status: str
    tables: tuple[str, ...]
    backup: tuple[str, ...]
    depends_on: tuple[str, ...]


@dataclass(frozen=True)
class DataSpec:
    """Everything setup apply needs: objects, rules and record-type codes, plus the frontmatter."""

    meta: SpecMeta
    objects: tuple[ObjectSpec, ...]
    rules: tuple[RuleSpec, ...]
    record_types: tuple[RecordTypeSpec, ...]
    source: str = SPEC_PATH

    def rule(self, name: str) -> RuleSpec:
        """The rule of `Object.Field` (KeyError when there is none)."""
        for rule in self.rules:
            if rule.name == name:
                return rule
        raise KeyError(name)


@dataclass(frozen=True)
class _Row:
    line: int
    cells: dict[str, str]


class _Where:
    """Error context: file, section, line."""

    def __init__(self, source: str) -> None:
        self.source = source

    def error(self, message: str, section: str | None = None, line: int | None = None) -> SpecError:
        where = self.source
        if section:
            where += f" section '## {section}'"
        if line is not None:
            where += f" line {line}"
        return SpecError(f"{where}: {message}")


def parse_spec_file(path: str | Path) -> DataSpec:
    """Read and check a data-spec file; SpecError naming the place on any problem."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise SpecError(f"cannot read data-spec {p}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise SpecError(
            f"data-spec {p} is not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at offset {exc.start})"
        ) from None
    return parse_spec(text, str(path))


def parse_spec(text: str, source: str = SPEC_PATH) -> DataSpec:
    """Parse a data-spec's text (frontmatter + markdown) into a checked DataSpec."""
    where = _Where(source)
    meta, body, offset = _frontmatter(text, where)
    sections = _tables(body, offset, where)
    objects = tuple(_object(row, where) for row in sections["Objects"])
    rules = tuple(_rule(row, where) for row in sections["Autonumber Fields"])
    record_types = tuple(_record_type(row, where) for row in sections["RecordType Codes"])
    spec = DataSpec(meta, objects, rules, record_types, source)
    check_spec(
        spec,
        where,
        {r.cells["object"] + "." + r.cells["field"]: r.line for r in sections["Autonumber Fields"]},
    )
    return spec


def _frontmatter(text: str, where: _Where) -> tuple[SpecMeta, str, int]:
    lines = text.split("\n")
    if not lines or lines[0].strip() != "---":
        raise where.error("must start with a YAML frontmatter block between '---' lines", line=1)
    try:
        end = next(i for i in range(1, len(lines)) if lines[i].strip() == "---")
    except StopIteration:
        raise where.error("the frontmatter block is not closed by a '---' line", line=1) from None
    try:
        data = yaml.safe_load("\n".join(lines[1:end]))
    except yaml.YAMLError as exc:
        raise where.error(f"frontmatter is not valid YAML: {exc}", line=1) from None
    if not isinstance(data, dict):
        raise where.error("frontmatter must be a mapping", line=1)
    return _meta(data, where), "\n".join(lines[end + 1 :]), end + 1


def _meta(data: Mapping[str, Any], where: _Where) -> SpecMeta:
    def text(key: str) -> str:
        value = data.get(key)
        if not isinstance(value, str) or not value:
            raise where.error(f"frontmatter key {key!r} must be a non-empty string, got {value!r}")
        return value

    def names(key: str) -> tuple[str, ...]:
        value = data.get(key)
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise where.error(f"frontmatter key {key!r} must be a list of names, got {value!r}")
        return tuple(value)

    unknown = set(data) - {"apiVersion", "id", "scope", "status", "tables", "backup", "depends_on"}
    if unknown:
        raise where.error(f"unknown frontmatter keys {sorted(unknown)}")
    meta = SpecMeta(
        text("apiVersion"),
        text("id"),
        text("scope"),
        text("status"),
        names("tables"),
        names("backup"),
        names("depends_on"),
    )
    if meta.api_version != API_VERSION:
        raise where.error(f"apiVersion must be {API_VERSION!r}, got {meta.api_version!r}")
    return meta


_COLUMNS = {
    "Objects": (("object", "table", "fields"), ()),
    "Autonumber Fields": (
        ("object", "field", "format", "start", "scope", "token refs", "length"),
        (
            "notes",
            "date source",
            "on change",
            "numbering",
            "time zone",
            "allocation",
            "fiscal year start",
            "shared counter",
        ),
    ),
    "RecordType Codes": (("object", "DeveloperName", "RecordTypeCode"), ()),
}


def _tables(body: str, offset: int, where: _Where) -> dict[str, list[_Row]]:
    """The first table under each `## Section` heading, as rows of named cells."""
    tokens = MarkdownIt("commonmark").enable("table").parse(body)
    found: dict[str, list[_Row]] = {}
    section: str | None = None
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if tok.type == "heading_open" and tok.tag == "h2":
            section = tokens[i + 1].content.strip()
        elif tok.type == "table_open" and section in _COLUMNS and section not in found:
            rows, i = _read_table(tokens, i, offset, section, where)
            found[section] = rows
            continue
        i += 1
    for name in SECTIONS:
        if name not in found:
            raise where.error(f"missing section '## {name}' with a table")
    return found


def _read_table(
    tokens: Sequence[Token], i: int, offset: int, section: str, where: _Where
) -> tuple[list[_Row], int]:
    header: list[str] = []
    rows: list[_Row] = []
    current: list[str] | None = None
    line = 0
    while tokens[i].type != "table_close":
        tok = tokens[i]
        if tok.type == "tr_open":
            current = []
            line = offset + (tok.map[0] if tok.map else 0) + 1
        elif tok.type == "inline" and current is not None:
            current.append(_cell_text(tok, section, line, where))
        elif tok.type == "tr_close" and current is not None:
            if not header:
                header = current
                _check_header(header, section, line, where)
            else:
                rows.append(_Row(line, dict(zip(header, current, strict=True))))
            current = None
        i += 1
    return rows, i + 1


def _cell_text(tok: Token, section: str, line: int, where: _Where) -> str:
    parts: list[str] = []
    for child in tok.children or ():
        if child.type not in ("text", "code_inline"):
            raise where.error(
                f"cell {tok.content!r} uses markdown formatting ({child.type}); write values in backticks",
                section,
                line,
            )
        parts.append(child.content)
    return "".join(parts).strip()


def _check_header(header: Sequence[str], section: str, line: int, where: _Where) -> None:
    required, optional = _COLUMNS[section]
    missing = [c for c in required if c not in header]
    unknown = [c for c in header if c not in required and c not in optional]
    if missing or unknown or len(set(header)) != len(header):
        raise where.error(
            f"table columns must be {', '.join(required)} (optional: "
            f"{', '.join(optional) or 'none'}); got {', '.join(header)}",
            section,
            line,
        )


def _api_name(value: str, what: str, section: str, line: int, where: _Where) -> str:
    try:
        return check_api_name(value, what)
    except AutonumberError as exc:
        raise where.error(str(exc), section, line) from None


def _object(row: _Row, where: _Where) -> ObjectSpec:
    sec = "Objects"
    name = _api_name(row.cells["object"], "object name", sec, row.line, where)
    table = _api_name(row.cells["table"] or name, "table name", sec, row.line, where)
    fields = tuple(
        _field(part.strip(), sec, row.line, where) for part in row.cells["fields"].split(",") if part.strip()
    )
    if not fields:
        raise where.error(f"object {name} declares no fields", sec, row.line)
    return ObjectSpec(name, fields, None if table == name else table)


def _field(text: str, section: str, line: int, where: _Where) -> FieldSpec:
    m = _FIELD.match(text)
    if m is None:
        raise where.error(
            f"field {text!r} must look like Name:text(N), Name:ref(Object) or Name:autonumber(N)",
            section,
            line,
        )
    name = _api_name(m["name"].strip(), "field name", section, line, where)
    if m["kind"] == "ref":
        target = _api_name(m["arg"].strip(), "lookup target", section, line, where)
        return FieldSpec(name, "reference", target, 64)
    length = _int(m["arg"], f"length of {name}", section, line, where)
    if not 1 <= length <= 255:
        raise where.error(f"length of {name} must be 1..255, got {length}", section, line)
    return FieldSpec(name, m["kind"], None, length)


def _int(text: str, what: str, section: str, line: int, where: _Where) -> int:
    try:
        return int(text.strip())
    except ValueError:
        raise where.error(f"{what} must be an integer, got {text!r}", section, line) from None


def _rule(row: _Row, where: _Where) -> RuleSpec:
    sec, c = "Autonumber Fields", row.cells
    obj = _api_name(c["object"], "object name", sec, row.line, where)
    fld = _api_name(c["field"], "field name", sec, row.line, where)
    date_src, date_field = date_source_of(c.get("date source") or "clock")
    spec = RuleSpec(
        obj,
        fld,
        c["format"],
        scope=c["scope"] or "global",
        start=_int(c["start"] or "1", "start", sec, row.line, where),
        date_src=date_src,
        date_field=date_field,
        on_change=c.get("on change") or "keep_existing",
        overrides=_overrides(c["token refs"], sec, row.line, where),
        length=_int(c["length"], "length", sec, row.line, where),
        numbering=c.get("numbering") or "standard",
        time_zone=c.get("time zone") or "UTC",
        allocation=c.get("allocation") or "single",
        fiscal_year_start=_int(c.get("fiscal year start") or "1", "fiscal year start", sec, row.line, where),
        shared_counter=c.get("shared counter") or None,
    )
    try:
        check_enums(spec)
        check_seeded_taxonomy(parse_format(spec.format))
    except AutonumberError as exc:
        raise where.error(str(exc), sec, row.line) from None
    return spec


def _overrides(text: str, section: str, line: int, where: _Where) -> tuple[Mapping[str, Any], ...]:
    if not text:
        return ()
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise where.error(f"token refs is not valid JSON: {exc}", section, line) from None
    if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
        raise where.error("token refs must be a JSON list of objects", section, line)
    return tuple(value)


def _record_type(row: _Row, where: _Where) -> RecordTypeSpec:
    sec, c = "RecordType Codes", row.cells
    obj = _api_name(c["object"], "object name", sec, row.line, where)
    code = c["RecordTypeCode"]
    if not c["DeveloperName"] or not 1 <= len(code) <= 16:
        raise where.error(
            f"DeveloperName must be set and RecordTypeCode 1..16 characters (VARCHAR(16)), got {code!r}",
            sec,
            row.line,
        )
    return RecordTypeSpec(obj, c["DeveloperName"], code)


def check_spec(spec: DataSpec, where: _Where | None = None, lines: Mapping[str, int] | None = None) -> None:
    """Cross-check sections: unique names, lookups resolve, every autonumber column has one rule
    whose length matches, the frontmatter lists every table and backs up only legacy tables."""
    w = where or _Where(spec.source)
    at = lines or {}
    columns = _columns(spec, w)
    seen: set[str] = set()
    for rule in spec.rules:
        line = at.get(rule.name)
        if rule.name in seen:
            raise w.error(f"{rule.name} has two rules", "Autonumber Fields", line)
        seen.add(rule.name)
        declared = columns.get(rule.name)
        if declared is None or declared.type != "autonumber":
            raise w.error(
                f"{rule.name} is not declared as an autonumber(N) column under Objects",
                "Autonumber Fields",
                line,
            )
        if rule.length != declared.max_length:
            raise w.error(
                f"{rule.name}: length {rule.length} differs from the column length "
                f"{declared.max_length} under Objects",
                "Autonumber Fields",
                line,
            )
    orphans = sorted(n for n, f in columns.items() if f.type == "autonumber" and n not in seen)
    if orphans:
        raise w.error(f"autonumber columns without a rule: {', '.join(orphans)}", "Objects")
    _check_record_types(spec, columns, w)
    _check_tables(spec, w)


def _columns(spec: DataSpec, w: _Where) -> dict[str, FieldSpec]:
    names = {o.name for o in spec.objects}
    if len(names) != len(spec.objects):
        raise w.error("an object is declared twice", "Objects")
    out: dict[str, FieldSpec] = {}
    for obj in spec.objects:
        for f in obj.fields:
            key = f"{obj.name}.{f.name}"
            if key in out:
                raise w.error(f"field {key} is declared twice", "Objects")
            if f.reference_to is not None and f.reference_to not in names | {RECORD_TYPE_OBJECT}:
                raise w.error(f"{key} looks up {f.reference_to}, which is not an object", "Objects")
            out[key] = f
    return out


def _check_record_types(spec: DataSpec, columns: Mapping[str, FieldSpec], w: _Where) -> None:
    seen: set[tuple[str, str]] = set()
    for rt in spec.record_types:
        if f"{rt.object}.RecordTypeId" not in columns:
            raise w.error(
                f"record type {rt.developer_name!r}: {rt.object} has no RecordTypeId lookup under Objects",
                "RecordType Codes",
            )
        if (rt.object, rt.developer_name) in seen:
            raise w.error(f"record type {rt.object}.{rt.developer_name} is listed twice", "RecordType Codes")
        seen.add((rt.object, rt.developer_name))


def _check_tables(spec: DataSpec, w: _Where) -> None:
    listed = set(spec.meta.tables)
    tables = {o.name: o.table_name for o in spec.objects}
    missing = sorted({tables[r.object] for r in spec.rules} - listed)
    if missing:
        raise w.error(
            f"frontmatter 'tables' must list every object table with an autonumber "
            f"column; missing: {', '.join(missing)}"
        )
    legacy = {t.name for t in LEGACY_TABLES}
    odd = sorted(set(spec.meta.backup) - legacy)
    if odd:
        raise w.error(
            f"frontmatter 'backup' may only name the legacy tables "
            f"({', '.join(sorted(legacy))}); got {', '.join(odd)}"
        )
