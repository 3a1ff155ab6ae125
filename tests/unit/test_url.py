"""Database URL handling without a database: parsing, masking, driver choice."""

from __future__ import annotations

import pytest
from sqlalchemy.engine import make_url

from autonumber.db import create_engine, dialect_for, parse_url
from autonumber.db.url import mask, normalise
from autonumber.errors import ConfigError

SECRET = "s3cret"

BAD_URLS = [
    pytest.param("not a url", id="no-scheme"),
    pytest.param("", id="empty"),
    pytest.param(f"://root:{SECRET}@127.0.0.1/db", id="empty-scheme"),
    pytest.param(f"mysql+pymysql://root:{SECRET}@127.0.0.1:notaport/db", id="bad-port"),
    pytest.param(f"oracle://scott:{SECRET}@127.0.0.1/orcl", id="unsupported-oracle"),
    pytest.param(f"mssql+pyodbc://sa:{SECRET}@127.0.0.1/db", id="unsupported-mssql"),
    pytest.param(f"http://user:{SECRET}@example.com/", id="not-a-database"),
]


@pytest.mark.parametrize("url", BAD_URLS)
def test_parse_url_rejects_bad_urls_with_masked_message(url: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_url(url)
    message = str(info.value)
    assert SECRET not in message
    assert "\n" not in message
    assert mask(url) in message
    if SECRET in url:
        assert "***" in message
    assert info.value.exit_code == 2


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        (f"mysql+pymysql://root:{SECRET}@h:3306/db", "mysql+pymysql://root:***@h:3306/db"),
        (f"postgresql://u:{SECRET}@h/db", "postgresql://u:***@h/db"),
        ("postgresql://u@h/db", "postgresql://u@h/db"),
        ("sqlite:///autonumber.db", "sqlite:///autonumber.db"),
        (f"mysql+pymysql://root:{SECRET}@h:notaport/db", "mysql+pymysql://root:***@h:notaport/db"),
        (f"://root:{SECRET}@h/db", "://root:***@h/db"),
        ("not a url", "not a url"),
    ],
)
def test_mask_hides_the_password(url: str, expected: str) -> None:
    assert mask(url) == expected
    assert SECRET not in mask(url)


def test_mask_accepts_a_parsed_url() -> None:
    assert mask(make_url(f"mysql+pymysql://root:{SECRET}@h/db")) == "mysql+pymysql://root:***@h/db"


@pytest.mark.parametrize(
    ("url", "driver"),
    [
        ("mysql://root@h/db", "mysql+pymysql"),
        ("mysql+mysqldb://root@h/db", "mysql+pymysql"),
        ("mysql+pymysql://root@h/db", "mysql+pymysql"),
        ("mariadb://root@h/db", "mariadb+pymysql"),
        ("postgresql://postgres@h/db", "postgresql+psycopg"),
        ("postgresql+psycopg2://postgres@h/db", "postgresql+psycopg"),
        ("postgresql+psycopg://postgres@h/db", "postgresql+psycopg"),
        ("sqlite:///x.db", "sqlite"),
        ("sqlite+pysqlite:///x.db", "sqlite+pysqlite"),
    ],
)
def test_normalise_picks_shipped_drivers(url: str, driver: str) -> None:
    assert normalise(make_url(url)).drivername == driver
    parsed = parse_url(url)
    assert parsed.drivername == driver
    assert parsed.database == make_url(url).database


def test_parse_url_keeps_everything_but_the_driver() -> None:
    parsed = parse_url(f"mysql://root:{SECRET}@db.example:3307/app?charset=utf8mb4")
    assert (parsed.username, parsed.password, parsed.host, parsed.port, parsed.database) == (
        "root",
        SECRET,
        "db.example",
        3307,
        "app",
    )
    assert parsed.query == {"charset": "utf8mb4"}


def test_create_engine_uses_the_dialect_layer_without_connecting() -> None:
    engine = create_engine(f"postgresql://u:{SECRET}@127.0.0.1:1/db")
    try:
        assert engine.url.drivername == "postgresql+psycopg"
        assert dialect_for(engine).name == "postgresql"
    finally:
        engine.dispose()
    engine = create_engine(f"mysql://root:{SECRET}@127.0.0.1:1/db")
    try:
        assert engine.url.drivername == "mysql+pymysql"
        assert dialect_for(engine).name == "mysql"
    finally:
        engine.dispose()


def test_create_engine_with_unknown_driver_is_a_config_error() -> None:
    with pytest.raises(ConfigError) as info:
        create_engine(f"mysql+nosuchdriver://root:{SECRET}@h/db")
    assert SECRET not in str(info.value)
    assert "***" in str(info.value)
