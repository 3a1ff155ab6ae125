"""The minimal FastAPI + SQLAlchemy application of tests/frameworks/saapp on each backend:
tickets created through the API are numbered in order, and a request that changes a number is
refused (409) while other columns stay editable."""

from __future__ import annotations

from fastapi.testclient import TestClient
from saapp.app import create_app

from autonumber.db import create_engine
from autonumber.setup.bootstrap import bootstrap


def test_api_numbers_tickets_and_refuses_a_changed_number(db_url: str) -> None:
    eng = create_engine(db_url)
    bootstrap(eng)
    eng.dispose()
    with TestClient(create_app(db_url)) as client:
        made = [client.post("/tickets", json={"title": f"t{i}"}) for i in range(3)]
        assert [r.status_code for r in made] == [201] * 3
        assert [r.json()["number"] for r in made] == ["TKT-000001", "TKT-000002", "TKT-000003"]
        first = made[0].json()["id"]
        refused = client.patch(f"/tickets/{first}", json={"number": "TKT-999999"})
        assert refused.status_code == 409 and "read-only" in refused.json()["detail"]
        changed = client.patch(f"/tickets/{first}", json={"title": "renamed"})
        assert changed.json() == {"id": first, "title": "renamed", "number": "TKT-000001"}
