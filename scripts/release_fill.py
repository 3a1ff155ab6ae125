"""Run by an OLD release's interpreter (scripts/make_upgrade_fixtures.py): fill a database the way a
user of that release did — Accounts, Cases, per_prefix Contracts for SG, SGT and US."""

from __future__ import annotations

import json
import sys

import sqlalchemy as sa

import autonumber

COUNTRIES = ("SG", "SGT", "US")


def main(url: str) -> None:
    p = autonumber.connect(url)
    try:
        r = sa.table(
            "_System_RecordType", sa.column("Id"), sa.column("ObjectId"), sa.column("RecordTypeCode")
        )
        o = sa.table("_System_Object", sa.column("Id"), sa.column("ApiName"))
        stmt = (
            sa.select(r.c.Id)
            .join(o, o.c.Id == r.c.ObjectId)
            .where(o.c.ApiName == "Contract", r.c.RecordTypeCode.is_not(None))
            .order_by(r.c.Id)
        )
        with p.db.connect() as conn:
            rt = conn.execute(stmt).scalars().first()
        out: dict[str, list[str]] = {"Case": [], "Contract": []}
        for _ in range(3):
            out["Case"].append(
                str(p.records.insert("Case", {"Subject": "from the old release"})["CaseNumber"])
            )
        for code in COUNTRIES:
            account = p.records.insert("Account", {"Name": f"Acme {code}", "BillingCountryCode": code})
            contract = p.records.insert(
                "Contract",
                {"AccountId": account["Id"], "RecordTypeId": rt, "Account_Country_Code__c": code},
            )
            out["Contract"].append(str(contract["Contract_Number__c"]))
        print(json.dumps(out))
    finally:
        p.close()


if __name__ == "__main__":
    main(sys.argv[1])
