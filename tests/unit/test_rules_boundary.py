"""The rule life cycle lives in `autonumber.rules` alone: web/, specapply/, setup/, cli/ and commands/
(the user operations cli/ and web/ share) call its public API and hold no rule-change logic of their
own (and no copy of it exists elsewhere).

What counts as rule-change logic, checked on the source's syntax tree:
- importing a `rules` internal (scan, seed rows, store writes, history, the planner) other than the
  public API in `autonumber.rules.__all__` and the few cut-over/rollback needs listed in ALLOWED;
- writing the rule columns (`authorized`, `write_rule`, update of `system_field`) or the counter and
  format-history tables (`upsert_greatest`, insert/update/delete on `counter_table`,
  `field_format_history`);
- defining a function named like a step of the life cycle, or a class `RuleChangeRefused`, anywhere
  outside rules/ (errors.py holds the one exception class).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import autonumber.rules

PACKAGE = Path(autonumber.rules.__file__).resolve().parents[1]
CALLERS = ("web", "specapply", "setup", "cli", "commands")
PUBLIC = set(autonumber.rules.__all__)
ERRORS = "errors.py"
ALLOWED = {
    ("setup/apply.py", "autonumber.rules", "state"): "the setup state table of the cut-over",
    ("setup/apply.py", "autonumber.rules.legacy", "backup_table"): "cut-over: legacy backups",
    ("setup/apply.py", "autonumber.rules.legacy", "drop_legacy"): "cut-over: legacy drop",
    ("setup/apply.py", "autonumber.rules.seed", "seed_counters"): "cut-over: the seed phase",
    ("setup/apply.py", "autonumber.rules.verify", "verify"): "whole-database verify phase",
    ("setup/report.py", "autonumber.rules.verify", "verify"): "whole-database verify",
    ("setup/upgrade.py", "autonumber.rules", "state"): "migration 1: the setup state table",
    ("setup/upgrade.py", "autonumber.rules.seed", "migrate_keys"): "migration 1: 0.1.0 per_prefix keys",
    ("setup/dataspec.py", "autonumber.rules.store", "check_enums"): "reading a spec checks enum values",
    ("specapply/operations.py", "autonumber.rules.legacy", "LEGACY_NAMES"): "rollback: legacy names",
    ("specapply/operations.py", "autonumber.rules.scan", "pages"): "rollback reads live values",
    ("specapply/operations.py", "autonumber.rules.scan", "scan_rule"): "rollback reads live values",
    ("specapply/operations.py", "autonumber.rules.history", "older_by_field"): "rollback reads old values",
}
WRITERS = {"authorized", "write_rule", "upsert_greatest", "apply_rules", "store_rule"}
GUARDED_TABLES = {"system_field", "counter_table", "field_format_history"}
LIFE_CYCLE = {
    "add_field",
    "change_rule",
    "check_invariants",
    "carried_overrides",
    "plan_rows",
    "scan_rule",
    "rule_values",
    "apply_rules",
    "store_rule",
    "plan_requests",
    "seed_counters",
    "sync_rules",
}


def modules(*packages: str) -> list[Path]:
    return sorted(p for pkg in packages for p in (PACKAGE / pkg).rglob("*.py"))


def rel(path: Path) -> str:
    return path.relative_to(PACKAGE).as_posix()


def tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), str(path))


def internal_imports(path: Path, module: ast.Module) -> list[str]:
    """Imports of rules internals that are neither public API nor listed in ALLOWED."""
    bad = []
    for node in ast.walk(module):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("autonumber.rules"):
            for alias in node.names:
                if alias.name not in PUBLIC and (rel(path), node.module, alias.name) not in ALLOWED:
                    bad.append(f"{node.module}.{alias.name} (line {node.lineno})")
        if isinstance(node, ast.Import) and any(a.name.startswith("autonumber.rules.") for a in node.names):
            bad.append(f"import of a rules module (line {node.lineno})")
    return bad


def _called(node: ast.Call) -> str:
    func = node.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def writes(module: ast.Module) -> list[str]:
    """Calls that write rule columns, counter rows or format history."""
    bad = []
    for node in ast.walk(module):
        if not isinstance(node, ast.Call):
            continue
        name = _called(node)
        if name in WRITERS:
            bad.append(f"{name}() line {node.lineno}")
        if name in ("insert", "update", "delete") and node.args:
            target = node.args[0]
            if isinstance(target, ast.Name) and target.id in GUARDED_TABLES:
                bad.append(f"{name}({target.id}) line {node.lineno}")
    return bad


@pytest.mark.parametrize("path", modules(*CALLERS), ids=rel)
def test_callers_import_only_the_public_rules_api(path: Path) -> None:
    bad = internal_imports(path, tree(path))
    assert not bad, f"{rel(path)} reaches into rules internals: {', '.join(bad)}"


@pytest.mark.parametrize("path", modules(*CALLERS), ids=rel)
def test_callers_write_no_rule_columns_counters_or_history(path: Path) -> None:
    bad = writes(tree(path))
    assert not bad, f"{rel(path)} writes what only autonumber.rules may: {', '.join(bad)}"


def test_no_copy_of_the_life_cycle_outside_rules() -> None:
    found = []
    for path in PACKAGE.rglob("*.py"):
        if rel(path).startswith("rules/"):
            continue
        for node in ast.walk(tree(path)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name in LIFE_CYCLE:
                found.append(f"{rel(path)}: def {node.name}")
            if isinstance(node, ast.ClassDef) and node.name == "RuleChangeRefused" and rel(path) != ERRORS:
                found.append(f"{rel(path)}: class RuleChangeRefused")
    assert not found, found


def test_the_checks_catch_a_rogue_module() -> None:
    """The checks can fail: a caller module raising counters on its own is caught by both."""
    rogue = PACKAGE / "web" / "rogue.py"
    module = ast.parse(
        "from autonumber.rules.seed import plan_rows\n"
        "def f(conn, d):\n"
        "    d.upsert_greatest(conn, counter_table, {}, 'next_value', 1, {})\n"
        "    conn.execute(update(system_field))\n"
    )
    assert internal_imports(rogue, module) == ["autonumber.rules.seed.plan_rows (line 1)"]
    assert writes(module) == ["upsert_greatest() line 3", "update(system_field) line 4"]
