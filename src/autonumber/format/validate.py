"""Metadata rules 4-10 (docs/formats.md) against a CatalogView, and the token refs they produce."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from autonumber.errors import FormatError

from .catalog_view import CatalogView, FieldInfo
from .model import Format
from .parser import parse_format
from .scope import validate_scope
from .token_refs import ChainStep, TokenRef, TokenRefError, describe_chain
from .tokens import DATE_FIELD_TYPES, RECORD_TYPE_FK, TAXONOMY_OBJECT, CrossRef, quote_format

MAX_CHAIN_DEPTH = 3

RECORD_TYPE_DEFAULT_LENGTHS = {"RecordTypeCode": 16}
"""Used when the catalog gives no MaxLength for a RecordType column (VARCHAR(16))."""

_OVERRIDE_KEYS = {"tokenLiteral", "targetObject", "targetField", "fkChains", "readStrategy", "directField"}


def _err(rule: int, fmt: Format, what: str) -> FormatError:
    return FormatError(rule, f"format {quote_format(fmt.source)}: {what}", format=fmt.source)


SEEDED_TAXONOMY_FIELD = "RecordTypeCode"


def check_seeded_taxonomy(fmt: Format) -> None:
    """Rule 10, seed-time policy: a format seeded from the data-spec reads record types only
    through `{RecordType.RecordTypeCode}` (the one column the seed fills, docs/setup.md)."""
    for ref in fmt.cross_refs:
        if ref.taxonomy and ref.field != SEEDED_TAXONOMY_FIELD:
            raise _err(
                10,
                fmt,
                f"token {ref.literal}: seeded formats may use only "
                f"{{RecordType.{SEEDED_TAXONOMY_FIELD}}} as record-type token",
            )


def _overrides(fmt: Format, overrides: Sequence[Mapping[str, Any]] | None) -> dict[str, dict[str, Any]]:
    """Index overrides by tokenLiteral; each must name a token of this format and known keys."""
    out: dict[str, dict[str, Any]] = {}
    literals = {r.literal for r in fmt.cross_refs}
    for ov in overrides or ():
        lit = ov.get("tokenLiteral")
        if lit not in literals:
            raise _err(
                4,
                fmt,
                f"token-ref override names {lit!r}, which is not a cross-record "
                f"token of this format (tokens: {', '.join(sorted(literals)) or 'none'})",
            )
        unknown = set(ov) - _OVERRIDE_KEYS
        if unknown:
            raise _err(
                4,
                fmt,
                f"token-ref override for {lit} has unknown keys "
                f"{sorted(unknown)}; allowed: {sorted(_OVERRIDE_KEYS)}",
            )
        out[str(lit)] = dict(ov)
    return out


def _base_chains(
    fmt: Format, ref: CrossRef, source: str, catalog: CatalogView, explicit: bool
) -> list[list[dict[str, str]]]:
    """The default chain for a token: RecordTypeId for taxonomy, else the one FK to its object."""
    if ref.taxonomy:
        if catalog.get_field(source, RECORD_TYPE_FK) is None:
            raise _err(
                7,
                fmt,
                f"token {ref.literal} needs a {RECORD_TYPE_FK} field, and {source} "
                "has none; remove the token or add record types to the object",
            )
        step = {"fk": RECORD_TYPE_FK, "targetObject": TAXONOMY_OBJECT, "targetField": ref.field}
        return [[step]]
    if ref.object == source:
        raise _err(
            8,
            fmt,
            f"token {ref.literal} reads the source object {source} itself; "
            "cross-record tokens must name another object (self-reference)",
        )
    if catalog.get_object(ref.object) is None:
        raise _err(4, fmt, f"token {ref.literal}: object {ref.object} is not in _System_Object")
    if ref.path:
        return [] if explicit else [_path_chain(fmt, ref, source, catalog)]
    if catalog.get_field(ref.object, ref.field) is None:
        raise _err(
            4, fmt, f"token {ref.literal}: field {ref.field} is not a field of {ref.object} in _System_Field"
        )
    fks = [f.name for f in catalog.fields_of(source) if f.reference_to == ref.object]
    if explicit:
        return []
    if not fks:
        raise _err(
            4,
            fmt,
            f"token {ref.literal}: {source} has no lookup field to {ref.object}, "
            "so there is no FK path; add one or declare fkChains in a token-ref override",
        )
    if len(fks) > 1:
        raise _err(
            4,
            fmt,
            f"token {ref.literal}: {source} has {len(fks)} lookups to {ref.object} "
            f"({', '.join(fks)}); declare which to follow with an explicit fkChains "
            "override",
        )
    return [[{"fk": fks[0], "targetObject": ref.object, "targetField": ref.field}]]


def _one_lookup(fmt: Format, ref: CrossRef, current: str, target: str, catalog: CatalogView) -> str:
    """The one lookup of `current` to `target` a nested-dot token follows (rule 4 otherwise)."""
    fks = [f.name for f in catalog.fields_of(current) if f.reference_to == target]
    if len(fks) != 1:
        found = f"{len(fks)} lookups ({', '.join(fks)})" if fks else "no lookup"
        raise _err(
            4,
            fmt,
            f"token {ref.literal}: {current} has {found} to {target}; the nested-dot form needs "
            "exactly one at each step, else declare fkChains in a token-ref override",
        )
    return fks[0]


def _path_chain(fmt: Format, ref: CrossRef, source: str, catalog: CatalogView) -> list[dict[str, str]]:
    """The chain `{A.B.Field}` stands for: source's lookup to A, A's lookup to B, then B.Field."""
    objects = [*ref.path, ref.object]
    for name in ref.path:
        if catalog.get_object(name) is None:
            raise _err(4, fmt, f"token {ref.literal}: object {name} is not in _System_Object")
    steps: list[dict[str, str]] = []
    current = source
    for target in objects:
        fk = _one_lookup(fmt, ref, current, target, catalog)
        if steps:
            steps[-1]["targetField"] = fk
        steps.append({"fk": fk, "targetObject": target, "targetField": ref.field})
        current = target
    return steps


def _terminal(fmt: Format, obj: str, name: str, catalog: CatalogView, chain: str, what: str) -> None:
    """Rules 4/6/8/10: the field a chain (or directField) ends on is a stored scalar column."""
    if obj == TAXONOMY_OBJECT:
        if name not in catalog.record_type_columns():
            raise _err(
                10,
                fmt,
                f"{what} reads RecordType.{name} ({chain}), but _System_RecordType "
                f"has no column {name}; columns: "
                f"{', '.join(sorted(catalog.record_type_columns()))}",
            )
        return
    fld = catalog.get_field(obj, name)
    if fld is None:
        raise _err(4, fmt, f"{what} ({chain}): {obj} has no field {name}")
    if fld.is_formula:
        raise _err(
            6, fmt, f"{what} ({chain}): {obj}.{name} is a formula field; tokens must read stored columns"
        )
    if fld.is_reference:
        raise _err(
            8,
            fmt,
            f"{what} ({chain}): {obj}.{name} is a lookup, not a scalar; the last "
            "step must read a stored non-FK column",
        )


def _check_chain(
    fmt: Format, ref: TokenRef, source: str, chain: list[ChainStep], catalog: CatalogView
) -> None:
    """Rules 4, 8 (depth, cycles, broken links, non-scalar ends) for one fkChains entry."""
    desc = f"chain [{describe_chain(chain)}]"
    if not chain or len(chain) > MAX_CHAIN_DEPTH:
        raise _err(
            8,
            fmt,
            f"token {ref.tokenLiteral}: {desc} has depth {len(chain)}; "
            f"chains have 1..{MAX_CHAIN_DEPTH} steps",
        )
    objects = [source, *(s.targetObject for s in chain)]
    if len(set(objects)) != len(objects):
        raise _err(
            8,
            fmt,
            f"token {ref.tokenLiteral}: {desc} visits an object twice "
            f"({' -> '.join(objects)}): self-reference or cycle",
        )
    current = source
    for i, step in enumerate(chain):
        fk = catalog.get_field(current, step.fk)
        if fk is None or not fk.is_reference:
            raise _err(4, fmt, f"token {ref.tokenLiteral}: {desc}: {current}.{step.fk} is not a lookup field")
        if step.targetObject != TAXONOMY_OBJECT and (
            fk.reference_to != step.targetObject or catalog.get_object(step.targetObject) is None
        ):
            raise _err(
                4,
                fmt,
                f"token {ref.tokenLiteral}: {desc}: {current}.{step.fk} points to "
                f"{fk.reference_to}, not to a known object {step.targetObject}",
            )
        if i + 1 < len(chain) and chain[i + 1].fk != step.targetField:
            raise _err(
                8,
                fmt,
                f"token {ref.tokenLiteral}: {desc}: step {i + 1} reads "
                f"{step.targetField} but step {i + 2} follows {chain[i + 1].fk}",
            )
        current = step.targetObject
    last = chain[-1]
    if (last.targetObject, last.targetField) != (ref.targetObject, ref.targetField):
        raise _err(
            4,
            fmt,
            f"token {ref.tokenLiteral}: {desc} ends at "
            f"{last.targetObject}.{last.targetField}, not at the token's field",
        )
    _terminal(fmt, last.targetObject, last.targetField, catalog, desc, f"token {ref.tokenLiteral}")


def _check_ref(fmt: Format, ref: TokenRef, source: str, catalog: CatalogView) -> None:
    if not ref.fkChains:
        raise _err(8, fmt, f"token {ref.tokenLiteral} has no fkChains; declare at least one")
    for chain in ref.fkChains:
        _check_chain(fmt, ref, source, chain, catalog)
    if ref.directField is not None:
        _terminal(
            fmt,
            source,
            ref.directField,
            catalog,
            f"directField {ref.directField}",
            f"token {ref.tokenLiteral}",
        )


def date_source_of(text: str) -> tuple[str, str | None]:
    """A user's `--date-source` as (auto_number_date_src, auto_number_date_field): `clock` (or
    `assigned_at`) is the database clock, `CreatedDate` the record's creation instant, anything
    else the name of one of the record's own date/datetime fields."""
    if text in ("clock", "assigned_at"):
        return "assigned_at", None
    if text in ("CreatedDate", "created_date"):
        return "created_date", None
    return "custom_field", text


