"""`autonumber.integrations.sqlalchemy` on every backend: numbers at flush, one reservation per flush,
in the order instances were added; 8 threads × 100 instances give 100 unique contiguous values; a
rolled-back session leaves a gap (the default policy reserves outside the session's transaction)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
import sqlalchemy as sa
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column

import autonumber
from autonumber.integrations.common import ReadOnlyAutoNumber
from autonumber.integrations.sqlalchemy import autonumbered, unbind
from autonumber.runtime import Platform
from support import bootstrap_url, invoice_counters, run_together


class Base(DeclarativeBase):
    pass


class Invoice(Base):
    __tablename__ = "sa_invoices"
    id: Mapped[int] = mapped_column(primary_key=True)
    customer: Mapped[str] = mapped_column(sa.String(40))
    number: Mapped[str | None] = mapped_column(sa.String(30))


FORMAT = "INV-{YYYY}-{00000}"


@pytest.fixture
def platform(db_url: str) -> Iterator[Platform]:
    bootstrap_url(db_url)
    p = autonumber.connect(db_url)
    yield p
    unbind(Invoice.number)
    p.close()


@pytest.fixture
def app_engine(db_url: str, platform: Platform) -> Iterator[sa.Engine]:
    """The application's own engine and schema, as an application would have them."""
    args = {"timeout": 30} if db_url.startswith("sqlite") else {}
    eng = sa.create_engine(db_url, connect_args=args, pool_size=10)
    Base.metadata.create_all(eng)
    yield eng
    eng.dispose()


def stored(eng: sa.Engine) -> list[str]:
    with Session(eng) as s:
        return [n for n in s.scalars(sa.select(Invoice.number).order_by(Invoice.id)) if n is not None]


def test_add_all_commit_numbers_in_order_with_one_reservation(
    platform: Platform, app_engine: sa.Engine
) -> None:
    binding = autonumbered(Invoice.number, platform, format=FORMAT, scope="per_prefix")
    assert autonumbered(Invoice.number, platform, format=FORMAT, scope="per_prefix") is binding
    calls: list[int] = []
    original = platform.engine.assign_batch

    def counting(field: str, records: list[dict[str, object]], conn: object = None) -> list[str]:
        calls.append(len(records))
        return original(field, records)

    platform.engine.assign_batch = counting  # type: ignore[method-assign]
    with Session(app_engine) as s:
        s.add_all([Invoice(customer=f"c{i}") for i in range(5)])
        s.commit()
    assert calls == [5]
    with Session(app_engine) as s:
        rows = s.scalars(sa.select(Invoice).order_by(Invoice.id)).all()
        assert [r.customer for r in rows] == [f"c{i}" for i in range(5)]
        assert invoice_counters([r.number or "" for r in rows]) == [1, 2, 3, 4, 5]


def test_eight_threads_number_100_instances_unique_and_contiguous(
    platform: Platform, app_engine: sa.Engine
) -> None:
    autonumbered(Invoice.number, platform, format=FORMAT, scope="per_prefix")
    sizes = [1, 2, 3, 4, 5, 2, 3, 5]  # per thread: sessions of these sizes until its share is done
    shares = [13, 13, 13, 13, 12, 12, 12, 12]

    def work(t: int) -> None:
        left = shares[t]
        while left:
            n = min(sizes[t], left)
            with Session(app_engine) as s:
                s.add_all([Invoice(customer=f"t{t}") for _ in range(n)])
                s.commit()
            left -= n

    assert run_together(work, 8) == []
    values = stored(app_engine)
    assert len(values) == 100 and len(set(values)) == 100
    assert sorted(invoice_counters(values)) == list(range(1, 101))


def kept_lost_after(app_engine: sa.Engine, after: int) -> list[int]:
    """Commit one invoice, roll back a session that flushed two, commit `after` more: the counters."""
    with Session(app_engine) as s:
        s.add_all([Invoice(customer="kept")])
        s.commit()
    with Session(app_engine) as s:
        s.add_all([Invoice(customer="lost"), Invoice(customer="lost")])
        s.flush()
        s.rollback()
    with Session(app_engine) as s:
        s.add_all([Invoice(customer="after") for _ in range(after)])
        s.commit()
    return invoice_counters(stored(app_engine))


def test_rolled_back_session_leaves_a_gap(platform: Platform, app_engine: sa.Engine) -> None:
    autonumbered(Invoice.number, platform, format=FORMAT, scope="per_prefix")
    assert kept_lost_after(app_engine, 1) == [1, 4]


def test_rolled_back_session_leaves_no_gap_for_a_gapless_field(
    platform: Platform, app_engine: sa.Engine
) -> None:
    autonumbered(Invoice.number, platform, format=FORMAT, scope="per_prefix", numbering="gapless")
    assert kept_lost_after(app_engine, 2) == [1, 2, 3]


