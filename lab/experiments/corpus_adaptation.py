"""Does the corpus-adaptive shift of p pay, leave-one-corpus-out? (issue 40 item 2)

Each corpus's probes (`service.decide.adaptation.make_probes`: its own unique section headings,
each answered by its page) go through the real service once (`decisions.run_service`, kept in a
probe signals file). Then, for each corpus held out, with the portable fit made without it (the
`fits` of an `eval-decisions --cross-corpus --json` result): its probes' hit rate and mean p give
its gap; the same gap on the other corpora, with the same fit, is the reference; the shift is
`strength × (gap − reference)`. Every strength on the grid is replayed on the dev splits (to
choose) and the test splits (to report), pooled, with wrong answers per corpus.

    python -m lab.experiments.corpus_adaptation --table /tmp/loco12/table.json --probes-dir /tmp/probes \\
        --set bench/queries/seed.yaml=seeds=/tmp/loco12/seed.json --set ...
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

import msgspec

from lab.evaluation.kinds import read_corpus
from lab.experiments.probes import adapted, gap, make_probes, shift_of
from service.decide.calibration import CalibrationModel
from service.decide.decider import replayed_status
from service.evaluation.cross_corpus import CorpusRuns, Tally, tally
from service.evaluation.decisions import Collected, calibrated_p, run_service
from service.evaluation.labelled import LabelledQuery, load_labelled_set
from service.flags import DecisionFlags, Flags
from service.settings import Settings, load_settings

STRENGTHS = (0.0, 0.25, 0.5, 0.75, 1.0)


@dataclass(frozen=True)
class ProbeRuns:
    probes: int
    hits: int
    features: list[dict[str, float]]


def probe_cases(seeds_dir: Path) -> list[LabelledQuery]:
    flags = Flags()
    _, chunks = read_corpus(seeds_dir, flags)
    return [LabelledQuery(id=f"probe-{i:03d}", query=p.query, kind="keyword", decision="answer", pages=(p.page,))
            for i, p in enumerate(make_probes(chunks))]


def collect_probes(settings: Settings, corpus: str, seeds_dir: Path, out: Path, data_dir: Path) -> ProbeRuns:
    cases = probe_cases(seeds_dir)
    here = settings.with_overrides(data_dir=data_dir, seeds_dir=seeds_dir)
    collected: Collected = run_service(here, cases, corpus, None, ("seed_rules",), out)
    page = {c.id: c.pages[0] for c in cases}
    runs = [r for r in collected.runs if r.phase == 3 and r.case_id in page]
    hits = sum(1 for r in runs if r.ranked[:1] == (page[r.case_id],))
    return ProbeRuns(probes=len(runs), hits=hits, features=[r.features for r in runs])


def corpus_gap(model: CalibrationModel, probes: ProbeRuns) -> float:
    ps = [calibrated_p_of(model, f) for f in probes.features]
    return gap(probes.hits, probes.probes, sum(ps) / len(ps))


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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lab.experiments.corpus_adaptation")
    parser.add_argument("--table", type=Path, required=True, help="an eval-decisions --cross-corpus --json result")
    parser.add_argument("--probes-dir", type=Path, required=True)
    parser.add_argument("--data-dir", type=Path, default=Path("/tmp/probe-data"))
    parser.add_argument("--set", action="append", required=True, help="QUERIES=SEEDS_DIR=SIGNALS")
    args = parser.parse_args(argv)
    table = msgspec.json.decode(args.table.read_bytes())
    fits = {name: msgspec.convert(m, CalibrationModel) for name, m in table["fits"].items()}
    settings = load_settings()
    corpora: list[CorpusRuns] = []
    probes: dict[str, ProbeRuns] = {}
    for spec in args.set:
        queries, seeds_dir, signals = spec.split("=")
        corpus, cases = load_labelled_set(Path(queries))
        runs = msgspec.json.decode(Path(signals).read_bytes(), type=Collected)
        corpora.append(CorpusRuns(name=corpus, cases=cases, runs=runs.runs))
        probes[corpus] = collect_probes(settings, corpus, Path(seeds_dir),
                                        args.probes_dir / f"{corpus}.json", args.data_dir)
    print("| corpus | probes | hits | hit rate | mean p (own LOCO fit) | gap |")
    print("|---|--:|--:|--:|--:|--:|")
    for c in corpora:
        pr = probes[c.name]
        ps = [calibrated_p_of(fits[c.name], f) for f in pr.features]
        print(f"| {c.name} | {pr.probes} | {pr.hits} | {pr.hits / pr.probes:.2f} | {sum(ps) / len(ps):.3f} | "
              f"{corpus_gap(fits[c.name], pr):+.2f} |")
    print("\n| strength | dev right | dev wrong / answers | test right | test wrong / answers | test needless | worst corpus wrong (test) | shifts |")
    print("|--:|--:|--:|--:|--:|--:|---|---|")
    for strength in STRENGTHS:
        totals = {"dev": Tally(), "test": Tally()}
        worst: tuple[float, str] = (0.0, "")
        shifts = []
        for c in corpora:
            model = fits[c.name]
            reference = sum(corpus_gap(model, probes[o.name]) for o in corpora if o is not c) / (len(corpora) - 1)
            pr = probes[c.name]
            ps = [calibrated_p_of(model, f) for f in pr.features]
            shift = shift_of(pr.hits, pr.probes, sum(ps) / len(ps), strength, reference)
            shifts.append(f"{c.name.split('-')[0]} {shift:+.2f}")
            for split in totals:
                t = shifted_tally(c, model, split, shift)
                totals[split].add(t)
                if split == "test" and t.answers:
                    worst = max(worst, (t.wrong / t.answers, c.name))
        dev, test = totals["dev"], totals["test"]
        print(f"| {strength} | {dev.right / dev.cases:.1%} | {dev.wrong / max(dev.answers, 1):.1%} ({dev.wrong}/{dev.answers}) | "
              f"{test.right / test.cases:.1%} | {test.wrong / max(test.answers, 1):.1%} ({test.wrong}/{test.answers}) | "
              f"{test.needless / max(test.in_domain, 1):.1%} | {worst[1]} {worst[0]:.1%} | {', '.join(shifts)} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
