"""`python -m service export-goldens [--out FILE]`: golden cases from reviewed and fed-back traffic.

The same export as `GET /admin/goldens/export`, read straight from the
database (DATABASE_URL or the embedded server under --data-dir), checked
against the pages stored now. Refused cases are listed on stderr.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from service.db.server import run_with_database
from service.feedback.export import export_cases
from service.feedback.store import export_candidates
from service.settings import Settings

CONNECT_TIMEOUT_S = 30.0


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "export-goldens", help="golden cases from reviewed and fed-back queries",
        description="Write the golden file (service/golden.py format) grown from the query log's "
        "reviews and feedback; cases whose expected page is no longer in the corpus are refused.",
    )
    p.add_argument("--out", type=Path, help="write here instead of stdout")
    p.add_argument("--data-dir", type=Path, help="embedded PostgreSQL data (env DATA_DIR)")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace, settings: Settings) -> int:
    from service.db.migrate import migrate_up
    from service.db.pool import connect_with_retry, create_pool

    settings = settings.with_overrides(data_dir=args.data_dir)

    async def work(dsn: str) -> int:
        conn = await connect_with_retry(dsn, timeout_total=CONNECT_TIMEOUT_S)
        try:
            await migrate_up(conn, settings.migrations_dir)
        finally:
            await conn.close()
        pool = await create_pool(dsn, max_size=2)
        try:
            rows = await export_candidates(pool)
            pages = {r["slug"] for r in await pool.fetch("select slug from docs_knowledge")}
        finally:
            await pool.close()
        result = export_cases(rows, pages)
        text = result.yaml()
        if args.out is not None:
            args.out.write_text(text, encoding="utf-8")
        else:
            sys.stdout.write(text)
        for refused in result.refused:
            print(f"refused {refused.request_id}: {refused.reason}", file=sys.stderr)
        print(f"{len(result.cases)} cases, {len(result.refused)} refused", file=sys.stderr)
        return 0

    return run_with_database(settings, work)