def test_binding_registers_once_and_refuses_another_rule(platform: Platform, app_engine: sa.Engine) -> None:
    autonumbered(Invoice.number, platform, format=FORMAT, scope="per_prefix")
    with autonumber.connect(platform.db.url.render_as_string(hide_password=False)) as other:
        autonumbered(Invoice.number, other, format=FORMAT, scope="per_prefix")  # a second process
        with pytest.raises(Exception, match="already has an autonumber rule"):
            autonumbered(Invoice.number, other, format="X-{000}")
    unbind(Invoice.number)
    autonumbered(Invoice.number, platform, format=FORMAT, scope="per_prefix")
    with Session(app_engine) as s:
        s.add(Invoice(customer="x", number=None))
        s.commit()
    assert invoice_counters(stored(app_engine)) == [1]
    indexes = sa.inspect(app_engine).get_indexes("sa_invoices")
    assert any(i.get("unique") and i["column_names"] == ["number"] for i in indexes)


def test_several_flushes_in_one_transaction(platform: Platform, app_engine: sa.Engine) -> None:
    autonumbered(Invoice.number, platform, format=FORMAT, scope="per_prefix")
    with Session(app_engine) as s:
        for i in range(3):
            s.add_all([Invoice(customer=f"f{i}"), Invoice(customer=f"g{i}")])
            s.flush()
        s.commit()
    with Session(app_engine) as s:
        s.add(Invoice(customer="next"))
        s.commit()
    assert invoice_counters(stored(app_engine)) == [1, 2, 3, 4, 5, 6, 7]


def test_number_is_read_only_once_persistent(platform: Platform, app_engine: sa.Engine) -> None:
    autonumbered(Invoice.number, platform, format=FORMAT, scope="per_prefix")
    with Session(app_engine) as s:
        invoice = Invoice(customer="a")
        s.add(invoice)
        s.commit()
        issued = invoice.number
        invoice.customer = "a2"  # other columns stay editable
        invoice.number = issued  # assigning the same value is no change
        with pytest.raises(ReadOnlyAutoNumber, match="read-only afterwards"):
            invoice.number = "INV-2026-99999"
        s.commit()
    with Session(app_engine) as s:
        assert s.scalars(sa.select(Invoice.number)).all() == [issued]


def test_core_insert_that_leaves_the_number_empty_is_refused(
    platform: Platform, app_engine: sa.Engine
) -> None:
    autonumbered(Invoice.number, platform, format=FORMAT, scope="per_prefix")
    table = Invoice.__table__
    with app_engine.begin() as conn:
        with pytest.raises(ReadOnlyAutoNumber, match="Core insert\\(\\) is not numbered"):
            conn.execute(sa.insert(table), [{"customer": "x"}, {"customer": "y"}])
        with pytest.raises(ReadOnlyAutoNumber, match="leaves number empty"):
            conn.execute(sa.insert(table).values(customer="z"))
        conn.execute(sa.insert(table), [{"customer": "given", "number": "EXT-1"}])  # numbered by the caller
    with Session(app_engine) as s, pytest.raises(ReadOnlyAutoNumber, match="leaves number empty"):
        s.execute(sa.insert(Invoice), [{"customer": "bulk"}])
    assert stored(app_engine) == ["EXT-1"]


def test_keep_numbers_saves_legacy_numbers_checked_and_moves_the_counter(
    platform: Platform, app_engine: sa.Engine
) -> None:
    from autonumber.integrations.sqlalchemy import NumberRefused, keep_numbers

    autonumbered(Invoice.number, platform, format=FORMAT, scope="per_prefix")
    year = datetime.now(UTC).year
    with Session(app_engine) as s:
        s.add(Invoice(customer="first"))
        s.commit()
    with keep_numbers(), Session(app_engine) as s:
        s.add_all([Invoice(customer="old", number=f"INV-{year}-00040"), Invoice(customer="new")])
        s.commit()
    for bad, why in ((f"INV-{year}-00040", "already taken"), ("X-1", "does not match the format")):
        with keep_numbers(), Session(app_engine) as s:
            s.add(Invoice(customer="bad", number=bad))
            with pytest.raises(NumberRefused, match=why):
                s.commit()
    with Session(app_engine) as s:
        s.add(Invoice(customer="later"))
        s.commit()
    numbers = stored(app_engine)
    assert invoice_counters(numbers) == [1, 40, 41, 42]


def test_verify_reports_rows_left_without_a_number_after_the_field_was_numbering(
    db_url: str, platform: Platform, app_engine: sa.Engine
) -> None:
    from autonumber.db import create_engine
    from autonumber.rules.verify import verify

    with app_engine.begin() as conn:  # a row from before the field: not reported
        conn.execute(sa.text("INSERT INTO sa_invoices (customer) VALUES ('before')"))
    autonumbered(Invoice.number, platform, format=FORMAT, scope="per_prefix")
    with Session(app_engine) as s:
        s.add(Invoice(customer="numbered"))
        s.commit()
    eng = create_engine(db_url)
    try:
        assert [f for f in verify(eng) if "NULL" in f.message] == []
        unbind(Invoice.number)  # a process that never bound the field
        with app_engine.begin() as conn:
            conn.execute(sa.insert(Invoice.__table__).values(customer="core"))
        [finding] = [f for f in verify(eng) if "NULL" in f.message]
    finally:
        eng.dispose()
    assert finding.code == "V1" and finding.row_id == "3", finding.message
    assert "1 row(s) have no number (NULL)" in finding.message
    assert "autonumber field backfill sa_invoices number" in finding.message
