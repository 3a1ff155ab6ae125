"""`setup apply`'s drift notes on every backend: nothing when the stored rules are the data-spec's,
run after run; one note per field naming only the attributes that really differ (any rule
attribute), and a note is never counted as a change."""

from __future__ import annotations

import pytest
from sqlalchemy.engine import Engine

from autonumber.rules import RuleEdit, set_rule
from autonumber.setup.apply import PhaseResult, phase_named, run_phases
from autonumber.setup.dataspec import DataSpec, SpecMeta
from autonumber.setup.standard import CONTRACT_RECORD_TYPES, CORE_OBJECTS, CORE_RULES
from support import bootstrap_url


def formats(engine: Engine) -> PhaseResult:
    meta = SpecMeta("data-spec/v1", "bootstrap", "local", "applied", (), (), ())
    spec = DataSpec(meta, CORE_OBJECTS, CORE_RULES, CONTRACT_RECORD_TYPES, "test")
    [result] = run_phases(engine, spec, [phase_named("formats")])
    return result


def test_a_database_matching_its_data_spec_reports_nothing_run_after_run(db_url: str, engine: Engine) -> None:
    bootstrap_url(db_url)
    for _ in range(3):
        result = formats(engine)
        assert (result.changes, result.notes) == ([], [])


@pytest.mark.parametrize(
    ("edit", "named"),
    [
        ({"time_zone": "Asia/Tokyo"}, "time zone: stored 'Asia/Tokyo', data-spec 'UTC'"),
        ({"numbering": "gapless"}, "numbering: stored 'gapless', data-spec 'standard'"),
        ({"allocation": "blocks:10"}, "allocation: stored 'blocks:10', data-spec 'single'"),
        ({"shared_counter": "tickets"}, "shared counter: stored 'tickets', data-spec none"),
        ({"date_source": "CreatedDate"}, "date source: stored 'CreatedDate', data-spec 'clock'"),
        ({"fiscal_year_start": 4}, "fiscal year start: stored 4, data-spec 1"),
        (
            {"scope": "per_day", "format": "C-{YYYY}{MM}{DD}-{0000}"},
            "scope: stored 'per_day', data-spec 'global'",
        ),
        ({"start": 7}, "start: stored 7, data-spec 1"),
        ({"length": 40}, "length: stored 40, data-spec"),
    ],
    ids=lambda v: "-".join(v) if isinstance(v, dict) else None,
)
def test_a_drift_names_only_what_differs_and_is_no_change(
    db_url: str, engine: Engine, edit: dict[str, object], named: str
) -> None:
    bootstrap_url(db_url)
    set_rule(engine, RuleEdit("Case", "CaseNumber", **edit))  # type: ignore[arg-type]
    for _ in range(2):
        result = formats(engine)
        assert result.changes == []
        [note] = result.notes
        assert note.startswith("kept the stored rule of Case.CaseNumber (") and named in note, note
        others = ("time zone", "numbering", "allocation", "shared counter", "date source", "fiscal")
        assert sum(word in note for word in others) == any(named.startswith(w) for w in others), note
