"""A password in a database URL — in the user info (even one holding an encoded '@') or as a query
option — is never printed: not by a command that works, nor by one that fails. A server that is down
is DatabaseUnavailable, an option the driver does not take a one-line usage error."""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import make_url

from autonumber.errors import ConfigError, DatabaseUnavailable
from autonumber.runtime import Platform, Settings
from support import bootstrap_url, run_cli

SECRET = "Zq9-secret"
USER = "an_secret_user"

COMMANDS = [
    ["db", "status"],
    ["db", "upgrade"],
    ["field", "list"],
    ["field", "show", "Case.CaseNumber"],
    ["counter", "show", "Case", "CaseNumber"],
    ["records", "insert", "Case", "--data", '{"Subject": "s"}'],
    ["audit", "gaps", "Case.CaseNumber"],
    ["setup", "verify"],
    ["setup", "apply", "-v"],
]


def with_password(url: str) -> str:
    """`url` reached with a password: a MariaDB user made for it, PostgreSQL's trusted login with
    a password it ignores, and for PostgreSQL and SQLite a second one as a query option."""
    parsed = make_url(url)
    backend = parsed.get_backend_name()
    if backend == "sqlite":
        return f"{url}?password={SECRET}"
    password = f"{SECRET}%40x"  # an '@' in the password, written as the URL must write it
    if backend == "mysql":
        admin = sa.create_engine(url)
        with admin.begin() as conn:
            conn.execute(sa.text(f"DROP USER IF EXISTS '{USER}'@'%'"))
            conn.execute(sa.text(f"CREATE USER '{USER}'@'%' IDENTIFIED BY '{SECRET}@x'"))
            conn.execute(sa.text(f"GRANT ALL ON `{parsed.database}`.* TO '{USER}'@'%'"))
        admin.dispose()
        return f"mysql+pymysql://{USER}:{password}@{parsed.host}:{parsed.port}/{parsed.database}"
    return f"postgresql+psycopg://{parsed.username}:{password}@{parsed.host}:{parsed.port}/{parsed.database}?password={SECRET}"


def test_no_command_prints_the_password(db_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    bootstrap_url(db_url)
    url = with_password(db_url)
    outputs = []
    for argv in COMMANDS:
        code, out = run_cli([*argv, "--db", url], capsys)
        assert code == 0, (argv, out)
        outputs.append(out)
    bad = (
        url.replace("://", "://nobody-", 1)
        if "sqlite" not in url
        else url.replace("sqlite:///", "sqlite:////no/such/dir/")
    )
    code, out = run_cli(["field", "list", "--db", bad], capsys)
    assert code != 0
    outputs.append(out)
    for out in outputs:
        assert SECRET not in out, out
    assert any("***" in out for out in outputs)


@pytest.mark.parametrize("db_url", ["mysql", "postgresql"], indirect=True)
def test_a_server_that_is_down_is_unavailable_and_a_wrong_login_is_a_config_error(db_url: str) -> None:
    parsed = make_url(db_url)
    down = parsed.set(port=1)
    with pytest.raises(DatabaseUnavailable, match="retry later"):
        Platform(Settings(down.render_as_string(hide_password=False)))
    wrong = parsed.set(username="no_such_role_here")
    with pytest.raises(ConfigError, match="cannot connect to"):
        Platform(Settings(wrong.render_as_string(hide_password=False)))


@pytest.mark.parametrize("db_url", ["mysql", "postgresql"], indirect=True)
def test_an_option_the_driver_does_not_take_is_a_usage_error(
    db_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = run_cli(["field", "list", "--db", f"{db_url}?no_such_option=1"], capsys)
    assert code == 2, out
    assert "no_such_option" in out and len(out.strip().splitlines()) == 1 and "internal error" not in out
