"""A real Alembic environment over an application's SQLAlchemy models, on every backend: with
`autonumber.integrations.alembic`'s filters, autogenerate leaves the product's tables and its
UNIQUE index alone (two revisions in a row are empty); without them it drops both, and the
product's next start says so in one line, naming the repair (which the test then runs)."""

from __future__ import annotations

import importlib
import itertools
import re
import shutil
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import alembic
import pytest
import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from sqlalchemy.orm import Session

import autonumber
from autonumber.commands.setup import upgrade_schema
from autonumber.errors import RuleQuarantined, SchemaMissing
from autonumber.integrations.sqlalchemy import autonumbered, unbind

MODELS = """
import sqlalchemy as sa
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column


class Base(DeclarativeBase):
    pass


class Order(Base):
    __tablename__ = "orders"
    __table_args__ = ({table_args})
    id: Mapped[int] = mapped_column(primary_key=True)
    customer: Mapped[str] = mapped_column(sa.String(40))
    number: Mapped[str | None] = mapped_column(sa.String(30), unique={unique})
"""

ENV = """
import sqlalchemy as sa
from alembic import context

from autonumber.integrations.alembic import include_name, include_object
from {models} import Base

config = context.config
engine = sa.create_engine(config.get_main_option("sqlalchemy.url"), poolclass=sa.pool.NullPool)
with engine.connect() as connection:
    context.configure(connection=connection, target_metadata=Base.metadata, {hooks})
    with context.begin_transaction():
        context.run_migrations()
engine.dispose()
"""

HOOKS = {
    "helper": "include_name=include_name, include_object=include_object",
    "tables only": "include_name=include_name",
    "none": "",
}
"""What env.py passes to context.configure: both filters, only the table one, or neither."""

DECLARED = 'sa.Index("ux_orders_number", "number", unique=True),'
"""The product's index, declared in the model by the name the product gives it."""
FORMAT = "ORD-{00000}"
_names = itertools.count()


@dataclass
class Project:
    """An application's models module and Alembic environment on one database."""

    url: str
    cfg: Config
    models: ModuleType

    def autogenerate(self, message: str) -> list[str]:
        """`alembic revision --autogenerate`: the operations of the new revision's upgrade()."""
        script = command.revision(self.cfg, message=message, autogenerate=True)
        assert script is not None and not isinstance(script, list)
        return upgrade_ops(Path(script.path).read_text())

    def upgrade(self) -> None:
        command.upgrade(self.cfg, "head")

    def add_order(self, customer: str) -> str:
        """Start the product as the application does, bind the column and store one order."""
        platform = autonumber.connect(self.url)
        engine = sa.create_engine(self.url)
        try:
            autonumbered(self.models.Order.number, platform, format=FORMAT)
            with Session(engine) as session:
                order = self.models.Order(customer=customer)
                session.add(order)
                session.commit()
                return str(order.number)
        finally:
            unbind(self.models.Order.number)
            platform.close()
            engine.dispose()


def upgrade_ops(source: str) -> list[str]:
    """The `op.` calls in a revision file's upgrade() (empty for an empty revision)."""
    body = source.split("def upgrade()", 1)[1].split("def downgrade()", 1)[0]
    return re.findall(r"^\s+(op\.\w+\(.*)$", body, re.M)


