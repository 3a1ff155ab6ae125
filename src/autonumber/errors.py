"""One exception hierarchy for autonumber (docs/engine.md), each error carrying the ids a person needs.

`exit_code` is what the CLI exits with when the error reaches it; the CLI prints `str(error)` as one
line and never a traceback for these.
"""

from __future__ import annotations

from collections.abc import Sequence

from autonumber.api_names import API_NAME_PATTERN


class AutonumberError(Exception):
    """Base class of every error this package raises on purpose."""

    exit_code: int = 1

    def __reduce__(self) -> tuple[object, ...]:
        """Pickled as its message and attributes: most subclasses take other arguments than the
        message, so the default (calling the class with `args`) fails in the process that unpickles
        it, and a worker's error would arrive as a broken process pool instead of itself."""
        return _restore, (type(self), str(self), self.__dict__)


def _restore(cls: type[AutonumberError], message: str, state: dict[str, object]) -> AutonumberError:
    error = cls.__new__(cls)
    Exception.__init__(error, message)
    error.__dict__.update(state)
    return error


class ConfigError(AutonumberError):
    """A bad database URL, an unreachable database or a bad option: the user's input is wrong."""

    exit_code = 2


class InvalidIdentifier(AutonumberError):
    """An object or field API name that does not match ^[A-Za-z][A-Za-z0-9_]*$."""

    exit_code = 2

    def __init__(self, name: str, what: str = "identifier") -> None:
        self.name = name
        super().__init__(f"invalid {what} {name!r}: API names must match ^{API_NAME_PATTERN}$")


class FormatError(AutonumberError):
    """A display format that breaks the grammar (rule 0) or a validation rule 1–10 (docs/formats.md)."""

    exit_code = 2

    def __init__(self, rule: int, message: str, *, format: str = "", position: int | None = None) -> None:
        self.rule = rule
        self.format = format
        self.position = position
        self.detail = message
        super().__init__(f"rule {rule}: {message}")


class UnknownObject(AutonumberError):
    """An object API name the catalog does not know."""

    exit_code = 2

    def __init__(self, object_name: str) -> None:
        self.object_name = object_name
        super().__init__(f"unknown object {object_name!r}")


class UnknownField(AutonumberError):
    """A field (by id or `Object.Field`) the catalog does not know, or that has no autonumber rule."""

    exit_code = 2

    def __init__(self, field: str, reason: str = "unknown field") -> None:
        self.field = field
        super().__init__(f"{reason}: {field!r}")


class RecordError(AutonumberError):
    """A record the caller gave is wrong: an autonumber value supplied, an unknown column, a bad type."""

    exit_code = 2


class RecordNotFound(AutonumberError):
    """No record with that Id."""

    exit_code = 2

    def __init__(self, object_name: str, record_id: str) -> None:
        self.object_name = object_name
        self.record_id = record_id
        super().__init__(f"{object_name} record {record_id!r} not found")


class CounterMissing(AutonumberError):
    """A `global` counter row is missing at runtime: corruption, never reseeded silently (docs/engine.md);
    or the rule in hand is stale: a field joined or left a shared counter meanwhile (`counter_id`,
    the counter drawn from, is then no longer the field's, and the write is tried again)."""

    def __init__(self, field_id: str, scope_key: str, counter_id: str | None = None) -> None:
        self.field_id = field_id
        self.scope_key = scope_key
        self.counter_id = counter_id or field_id
        super().__init__(
            f"counter row missing for field_id={field_id!r} scope_key={scope_key!r}; "
            "re-run `autonumber setup apply` (idempotent) and check `autonumber setup verify` V5"
        )


class CounterOverflow(AutonumberError):
    """A counter value that does not fit the format's counter width (docs/engine.md): never truncated."""

    def __init__(self, field_id: str, scope_key: str, value: int, width: int) -> None:
        self.field_id = field_id
        self.scope_key = scope_key
        self.value = value
        self.width = width
        super().__init__(
            f"counter overflow for field_id={field_id!r} scope_key={scope_key!r}: "
            f"value {value} does not fit {width} digit(s); widen the counter token"
        )


class ReservationFailed(AutonumberError):
    """A reservation could not be committed within its retry budget (lost races, certification)."""

    def __init__(self, field_id: str, scope_key: str, attempts: int, cause: str) -> None:
        self.field_id = field_id
        self.scope_key = scope_key
        self.attempts = attempts
        self.cause = cause
        super().__init__(
            f"could not reserve a number for field_id={field_id!r} scope_key={scope_key!r} "
            f"after {attempts} attempt(s): {cause}; the call is safe to retry"
        )


