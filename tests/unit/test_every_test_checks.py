"""Every test in the suite checks something: a test that cannot fail proves nothing.

A test checks when its body (or a helper of the suite it calls, at any depth) holds an `assert`,
a `pytest.raises`/`pytest.warns`/`pytest.fail`, a library's check (Playwright's `expect`,
schemathesis' `call_and_validate`), or a `raise`. Helpers are matched by name across the suite: a
name counts as checking when any helper of that name checks.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
CHECK_CALLS = frozenset({"raises", "warns", "fail", "expect", "call_and_validate"})
"""pytest's checks, Playwright's `expect(locator).to_…` and schemathesis' `case.call_and_validate`,
which fail the test when what they check does not hold."""

Function = ast.FunctionDef | ast.AsyncFunctionDef


def _called_name(call: ast.Call) -> str:
    func = call.func
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else ""


def _checks_itself(fn: Function) -> bool:
    for node in ast.walk(fn):
        if isinstance(node, ast.Assert | ast.Raise):
            return True
        if isinstance(node, ast.Call) and _called_name(node) in CHECK_CALLS:
            return True
    return False


def _calls(fn: Function) -> set[str]:
    return {_called_name(node) for node in ast.walk(fn) if isinstance(node, ast.Call)} - {""}


def _suite_functions() -> dict[Path, list[Function]]:
    out: dict[Path, list[Function]] = {}
    for path in sorted(TESTS.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        out[path] = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    return out


def _checking_names(functions: dict[Path, list[Function]]) -> set[str]:
    """Names of the suite's functions that check, directly or through another checking helper."""
    calls: dict[str, set[str]] = defaultdict(set)
    checking: set[str] = set()
    for fns in functions.values():
        for fn in fns:
            calls[fn.name] |= _calls(fn)
            if _checks_itself(fn):
                checking.add(fn.name)
    grew = True
    while grew:
        grew = False
        for name, callees in calls.items():
            if name not in checking and callees & checking:
                checking.add(name)
                grew = True
    return checking


def unchecked_tests(functions: dict[Path, list[Function]]) -> list[str]:
    """`path:line name` of every test function that checks nothing."""
    checking = _checking_names(functions)
    return [
        f"{path.relative_to(TESTS)}:{fn.lineno} {fn.name}"
        for path, fns in functions.items()
        if path.name.startswith("test_")
        for fn in fns
        if fn.name.startswith("test_") and not (_checks_itself(fn) or _calls(fn) & checking)
    ]


def test_every_test_in_the_suite_checks_something() -> None:
    functions = _suite_functions()
    assert sum(len(f) for f in functions.values()) > 1000, "the suite was not found"
    assert unchecked_tests(functions) == []


def test_a_test_that_only_calls_code_is_found(tmp_path: Path) -> None:
    source = (
        "def helper():\n    assert True\n"
        "def quiet():\n    return 1\n"
        "def test_calls_helper():\n    helper()\n"
        "def test_calls_quiet():\n    quiet()\n"
        "def test_raises():\n    import pytest\n    with pytest.raises(ValueError):\n        int('x')\n"
    )
    path = TESTS / "test_example.py"  # a name under TESTS, so it is shown relative to it
    fns = [n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.FunctionDef)]
    assert unchecked_tests({path: fns}) == ["test_example.py:7 test_calls_quiet"]
