"""Serve one of the job benchmark's HTTP apps with N Uvicorn workers, as `autonumber serve` does.

`python -m bench.http_serve native --port P --workers N` runs the peer app under the same server
configuration (HTTP/1.1 protocol with TCP_NODELAY, see `autonumber.web.server.NoDelayHTTP`) that
`autonumber serve --workers N` uses, so the two servers differ only in the app.
"""

from __future__ import annotations

import argparse

import uvicorn

from autonumber.web.server import NoDelayHTTP


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("app", choices=["native"], help="the app to serve (bench.http_apps)")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--workers", type=int, default=1)
    args = parser.parse_args()
    uvicorn.run(
        "bench.http_apps:native_app",
        factory=True,
        host="127.0.0.1",
        port=args.port,
        workers=args.workers,
        http=NoDelayHTTP,
        log_level="warning",
        access_log=False,
    )


if __name__ == "__main__":
    main()