def describe_date_source(date_src: str, date_field: str | None) -> str:
    """The inverse of `date_source_of`: `clock`, `CreatedDate` or the field's name."""
    if date_src == "custom_field" and date_field:
        return date_field
    return "CreatedDate" if date_src == "created_date" else "clock"


def validate_date_source(
    fmt: Format, source_object: str, date_src: str, date_field: str | None, catalog: CatalogView
) -> None:
    """A record's own date source names a date or datetime field of `source_object` (rule 4)."""
    if date_src != "custom_field":
        if date_field is not None:
            raise _err(4, fmt, f"date field {date_field!r} is set but the date source is {date_src}")
        return
    if not date_field:
        raise _err(4, fmt, "date source custom_field names no field; give --date-source FIELD")
    found = catalog.get_field(source_object, date_field)
    if found is None:
        raise _err(4, fmt, f"date source {date_field}: {source_object} has no field {date_field}")
    if found.type.lower() not in DATE_FIELD_TYPES:
        raise _err(
            4,
            fmt,
            f"date source {source_object}.{date_field} is a {found.type} field; it must be a date "
            "or datetime field (or use clock / CreatedDate)",
        )


def derive_token_refs(
    fmt: Format,
    source_object: str,
    catalog: CatalogView,
    overrides: Sequence[Mapping[str, Any]] | None = None,
) -> list[TokenRef]:
    """Token refs of a format on an object: FK discovery by ReferenceTo, overrides by tokenLiteral.

    An override may replace `fkChains` and set `readStrategy` / `directField`. Every resulting
    chain is checked (rules 4, 6, 7, 8, 10) before it is returned.
    """
    if catalog.get_object(source_object) is None:
        raise _err(4, fmt, f"source object {source_object} is not in _System_Object")
    by_literal = _overrides(fmt, overrides)
    refs: list[TokenRef] = []
    for ref in fmt.cross_refs:
        ov = by_literal.get(ref.literal, {})
        data: dict[str, Any] = {
            "tokenLiteral": ref.literal,
            "targetObject": ref.object,
            "targetField": ref.field,
            "fkChains": _base_chains(fmt, ref, source_object, catalog, "fkChains" in ov),
        }
        for key in ("targetObject", "targetField"):
            if key in ov and ov[key] != data[key]:
                raise _err(
                    4,
                    fmt,
                    f"override for {ref.literal} says {key}={ov[key]!r}, but the token names {data[key]!r}",
                )
        try:
            token_ref = TokenRef.from_data({**data, **ov})
        except TokenRefError as exc:
            bad = f"override for {ref.literal} is invalid at {exc.where}: {exc.message}"
            raise _err(4, fmt, bad) from None
        _check_ref(fmt, token_ref, source_object, catalog)
        refs.append(token_ref)
    return refs


