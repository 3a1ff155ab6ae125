"""Every error of the package crosses a process boundary as itself (a ProcessPoolExecutor or
multiprocessing worker re-raises it in the parent), message, attributes and exit code intact."""

from __future__ import annotations

import inspect
import pickle
from typing import Any

import pytest

from autonumber import errors

SAMPLES: dict[str, Any] = {
    "BaseException": ValueError("the driver's own error"),
    "Sequence[object]": ["a", 1],
    "Sequence[str]": ["Case.CaseNumber", "Account.Account_ID__c"],
    "float": 2.5,
    "int": 3,
    "int | None": 7,
    "str": "Case.CaseNumber",
    "str | None": "20261203",
    "tuple[int, int]": (4, 9),
}

CLASSES = sorted(
    (c for c in vars(errors).values() if isinstance(c, type) and issubclass(c, errors.AutonumberError)),
    key=lambda c: c.__name__,
)


def instance(cls: type[errors.AutonumberError]) -> errors.AutonumberError:
    """`cls` built from a sample value of each required parameter's annotation."""
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    for param in list(inspect.signature(cls.__init__).parameters.values())[1:]:
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        if param.default is not param.empty and param.kind is not param.KEYWORD_ONLY:
            continue
        value = SAMPLES[str(param.annotation)]
        if param.kind is param.KEYWORD_ONLY:
            kwargs[param.name] = value
        else:
            args.append(value)
    if cls.__init__ is Exception.__init__ and not args:
        args = ["a message"]
    return cls(*args, **kwargs)


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_an_error_survives_pickling(cls: type[errors.AutonumberError]) -> None:
    error = instance(cls)
    back = pickle.loads(pickle.dumps(error))
    assert type(back) is cls
    assert str(back) == str(error)
    assert back.exit_code == error.exit_code
    assert vars(back) == vars(error)