class TokenResolveError(AutonumberError):
    """A cross-record or taxonomy token that cannot be resolved: fail closed (docs/cross-record.md)."""

    CAUSES = ("fk null", "row missing", "target null")

    def __init__(
        self,
        field_id: str,
        token: str,
        cause: str,
        chains: Sequence[str] = (),
        record_id: str | None = None,
    ) -> None:
        self.field_id = field_id
        self.token = token
        self.cause = cause
        self.chains = tuple(chains)
        self.record_id = record_id
        tried = "; ".join(self.chains) if self.chains else "none"
        rec = f" record {record_id!r}" if record_id else ""
        super().__init__(
            f"cannot resolve {token} for field_id={field_id!r}{rec}: {cause} (chains tried: {tried})"
        )


class RuleQuarantined(AutonumberError):
    """A rule changed behind the applier's back and failed re-validation (docs/changing-rules.md)."""

    def __init__(self, field_id: str, reason: str) -> None:
        self.field_id = field_id
        self.reason = reason
        repair = "" if isinstance(reason, SchemaDamage) else REPAIR_RULE
        super().__init__(f"field_id={field_id!r} is quarantined: {reason}{repair}")


REPAIR_RULE = "; repair the rule through `autonumber spec apply` or `autonumber field set`"


class SeedParseError(AutonumberError):
    """A live value the counter seed cannot parse: the whole seed aborts, nothing is written."""

    def __init__(self, field: str, field_id: str, row_id: str, value: str, regex: str) -> None:
        self.field = field
        self.field_id = field_id
        self.row_id = row_id
        self.value = value
        self.regex = regex
        super().__init__(
            f"autonumber seed: field {field} (field_id={field_id}): row Id={row_id} has value "
            f"{value!r} which does not match derived regex {regex}. Fix the row "
            "(e.g. set it to NULL) and re-run."
        )


class SeedLimitError(AutonumberError):
    """A lazy-scope field whose live data spans more buckets than the seed allows (docs/setup.md)."""


class SetupError(AutonumberError):
    """A setup phase could not run (docs/setup.md)."""


class LockTimeout(AutonumberError):
    """A named lock could not be taken in time."""

    def __init__(self, name: str, timeout: float) -> None:
        self.name = name
        self.timeout = timeout
        super().__init__(f"could not take the lock {name!r} within {timeout:g} s; another process holds it")


class VerifyError(AutonumberError):
    """`setup verify` found violations; `.violations` holds one line each, starting V1..V6."""

    def __init__(self, violations: Sequence[object]) -> None:
        self.violations = [str(v) for v in violations]
        super().__init__(f"{len(self.violations)} invariant violation(s):\n" + "\n".join(self.violations))


class SpecError(AutonumberError):
    """A data-spec that cannot be read or applied."""

    exit_code = 2


class SpecRefused(AutonumberError):
    """A data-spec the applier refuses (status, environment, approvals): nothing is written."""

    exit_code = 3


class ConnectionBudgetExhausted(AutonumberError):
    """No database connection was free within the wait: the process's budget is all in use."""

    def __init__(self, size: int, timeout: float, pool: str) -> None:
        self.pool = pool
        super().__init__(
            f"no database connection free after waiting {timeout:g} s: all {size} connections of the "
            f"{pool!r} pool are in use; raise the budget (connect(max_connections=N), --max-connections, "
            "AUTONUMBER_MAX_CONNECTIONS) or send fewer concurrent requests"
        )


class DatabaseUnavailable(AutonumberError):
    """The database dropped or refused the connection before anything was committed: safe to retry.

    Raised `from` the driver's own error (`__cause__`), whose message it carries.
    """

    def __init__(self, what: str, cause: BaseException) -> None:
        first = (str(getattr(cause, "orig", None) or cause).splitlines() or [""])[0][:200]
        super().__init__(
            f"the database is unavailable while {what} ({type(cause).__name__}: {first}); retry later"
        )


class NumberAlreadyStored(AutonumberError):
    """A number the counter handed out was already stored by a row written outside autonumber (a
    restore, an import script). The counter has been moved past the stored values (journaled as
    `skipped`); only a transaction that could not be tried again in place ends with this error."""

    def __init__(self, object_name: str, values: Sequence[str], retry: str) -> None:
        self.object_name = object_name
        self.values = tuple(values)
        shown = ", ".join(self.values[:5]) or "a number"
        super().__init__(
            f"{object_name}: {shown} already stored by a row written outside autonumber; the counter "
            f"now continues past the stored values; {retry}"
        )