def _value_length(ref: TokenRef, source: str, catalog: CatalogView) -> int | None:
    """Longest value a token can render: its target's MaxLength (or directField's, if longer)."""
    fields: list[FieldInfo | None] = [catalog.get_field(ref.targetObject, ref.targetField)]
    if ref.directField is not None:
        fields.append(catalog.get_field(source, ref.directField))
    lengths = [f.max_length if f is not None else None for f in fields]
    if ref.targetObject == TAXONOMY_OBJECT and lengths[0] is None:
        lengths[0] = RECORD_TYPE_DEFAULT_LENGTHS.get(ref.targetField)
    if any(n is None for n in lengths):
        return None
    return max(n for n in lengths if n is not None)


def cross_max_lengths(
    fmt: Format, refs: Sequence[TokenRef], source: str, catalog: CatalogView, rule: int
) -> dict[str, int]:
    """MaxLength per cross key; a value without a known MaxLength fails `rule` (fail closed)."""
    out: dict[str, int] = {}
    for ref in refs:
        n = _value_length(ref, source, catalog)
        if n is None:
            raise _err(
                rule,
                fmt,
                f"cannot bound the length of {ref.tokenLiteral}: "
                f"{ref.key} (or its directField) has no MaxLength in _System_Field",
            )
        out[ref.key] = n
    return out


