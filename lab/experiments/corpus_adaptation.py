"""Does the corpus-adaptive shift of p pay, leave-one-corpus-out? (issue 40 item 2)

Each corpus's probes of one kind (`lab.experiments.probes`: `heading`, its own unique section
headings; `link`, link texts; `sentence`, first sentences with the heading path's words removed;
each answered by its page) go through the real service once (`decisions.run_service`, kept in a
probe signals file, `PROBES_DIR/KIND/CORPUS.json`). Per kind: each corpus's probe hit rate and mean
p next to its labelled dev figures, and their correlation over the corpora (does the probe see
which corpora rank badly?). Then, for each corpus held out, with the portable fit made without it (the
`fits` of an `eval-decisions --cross-corpus --json` result): its probes' hit rate and mean p give
its gap; the same gap on the other corpora, with the same fit, is the reference; the shift is
`strength × (gap − reference)`. Every strength on the grid is replayed on the dev splits (to
choose) and the test splits (to report), pooled, with wrong answers per corpus.

    python -m lab.experiments.corpus_adaptation --table /tmp/loco12/table.json --probes-dir /tmp/probes \\
        --kind sentence --kind link --set bench/queries/seed.yaml=seeds=/tmp/loco12/seed.json --set ...
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import msgspec

from lab.experiments.probes import KINDS, link_probes, make_probes
from service.decide.calibration import CalibrationModel
from service.decide.corpus_probes import MIN_PROBES, Probe, adapted, gap, sentence_probes, shift_of
from service.decide.decider import replayed_status
from service.evaluation.cross_corpus import CorpusRuns, Tally, tally
from service.evaluation.decision_metrics import top_is_right
from service.evaluation.decisions import Collected, calibrated_p, run_service
from service.evaluation.labelled import LabelledQuery, load_labelled_set
from service.flags import DecisionFlags, Flags
from service.ingest.markdown import parse_corpus
from service.ingest.seeder import SeedOptions, default_chunker
from service.settings import Settings, load_settings

STRENGTHS = (0.0, 0.25, 0.5, 0.75, 1.0)


@dataclass(frozen=True)
class ProbeRuns:
    probes: int
    hits: int
    features: list[dict[str, float]]


def probe_cases(seeds_dir: Path, kind: str) -> list[LabelledQuery]:
    flags = Flags()
    pages = parse_corpus(seeds_dir, SeedOptions.from_flags(flags).rules)
    chunker = default_chunker(flags.chunking.max_tokens)
    chunks = [chunk for entry in pages for chunk in chunker(entry.doc)]
    probes: list[Probe] = (make_probes(chunks) if kind == "heading" else link_probes(pages, chunks, seeds_dir)
                           if kind == "link" else sentence_probes(chunks))
    prefix = "probe" if kind == "heading" else kind  # the first study's heading files keep their ids
    return [LabelledQuery(id=f"{prefix}-{i:03d}", query=p.query, kind="keyword", decision="answer", pages=(p.page,))
            for i, p in enumerate(probes)]


def collect_probes(settings: Settings, corpus: str, seeds_dir: Path, out: Path, data_dir: Path,
                   kind: str = "heading") -> ProbeRuns:
    cases = probe_cases(seeds_dir, kind)
    if not cases:
        return ProbeRuns(probes=0, hits=0, features=[])
    here = settings.with_overrides(data_dir=data_dir, seeds_dir=seeds_dir)
    collected: Collected = run_service(here, cases, corpus, None, ("seed_rules",), out)
    page = {c.id: c.pages[0] for c in cases}
    runs = [r for r in collected.runs if r.phase == 3 and r.case_id in page]
    hits = sum(1 for r in runs if r.ranked[:1] == (page[r.case_id],))
    return ProbeRuns(probes=len(runs), hits=hits, features=[r.features for r in runs])


def corpus_gap(model: CalibrationModel, probes: ProbeRuns) -> float:
    return gap(probes.hits, probes.probes, mean_p(model, probes))


def mean_p(model: CalibrationModel, probes: ProbeRuns) -> float:
    ps = [calibrated_p_of(model, f) for f in probes.features]
    return sum(ps) / len(ps) if ps else 0.0


@dataclass(frozen=True)
class Labelled:
    """A corpus's dev split at phase 3 under its own LOCO fit, unshifted."""

    top1: float
    """First page right, of the cases with a ranking."""
    right: float
    mean_p: float
    observed: float
    """Share of cases whose first page is right: what p estimates (the fit's label)."""