def _cause(cause: BaseException) -> str:
    """A driver's error in one line: its type and the first line of the server's message."""
    first = (str(getattr(cause, "orig", None) or cause).splitlines() or [""])[0][:200]
    return f"{type(cause).__name__}: {first}"


class TransactionConflict(AutonumberError):
    """A write inside the caller's own transaction lost a race the database settles by refusing one
    side (a deadlock, a serialization failure, a lock wait timeout, a Galera certification failure).
    The engine retries such races in its own transactions; the caller's it cannot replay."""

    def __init__(self, object_name: str, cause: BaseException) -> None:
        self.object_name = object_name
        super().__init__(
            f"writing {object_name} records in your transaction lost a race with another one "
            f"({_cause(cause)}); roll your transaction back and run it again"
        )


class WriteConflict(AutonumberError):
    """A write in the engine's own transaction lost a race the database settles by refusing one
    side (a deadlock, a serialization failure, a Galera certification failure) and was rolled back,
    numbers included. `records.insert` retries it under the retry policy first (docs/engine.md,
    "Retry policy"); this is what is left when that runs out, or what a one-transaction import
    gets at once."""

    def __init__(self, object_name: str, cause: BaseException) -> None:
        self.object_name = object_name
        super().__init__(
            f"writing {object_name} records lost a race with other writers ({_cause(cause)}); "
            "nothing of it was stored and the call is safe to retry"
        )


class CommitOutcomeUnknown(AutonumberError):
    """The connection failed during COMMIT: the records may or may not be stored. Look them up by Id
    (or retry with the same idempotency key) before inserting again."""

    def __init__(self, object_name: str, record_ids: Sequence[str], cause: str) -> None:
        self.object_name = object_name
        self.record_ids = tuple(record_ids)
        super().__init__(
            f"the commit of {len(self.record_ids)} {object_name} record(s) had an unknown outcome "
            f"({cause}); look up Id(s) {', '.join(self.record_ids)} before retrying"
        )


def _stored_lines(stored: int, through: int, object_name: str) -> str:
    return (
        f"lines 1-{through} are stored ({stored} {object_name} records by this run)"
        if through
        else "no line is stored"
    )


class ImportOutcomeUnknown(CommitOutcomeUnknown):
    """A bulk import's COMMIT failed and the database could not then say whether it landed. Lines up
    to `stored_through` are stored (`stored` records); the batch of lines `unknown_from` to
    `unknown_through` is one transaction, stored exactly when its last row's Id (`record_ids`) is."""

    def __init__(
        self,
        object_name: str,
        stored: int,
        stored_through: int,
        unknown: tuple[int, int],
        probe: str,
        how: str,
    ) -> None:
        self.stored = stored
        self.stored_through = stored_through
        self.unknown_from, self.unknown_through = unknown
        AutonumberError.__init__(
            self,
            f"{_stored_lines(stored, stored_through, object_name)}; the commit of lines "
            f"{unknown[0]}-{unknown[1]} had an unknown outcome: they are stored if and only if Id "
            f"{probe} is; {how}",
        )
        self.object_name = object_name
        self.record_ids = (probe,)


class ImportInterrupted(DatabaseUnavailable):
    """A batch-by-batch import lost the database before a COMMIT: lines up to `stored_through` are
    stored (`stored` records), nothing after them."""

    def __init__(
        self, object_name: str, stored: int, stored_through: int, how: str, cause: BaseException
    ) -> None:
        self.stored = stored
        self.stored_through = stored_through
        first = (str(getattr(cause, "orig", None) or cause).splitlines() or [""])[0][:200]
        AutonumberError.__init__(
            self,
            f"the database became unavailable during the import of {object_name} ({first}): "
            f"{_stored_lines(stored, stored_through, object_name)}, nothing after them; {how}",
        )


class IdempotencyConflict(AutonumberError):
    """An idempotency key reused with a different request body."""

    exit_code = 2

    def __init__(self, key: str) -> None:
        self.key = key
        super().__init__(f"idempotency key {key!r} was already used with a different request; use a new key")


