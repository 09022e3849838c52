"""How phase 3 weighs a weak semantic leg (2026-11-27; not part of the service).

The weighted fusion min-max normalises each leg, so the semantic leg's best candidate scores
1.0 however weakly it matches: for "Depends" on FastAPI's docs (cosine 0.16) a page with no
keyword match outranks the keyword leg's `tutorial/dependencies`. Variants, each replacing
`weighted_sum_fusion` where service/scoring/hybrid.py calls it, in this process only:

- `scale a-b`: the semantic weight times clip((best cosine - a) / (b - a), 0, 1);
- `abs lo-hi`: each cosine normalised on a fixed range, clip((s - lo) / (hi - lo), 0, 1);
- `mixed k/s`: the service's fusion with other weights for mixed queries (short phrases that
  are neither questions nor code: `fusion.weights.mixed`, 0.4/0.6 in service).

    .venv/bin/python -m lab.experiments.semantic_normalisation [--out FILE] [SET ...]

Prints phase-3 top-1 / top-3 per split and kind over the labelled sets (default: all twelve),
and per variant the dev cases whose first page turned right (+) or wrong (-), per corpus.
"""

from __future__ import annotations

import argparse
import collections
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import service.scoring.hybrid as hybrid
from lab.evaluation.kinds import corpus_dir, first_relevant_rank, open_session, ranked_cases
from service.db.server import run_with_database
from service.evaluation.labelled import load_labelled_set
from service.flags import apply_overrides, load_flags
from service.scoring import fusion
from service.settings import PROJECT_ROOT, load_settings

SETS = ("seed", "logseq", "mkdocs", "vite", "starlight", "requests", "starlette", "restic", "prettier", "pinia",
        "helix", "foam")
Fuse = Callable[[Mapping[Any, float], Mapping[Any, float], float, float], dict[Any, fusion.FusedScore]]
Row = tuple[str, str, str, str, int | None]  # set, case id, split, kind, first right rank
SERVICE: Fuse = fusion.weighted_sum_fusion


def scaled(low: float, high: float) -> Fuse:
    def fuse(keyword: Mapping[Any, float], semantic: Mapping[Any, float], wk: float, ws: float) -> dict[Any, Any]:
        best = max(semantic.values(), default=0.0)
        return SERVICE(keyword, semantic, wk, ws * min(1.0, max(0.0, (best - low) / (high - low))))
    return fuse


def absolute(low: float, high: float) -> Fuse:
    def fuse(keyword: Mapping[Any, float], semantic: Mapping[Any, float], wk: float, ws: float) -> dict[Any, Any]:
        on_range = {key: min(1.0, max(0.0, (s - low) / (high - low))) for key, s in semantic.items()}
        # min-max of the keyword leg as the service does; the semantic leg already in [0, 1]
        keyword_norm = fusion.min_max_normalise(keyword)
        keys = list(dict.fromkeys([*keyword, *semantic]))
        fused = {key: fusion.FusedScore(
            keyword_raw=keyword.get(key), semantic_raw=semantic.get(key), keyword_norm=keyword_norm.get(key, 0.0),
            semantic_norm=on_range.get(key, 0.0),
            fused=wk * keyword_norm.get(key, 0.0) + ws * on_range.get(key, 0.0)) for key in keys}
        order = sorted(range(len(keys)), key=lambda i: (-fused[keys[i]].fused, i))
        return {keys[i]: fused[keys[i]] for i in order}
    return fuse


VARIANTS: dict[str, tuple[Fuse, dict[str, Any]]] = {
    "service (min-max)": (SERVICE, {}), "scale .15-.3": (scaled(0.15, 0.3), {}), "scale .2-.4": (scaled(0.2, 0.4), {}),
    "scale .25-.45": (scaled(0.25, 0.45), {}), "abs .1-.6": (absolute(0.1, 0.6), {}),
    "abs .2-.7": (absolute(0.2, 0.7), {}),
    **{f"mixed {k}/{round(1 - k, 1)}": (SERVICE, {"fusion.weights.mixed": [k, round(1 - k, 1)]}) for k in (0.3, 0.5, 0.6)},
}


async def collect(admin_dsn: str, names: Sequence[str]) -> dict[str, list[Row]]:
    settings = load_settings()
    flags = load_flags(settings.flags_file)
    rows: dict[str, list[Row]] = {}
    for name in names:
        corpus, labelled = load_labelled_set(PROJECT_ROOT / "bench" / "queries" / f"{name}.yaml")
        cases = ranked_cases(labelled)
        session, pool = await open_session(admin_dsn, settings, flags, corpus_dir(corpus, settings, None), corpus)
        try:
            for label, (fuse, overrides) in VARIANTS.items():
                setattr(hybrid, "weighted_sum_fusion", fuse)  # noqa: B010 (this process only)
                rankings = await session.rankings(cases, apply_overrides(flags, overrides), 3)
                rows.setdefault(label, []).extend(
                    (name, c.id, c.split, c.kind, first_relevant_rank(rankings[c.id], c.pages)) for c in cases)
        finally:
            setattr(hybrid, "weighted_sum_fusion", SERVICE)  # noqa: B010
            await pool.close()
        print(f"ranked {name}", file=sys.stderr, flush=True)
    return rows


def report(rows: Mapping[str, Sequence[Row]]) -> str:
    kinds = sorted({r[3] for r in next(iter(rows.values()))})

    def cell(selected: Sequence[Row]) -> str:
        ranks = [r[4] for r in selected]
        top1 = sum(rank == 1 for rank in ranks)
        top3 = sum(rank is not None and rank <= 3 for rank in ranks)
        return f"{100 * top1 / len(ranks):.1f} / {100 * top3 / len(ranks):.1f}"

    lines = ["Phase 3, top-1 / top-3 %, pooled over the sets", "",
             "| variant | split | all | " + " | ".join(kinds) + " |", "|---|---|" + "--:|" * (len(kinds) + 1)]
    for label, selected in rows.items():
        for split in ("dev", "test"):
            on_split = [r for r in selected if r[2] == split]
            lines.append(f"| {label} | {split} | {cell(on_split)} | "
                         + " | ".join(cell([r for r in on_split if r[3] == k]) for k in kinds) + " |")
    base = {(r[0], r[1]): r[4] for r in rows["service (min-max)"]}
    lines.append("")
    for label, selected in rows.items():
        if label == "service (min-max)":
            continue
        moved: collections.Counter[str] = collections.Counter()
        for r in selected:
            if r[2] == "dev" and (r[4] == 1) != (base[(r[0], r[1])] == 1):
                moved[r[0]] += 1 if r[4] == 1 else -1
        lines.append(f"- {label}: dev first pages turned right (+) / wrong (-): " +
                     (", ".join(f"{k} {v:+d}" for k, v in moved.items() if v) or "none"))
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("sets", nargs="*", default=list(SETS))
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    rows = run_with_database(load_settings(), lambda dsn: collect(dsn, args.sets))
    text = report(rows)
    print(text)
    if args.out is not None:
        args.out.write_text(f"python -m lab.experiments.semantic_normalisation {' '.join(args.sets)}\n\n{text}\n",
                            encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
