"""The recorded runs the decision experiments replay, read in one place.

`python -m service eval-decisions --cross-corpus --signals DIR/NAME.json` keeps the service's
runs of the labelled set `bench/queries/NAME.yaml` (every case, phases 1-3, seed rules). A
*signals directory* holds one such file per set; `compare_fits`, `decision_misses` and
`stub_answers` read one with `--signals DIR`, every set that has a file there unless `--sets`
names some.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator, Sequence
from pathlib import Path

import msgspec

from service.decide.calibration import CalibrationError, CalibrationModel, load_model
from service.decide.decider import PORTABLE_CALIBRATION_FILE
from service.evaluation.cross_corpus import CorpusRuns
from service.evaluation.decision_metrics import CaseRun
from service.evaluation.decisions import Collected
from service.evaluation.labelled import LabelledQuery, QuerySetError, load_labelled_set
from service.settings import PROJECT_ROOT

QUERIES = PROJECT_ROOT / "bench" / "queries"
PHASE = 3


class SignalsError(ValueError):
    """A signals file that is not of its labelled set's corpus."""


def read_signals(queries: Path, signals: Path) -> tuple[list[LabelledQuery], Collected]:
    """A labelled set and the runs collected on its corpus."""
    corpus, cases = load_labelled_set(queries)
    collected = msgspec.json.decode(signals.read_bytes(), type=Collected)
    if collected.corpus != corpus:
        raise SignalsError(f"the signals are of {collected.corpus}, the set of {corpus}")
    return cases, collected


def signal_sets(signals_dir: Path, queries_dir: Path = QUERIES) -> list[str]:
    """The labelled sets (`queries_dir/NAME.yaml`) with a signals file `signals_dir/NAME.json`."""
    return sorted(
        p.stem for p in queries_dir.glob("*.yaml") if (signals_dir / f"{p.stem}.json").is_file()
    )


def load_runs(
    signals_dir: Path, names: Sequence[str], queries_dir: Path = QUERIES
) -> list[CorpusRuns]:
    """Each set's cases and runs, named by the set (`logseq`, not `logseq-docs`)."""
    corpora = []
    for name in names:
        signals = signals_dir / f"{name}.json"
        try:
            cases, collected = read_signals(queries_dir / f"{name}.yaml", signals)
        except (SignalsError, msgspec.DecodeError) as err:
            raise SignalsError(f"{signals}: {err}") from None
        corpora.append(CorpusRuns(name=name, cases=cases, runs=collected.runs))
    return corpora


def seed_rule_runs(
    corpora: Sequence[CorpusRuns], splits: Sequence[str] = ("test",), phase: int = PHASE
) -> Iterator[tuple[str, LabelledQuery, CaseRun]]:
    """(set, case, its seed-rules run at `phase`) for every case of `splits` that has one, set by
    set, in each labelled set's order."""
    for corpus in corpora:
        for split in splits:
            for case, run, _ in corpus.on_split(split, phase):
                yield corpus.name, case, run


def add_arguments(parser: argparse.ArgumentParser, *, fit: bool = True) -> None:
    """`--signals DIR`, `--sets NAME ...`, `--queries DIR` and (with `fit`) `--fit FILE`."""
    parser.add_argument(
        "--signals",
        type=Path,
        required=True,
        metavar="DIR",
        help="signals directory: NAME.json per labelled set (eval-decisions --signals)",
    )
    parser.add_argument(
        "--sets",
        nargs="+",
        metavar="NAME",
        help="labelled sets to read (default: every set with a signals file in DIR)",
    )
    parser.add_argument(
        "--queries",
        type=Path,
        default=QUERIES,
        metavar="DIR",
        help=f"the labelled sets (default {QUERIES.relative_to(PROJECT_ROOT)})",
    )
    if fit:
        parser.add_argument(
            "--fit",
            type=Path,
            default=PORTABLE_CALIBRATION_FILE,
            metavar="FILE",
            help="calibrated fit to replay (default: the shipped portable fit)",
        )


def runs_from(args: argparse.Namespace) -> list[CorpusRuns]:
    """The sets `add_arguments` asked for; exits with a message when there are none or one is
    unreadable."""
    names = args.sets or signal_sets(args.signals, args.queries)
    if not names:
        raise SystemExit(f"error: no signals file in {args.signals} for a set of {args.queries}")
    try:
        return load_runs(args.signals, names, args.queries)
    except (OSError, QuerySetError, SignalsError) as err:
        raise SystemExit(f"error: {err}") from None


def fit_from(path: Path) -> CalibrationModel:
    try:
        return load_model(path)
    except CalibrationError as err:
        raise SystemExit(f"error: {err}") from None