@pytest.fixture
def make_project(
    db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Callable[..., Project]]:
    """`autonumber db init`, the models' table, one numbered order, then an Alembic environment
    whose env.py passes `hooks` (HOOKS) to context.configure."""
    loaded: list[str] = []
    monkeypatch.syspath_prepend(str(tmp_path))

    def make(hooks: str, *, unique: bool = False, declared: bool = False) -> Project:
        upgrade_schema(db_url)
        name = f"alembic_models_{next(_names)}"
        source = MODELS.format(unique=unique, table_args=DECLARED if declared else "")
        (tmp_path / f"{name}.py").write_text(source)
        models = importlib.import_module(name)
        loaded.append(name)
        engine = sa.create_engine(db_url)
        models.Base.metadata.create_all(engine)
        engine.dispose()
        scripts = tmp_path / "migrations"
        (scripts / "versions").mkdir(parents=True)
        (scripts / "env.py").write_text(ENV.format(models=name, hooks=HOOKS[hooks]))
        template = Path(alembic.__file__).parent / "templates" / "generic" / "script.py.mako"
        shutil.copy(template, scripts / "script.py.mako")
        cfg = Config()
        cfg.set_main_option("script_location", str(scripts))
        cfg.set_main_option("sqlalchemy.url", db_url.replace("%", "%%"))
        project = Project(db_url, cfg, models)
        assert project.add_order("first") == "ORD-00001"
        return project

    yield make
    for name in loaded:
        sys.modules.pop(name, None)


@pytest.mark.parametrize(
    ("unique", "declared"),
    [(False, False), (True, False), (False, True)],
    ids=["plain column", "unique=True", "index declared"],
)
def test_with_the_filters_two_autogenerates_in_a_row_are_empty(
    make_project: Callable[..., Project], unique: bool, declared: bool
) -> None:
    project = make_project("helper", unique=unique, declared=declared)
    assert project.autogenerate("first") == []
    project.upgrade()
    assert project.autogenerate("second") == []
    project.upgrade()
    command.check(project.cfg)  # `alembic check`: no new upgrade operations
    assert project.add_order("second") == "ORD-00002"  # counters and rules untouched


def test_the_filters_still_autogenerate_the_applications_own_changes(
    make_project: Callable[..., Project],
) -> None:
    project = make_project("helper")
    project.models.Order.__table__.append_column(sa.Column("note", sa.String(20), nullable=True))
    sa.Table("customers", project.models.Base.metadata, sa.Column("id", sa.Integer, primary_key=True))
    ops = project.autogenerate("app changes")
    assert [op.split("(")[0] for op in ops] == ["op.create_table", "op.add_column"], ops
    project.upgrade()
    assert project.autogenerate("after") == []


def test_without_the_filters_autogenerate_drops_the_products_tables_and_index(
    make_project: Callable[..., Project],
) -> None:
    project = make_project("none")
    ops = project.autogenerate("the trap")
    assert "op.drop_table('_System_AutoNumberCounter')" in ops, ops
    assert "op.drop_table('_System_Field')" in ops, ops
    assert any(re.match(r"op\.drop_index\(.*'ux_orders_number'", op) for op in ops), ops
    project.upgrade()
    with pytest.raises(SchemaMissing) as refused:
        autonumber.connect(project.url)
    message = str(refused.value)
    assert "\n" not in message
    assert "another tool dropped its _System_* tables" in message, message
    assert "autonumber.integrations.alembic" in message and "run autonumber db init" in message
    upgrade_schema(project.url)  # `autonumber db init`: the schema again, empty
    # binding registers the rule again; its counter starts above the numbers the table holds
    assert project.add_order("again") == "ORD-00002"


def test_a_dropped_unique_index_quarantines_the_field_until_db_upgrade(
    make_project: Callable[..., Project],
) -> None:
    project = make_project("tables only")
    ops = project.autogenerate("drops the index only")
    assert len(ops) == 1 and re.match(r"op\.drop_index\(.*'ux_orders_number'", ops[0]), ops
    project.upgrade()
    with pytest.raises(RuleQuarantined) as refused:
        project.add_order("second")
    message = str(refused.value)
    assert "\n" not in message
    assert "column orders.number has lost its UNIQUE index ux_orders_number" in message, message
    assert message.endswith("run autonumber db upgrade to recreate it"), message
    running = autonumber.connect(project.url, poll_interval=0)
    try:
        with pytest.raises(RuleQuarantined):
            running.catalog.current().rule("orders.number")
        assert upgrade_schema(project.url) == ["unique index ux_orders_number on orders.number"]
        assert running.catalog.current().rule("orders.number")  # seen without a restart
    finally:
        running.close()
    assert project.add_order("second") == "ORD-00002"