class GaplessNeedsTransaction(AutonumberError):
    """A `gapless` field asked for a number with no caller transaction to take it in."""

    exit_code = 2

    def __init__(self, field_id: str) -> None:
        self.field_id = field_id
        super().__init__(
            f"{field_id} is a gapless field: its numbers are taken inside the caller's transaction; "
            "pass the connection of that transaction (Records.insert does)"
        )


class RuleChangeRefused(AutonumberError):
    """A rule change (add, format, scope, start) refused before anything is written.

    The one class every path raises (CLI, data-spec, `setup apply`, console, HTTP); `field` names the
    field (`Object.Field` or its id) and `reason` says why in one line.
    """

    exit_code = 2

    def __init__(self, field: str, reason: str) -> None:
        self.field_id = field
        self.reason = reason
        super().__init__(f"{field}: change refused: {reason}")


class RuleChangedMeanwhile(RuleChangeRefused):
    """Another edit changed the rule between the read this edit was made from and its write."""

    def __init__(self, field: str) -> None:
        super().__init__(field, "changed by someone else, re-read and retry")


class DuplicateValues(SetupError):
    """An autonumber column already holds a value twice: its UNIQUE index cannot be created."""

    exit_code = 2

    def __init__(self, duplicates: Sequence[str]) -> None:
        self.duplicates = list(duplicates)
        super().__init__(
            "autonumber column(s) hold duplicate values, so no UNIQUE index was created; fix the "
            "rows, then re-run: " + "; ".join(self.duplicates)
        )


class SchemaVersionError(AutonumberError):
    """The database's schema version is not this release's: nothing is read or written."""

    exit_code = 2

    def __init__(self, found: int, expected: int, message: str) -> None:
        self.found = found
        self.expected = expected
        super().__init__(message)


class SchemaMissing(AutonumberError):
    """The database has none of autonumber's tables: never initialised, or all dropped by another tool."""

    exit_code = 2

    def __init__(self) -> None:
        super().__init__(
            "the database has no autonumber schema: run autonumber db init (or autonumber setup apply); "
            f"if it had one, another tool dropped its _System_* tables {SUSPECT} and their rules and "
            "counters are lost"
        )


SUSPECT = "(an Alembic migration autogenerated without autonumber.integrations.alembic?)"
"""Who drops the product's tables or indexes behind its back, in the errors that find them gone."""


class SystemTablesMissing(AutonumberError):
    """Some of autonumber's tables were dropped by another tool: nothing is read or written."""

    exit_code = 2

    def __init__(self, tables: Sequence[str]) -> None:
        self.tables = tuple(tables)
        super().__init__(
            f"autonumber's table(s) {', '.join(self.tables)} are missing: another tool dropped them "
            f"{SUSPECT}; "
            "run autonumber db upgrade to recreate them (empty: their rows are lost)"
        )


class SchemaDamage(str):
    """A quarantine reason that lies in the database's schema, not in the rule: it names its own
    repair, so RuleQuarantined adds no advice about the rule."""

    __slots__ = ()


def unique_index_missing(table: str, column: str, index: str) -> SchemaDamage:
    """Why a rule whose column lost its UNIQUE index assigns nothing (the database would no longer
    refuse a stored duplicate)."""
    return SchemaDamage(
        f"column {table}.{column} has lost its UNIQUE index {index}: another tool dropped it {SUSPECT}; "
        "run autonumber db upgrade to recreate it"
    )


class SchemaTooOld(SchemaVersionError):
    """The database was made by an earlier release: `autonumber db upgrade` brings it up to date."""

    def __init__(self, found: int, expected: int, release: str) -> None:
        super().__init__(
            found,
            expected,
            f"database schema version {found} is older than this release's {expected} "
            f"(autonumber {release}): run autonumber db upgrade",
        )


class SchemaUpgradedMeanwhile(SchemaVersionError):
    """The database was upgraded past this release while this process ran: the writer fence
    (docs/upgrading.md, "Rolling upgrades") refused its counter write, and so will every other."""

    def __init__(self, expected: int, release: str) -> None:
        super().__init__(
            expected + 1,
            expected,
            f"counter write refused: the database was upgraded past this release's schema version "
            f"{expected} (autonumber {release}) while this process ran; restart it on the release "
            "that upgraded the database",
        )


class SchemaTooNew(SchemaVersionError):
    """The database was upgraded by a later release: this one refuses to write to it."""

    def __init__(self, found: int, expected: int, release: str) -> None:
        super().__init__(
            found,
            expected,
            f"database schema version {found} is newer than this release's {expected} "
            f"(autonumber {release}): refusing to write; run the release that upgraded it",
        )
