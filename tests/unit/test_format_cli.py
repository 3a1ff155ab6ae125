"""`autonumber format check|preview` through the real CLI entry point (exit codes, one-line errors)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from autonumber.cli import main


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as info:
        main(["format", *argv])
    out, err = capsys.readouterr()
    code = info.value.code
    return (code if isinstance(code, int) else 1), out, err


def test_check_ok_prints_summary(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "check", "IBG-B-{YYYY}{MM}{DD}-{000000}", "--scope", "per_day")
    assert code == 0
    assert out.startswith("ok: IBG-B-{YYYY}{MM}{DD}-{000000}")
    assert "counter width: 6" in out and "YYYY MM DD" in out and "max length:    21" in out


def test_check_cross_tokens(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "check", "{Account.BillingCountryCode}-{YY}{MM}{DD}-{00}")
    assert code == 0
    assert "{Account.BillingCountryCode}" in out and "10 + the cross-record values" in out


@pytest.mark.parametrize(
    ("argv", "rule"),
    [
        (["{0000}-{0000}"], 1),
        (["AUTO-"], 1),
        (["{hh}-{0000}"], 0),
        (["{" + "0" * 19 + "}"], 2),
        (["{0000}", "--scope", "per_day"], 9),
        (["{0000}", "--scope", "monthly"], 9),
    ],
)
def test_check_invalid_exits_2(capsys: pytest.CaptureFixture[str], argv: list[str], rule: int) -> None:
    code, out, err = run(capsys, "check", *argv)
    assert code == 2
    assert out == ""
    assert err.startswith(f"error: rule {rule}: ")
    assert err.count("\n") == 1 and "Traceback" not in err


def test_preview(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(
        capsys,
        "preview",
        "{Account.BillingCountryCode}-CSA-{YY}{MM}{DD}-{00}",
        "--counter",
        "7",
        "--at",
        "2026-04-17",
        "--set",
        "Account.BillingCountryCode=SG",
    )
    assert (code, out) == (0, "SG-CSA-260417-07\n")


def test_preview_defaults_to_counter_1_today(capsys: pytest.CaptureFixture[str]) -> None:
    before = datetime.now(UTC).strftime("%Y%m%d")
    code, out, _ = run(capsys, "preview", "N-{YYYY}{MM}{DD}-{0000}")
    after = datetime.now(UTC).strftime("%Y%m%d")
    assert code == 0 and out.strip() in {f"N-{before}-0001", f"N-{after}-0001"}


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["{0}", "--at", "2026-13-01"], "--at '2026-13-01' is not a date"),
        (["{0}", "--at", "17/04/2026"], "use YYYY-MM-DD"),
        (["{A.B}-{0}"], "--set A.B=VALUE"),
        (["{A.B}-{0}", "--set", "A.B"], "Object.Field=VALUE"),
        (["{A.B}-{0}", "--set", "A.B="], "non-empty"),
        (["{A.B}-{0}", "--set", "A.B=x", "--set", "C.D=y"], "no token {C.D}"),
    ],
)
def test_preview_bad_input_is_one_line(
    capsys: pytest.CaptureFixture[str], argv: list[str], needle: str
) -> None:
    code, out, err = run(capsys, "preview", *argv)
    assert code == 2 and out == ""
    assert err.startswith("error: ") and needle in err and err.count("\n") == 1


def test_preview_overflow(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "preview", "{00}", "--counter", "100")
    assert code == 1 and "counter overflow" in err and "100" in err


def test_every_command_has_an_example(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "200")  # keep rich from wrapping the help text
    for cmd in ("check", "preview"):
        code, out, _ = run(capsys, cmd, "--help")
        assert code == 0 and "Example: autonumber format " + cmd in out


def test_preview_in_a_time_zone(capsys: pytest.CaptureFixture[str]) -> None:
    """20:00 UTC on 17 April is already 18 April in Tokyo."""
    argv = ["D-{YYYY}{MM}{DD}-{00}", "--counter", "1", "--at", "2026-04-17T20:00:00+00:00"]
    assert run(capsys, "preview", *argv, "--time-zone", "Asia/Tokyo")[:2] == (0, "D-20260418-01\n")
    assert run(capsys, "preview", *argv)[:2] == (0, "D-20260417-01\n")
    assert run(
        capsys,
        "preview",
        "D-{YYYY}{MM}{DD}-{0}",
        "--at",
        "2026-03-08T04:59:59Z",
        "--time-zone",
        "America/New_York",
    )[:2] == (0, "D-20260307-1\n")
    assert run(capsys, "preview", "D-{MM}{DD}-{0}", "--at", "2026-04-18", "--time-zone", "Asia/Tokyo")[
        :2
    ] == (0, "D-0418-1\n")


@pytest.mark.parametrize("zone", ["Mars/Base", "../../etc/passwd", "", "Asia/Tokyo/"])
def test_preview_unknown_zone_is_one_line(capsys: pytest.CaptureFixture[str], zone: str) -> None:
    code, out, err = run(capsys, "preview", "{0}", "--time-zone", zone)
    assert code == 2 and out == ""
    assert err.startswith("error: time zone") and err.count("\n") == 1