def _check_length(
    fmt: Format, refs: Sequence[TokenRef], source: str, target: FieldInfo, catalog: CatalogView
) -> None:
    """Rule 5: the longest value fits the target column."""
    if target.max_length is None:
        return
    longest = fmt.max_length(cross_max_lengths(fmt, refs, source, catalog, 5))
    if longest > target.max_length:
        raise _err(
            5,
            fmt,
            f"values can be {longest} characters long (counter "
            f"{'9' * fmt.counter_width}, cross values at their MaxLength) but "
            f"{source}.{target.name} holds {target.max_length}; widen the column or "
            "shorten the format",
        )


def validate_format(
    fmt: Format | str,
    *,
    source_object: str,
    catalog: CatalogView,
    target_field: str | None = None,
    scope: str = "global",
    overrides: Sequence[Mapping[str, Any]] | None = None,
) -> list[TokenRef]:
    """Run validation rules 1-10 for a format on `source_object`; return its canonical token refs."""
    parsed = parse_format(fmt) if isinstance(fmt, str) else fmt
    validate_scope(parsed, scope)
    refs = derive_token_refs(parsed, source_object, catalog, overrides)
    if target_field is not None:
        target = catalog.get_field(source_object, target_field)
        if target is None:
            raise _err(4, parsed, f"target field {source_object}.{target_field} is not in _System_Field")
        _check_length(parsed, refs, source_object, target, catalog)
    return refs
