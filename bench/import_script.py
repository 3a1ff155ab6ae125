"""The script a user would write instead of `autonumber records insert-many`: the same-shape peer.

    python bench/import_script.py URL FILE

Reads FILE (JSON Lines, `{"Subject": ...}`) line by line and writes each line as a Case-shaped row
(`Id`, `CreatedDate`, `Subject`, `CaseNumber` under a UNIQUE index) into `import_script_case`: per
5,000-row batch it reserves 5,000 numbers from the counter row `import_counter` (UPDATE, then
read back), formats them zero-padded to 8 digits and `executemany`s the batch; the whole file in
one transaction. Its Ids are time-ordered (nanosecond clock + random tail), as a careful user's
would be: random keys would handicap it on MariaDB's clustered index. It imports SQLAlchemy and the
driver, nothing of autonumber, and is timed by the bench as a whole process. Prints the rows written.
"""

from __future__ import annotations

import json
import os
import sys
import time
from datetime import UTC, datetime

import sqlalchemy as sa

TABLE, COUNTER, BATCH = "import_script_case", "import_counter", 5_000


def main(url: str, path: str) -> int:
    engine = sa.create_engine(url)
    q = engine.dialect.identifier_preparer.quote
    mark = "?" if engine.dialect.paramstyle == "qmark" else "%s"
    insert = (
        f"INSERT INTO {TABLE} ({q('Id')}, {q('CreatedDate')}, {q('Subject')}, {q('CaseNumber')}) "
        f"VALUES ({mark}, {mark}, {mark}, {mark})"
    )
    reserve = f"UPDATE {COUNTER} SET next_number = next_number + {mark} WHERE name = 'Case'"
    read = f"SELECT next_number FROM {COUNTER} WHERE name = 'Case'"
    raw = engine.raw_connection()
    cursor = raw.cursor()
    written = 0

    def flush(subjects: list[str]) -> None:
        cursor.execute(reserve, (len(subjects),))
        cursor.execute(read)
        row = cursor.fetchone()
        assert row is not None, f"no counter row 'Case' in {COUNTER}"
        first = int(row[0]) - len(subjects)
        now = datetime.now(UTC).replace(tzinfo=None)
        at = now.isoformat(" ") if mark == "?" else now  # sqlite3 adapts datetimes per value
        rows = [
            (f"{time.time_ns():016x}{os.urandom(8).hex()}", at, s, f"{first + i:08d}")
            for i, s in enumerate(subjects)
        ]
        cursor.executemany(insert, rows)

    with open(path, encoding="utf-8") as lines:
        batch: list[str] = []
        for line in lines:
            batch.append(json.loads(line)["Subject"])
            if len(batch) == BATCH:
                flush(batch)
                written += len(batch)
                batch = []
        if batch:
            flush(batch)
            written += len(batch)
    raw.commit()
    raw.close()
    engine.dispose()
    print(written)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1], sys.argv[2]))
