"""200 concurrent POST /api/records/Account against a running Uvicorn server: distinct, contiguous numbers."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from autonumber.runtime import Platform
from autonumber.web import create_app
from autonumber.web.server import serve_in_thread

N = 200
WORKERS = 16


@pytest.mark.slow
def test_concurrent_creates_get_distinct_contiguous_numbers(platform: Platform) -> None:
    with serve_in_thread(create_app(platform)) as url, httpx.Client(base_url=url, timeout=60) as http:

        def create(i: int) -> str:
            r = http.post("/api/records/Account", json={"Name": f"c{i}", "BillingCountryCode": "SG"})
            assert r.status_code == 201, r.text
            return str(r.json()["Account_ID__c"])

        with ThreadPoolExecutor(WORKERS) as pool:
            values = list(pool.map(create, range(N)))
        counters = [int(v.rsplit("-", 1)[1]) for v in values]
        assert len(set(values)) == N
        assert set(counters) == set(range(1, N + 1))
        assert http.get("/api/records/Account", params={"limit": 1}).json()["total"] == N