def labelled_dev(corpus: CorpusRuns, model: CalibrationModel) -> Labelled:
    rows = list(corpus.on_split("dev", 3))
    t = shifted_tally(corpus, model, "dev", 0.0)
    ps = [calibrated_p(model, run) for _, run, _ in rows]
    hits = [top_is_right(case, run.ranked) for case, run, _ in rows]
    return Labelled(top1=t.top1 / max(t.ranked, 1), right=t.right / max(t.cases, 1), mean_p=sum(ps) / len(ps),
                    observed=sum(hits) / len(hits))


def pearson(xs: Sequence[float], ys: Sequence[float]) -> float:
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True))
    sxx, syy = sum((x - mx) ** 2 for x in xs), sum((y - my) ** 2 for y in ys)
    return sxy / math.sqrt(sxx * syy) if sxx and syy else float("nan")


def ranks(xs: Sequence[float]) -> list[float]:
    """Ranks from 1, ties given their mean rank."""
    order = sorted(range(len(xs)), key=lambda i: xs[i])
    out = [0.0] * len(xs)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and xs[order[j + 1]] == xs[order[i]]:
            j += 1
        for k in range(i, j + 1):
            out[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return out


def spearman(xs: Sequence[float], ys: Sequence[float]) -> float:
    return pearson(ranks(xs), ranks(ys))


def calibrated_p_of(model: CalibrationModel, features: dict[str, float]) -> float:
    from service.evaluation.decision_metrics import CaseRun

    run = CaseRun(case_id="", phase=3, policy="seed_rules", status="", reason="", shown=(), ranked=(),
                  options=(), features=features)
    return calibrated_p(model, run)


def shifted_tally(corpus: CorpusRuns, model: CalibrationModel, split: str, shift: float) -> Tally:
    """`cross_corpus.calibrated_tally` at phase 3 with p moved by the corpus's shift."""
    total = Tally()
    point = model.points(DecisionFlags()).at(3)
    for case, run, _ in corpus.on_split(split, 3):
        status, shown, options = replayed_status(run, adapted(calibrated_p(model, run), shift), point)
        total.add(tally(case, run, status, shown, options))
    return total


def report(kind: str, corpora: list[CorpusRuns], fits: dict[str, CalibrationModel],
           probes: dict[str, ProbeRuns]) -> None:
    """The per-corpus table, the correlations and the strength grid of one probe kind."""
    print(f"\n## Probe kind: {kind}\n")
    print("| corpus | probes | hits | hit rate | mean p (own LOCO fit) | logit gap | dev top-1 | dev right | "
          "dev mean p | dev p − observed |")
    print("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
    used: list[tuple[ProbeRuns, float, Labelled]] = []
    for c in corpora:
        pr, lab = probes[c.name], labelled_dev(c, fits[c.name])
        mp = mean_p(fits[c.name], pr)
        figures = (f"{pr.hits / pr.probes:.2f} | {mp:.3f} | {corpus_gap(fits[c.name], pr):+.2f}" if pr.probes
                   else "– | – | –")
        print(f"| {c.name} | {pr.probes} | {pr.hits} | {figures} | {lab.top1:.2f} | {lab.right:.2f} | "
              f"{lab.mean_p:.3f} | {lab.mean_p - lab.observed:+.2f} |")
        if pr.probes >= MIN_PROBES:
            used.append((pr, mp, lab))
    hit = [pr.hits / pr.probes for pr, _, _ in used]
    probe_gap = [mp - pr.hits / pr.probes for pr, mp, _ in used]
    top1 = [lab.top1 for _, _, lab in used]
    lab_gap = [lab.mean_p - lab.observed for _, _, lab in used]
    right = [lab.right for _, _, lab in used]
    print(f"\nOver the {len(used)} corpora with ≥ {MIN_PROBES} probes (Spearman / Pearson):")
    for name, xs, ys in (("probe hit rate ~ labelled dev top-1", hit, top1),
                         ("probe hit rate ~ labelled dev right outcome", hit, right),
                         ("probe (mean p − hit rate) ~ labelled dev (mean p − observed)", probe_gap, lab_gap)):
        print(f"- {name}: {spearman(xs, ys):+.2f} / {pearson(xs, ys):+.2f}")
    print("\n| strength | dev right | dev wrong / answers | test right | test wrong / answers | test needless | "
          "worst corpus wrong (test) | shifts |")
    print("|--:|--:|--:|--:|--:|--:|---|---|")
    for strength in STRENGTHS:
        totals = {"dev": Tally(), "test": Tally()}
        worst: tuple[float, str] = (0.0, "")
        shifts = []
        for c in corpora:
            model = fits[c.name]
            # The reference: the same gap on the other corpora that have probes enough.
            others = [corpus_gap(model, probes[o.name]) for o in corpora
                      if o is not c and probes[o.name].probes >= MIN_PROBES]
            reference = sum(others) / len(others)
            pr = probes[c.name]
            shift = shift_of(pr.hits, pr.probes, mean_p(model, pr), strength, reference)
            shifts.append(f"{c.name.split('-')[0]} {shift:+.2f}")
            for split in totals:
                t = shifted_tally(c, model, split, shift)
                totals[split].add(t)
                if split == "test" and t.answers:
                    worst = max(worst, (t.wrong / t.answers, c.name))
        dev, test = totals["dev"], totals["test"]
        print(f"| {strength} | {dev.right / dev.cases:.1%} | {dev.wrong / max(dev.answers, 1):.1%} "
              f"({dev.wrong}/{dev.answers}) | {test.right / test.cases:.1%} | "
              f"{test.wrong / max(test.answers, 1):.1%} ({test.wrong}/{test.answers}) | "
              f"{test.needless / max(test.in_domain, 1):.1%} | {worst[1]} {worst[0]:.1%} | {', '.join(shifts)} |")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lab.experiments.corpus_adaptation")
    parser.add_argument("--table", type=Path, required=True, help="an eval-decisions --cross-corpus --json result")
    parser.add_argument("--probes-dir", type=Path, required=True, help="probe signals, PROBES_DIR/KIND/CORPUS.json")
    parser.add_argument("--data-dir", type=Path, default=Path("/tmp/probe-data"))
    parser.add_argument("--kind", action="append", choices=KINDS, help="probe kinds (default: all)")
    parser.add_argument("--set", action="append", required=True, help="QUERIES=SEEDS_DIR=SIGNALS")
    args = parser.parse_args(argv)
    table = msgspec.json.decode(args.table.read_bytes())
    fits = {name: msgspec.convert(m, CalibrationModel) for name, m in table["fits"].items()}
    settings = load_settings()
    corpora: list[CorpusRuns] = []
    seeds: dict[str, Path] = {}
    for spec in args.set:
        queries, seeds_dir, signals = spec.split("=")
        corpus, cases = load_labelled_set(Path(queries))
        runs = msgspec.json.decode(Path(signals).read_bytes(), type=Collected)
        corpora.append(CorpusRuns(name=corpus, cases=cases, runs=runs.runs))
        seeds[corpus] = Path(seeds_dir)
    for kind in args.kind or KINDS:
        probes = {c.name: collect_probes(settings, c.name, seeds[c.name], args.probes_dir / kind / f"{c.name}.json",
                                         args.data_dir, kind) for c in corpora}
        report(kind, corpora, fits, probes)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
