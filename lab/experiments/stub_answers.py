"""How often does the calibrated decision answer with a stub page first while a page with content
is among the first three, and which of the two is the labelled page?

Usage:
    .venv/bin/python -m lab.experiments.stub_answers --signals /tmp/loco-v3 \
        [--fit service/decide/data/portable.json] [--sets NAME ...] [--unmark-stubs]

The fit (`--fit`, default the shipped portable fit) is replayed with its own points on the
seed-rules runs of every set's dev and test splits at phase 3 (`cross_corpus.replay_calibrated`;
signals directory as in lab/experiments/signals.py). A stub is a page of the set's corpus that the
service's reader marks as one (`Document.stub`: only properties, links or an include), read from
the corpus folder (`lab.evaluation.kinds.corpus_dir`). An answer counts when its pages are led by
a stub with a content page among the first three (`decider.content_leads`); printed per answer:
set, query, its first three pages and the labelled pages; then the totals: the stub is the
labelled page, the first content page is, or neither.

The replay lets stubs give way as the service does (`content_first`) where the runs record them
(`CaseRun.stubs`); so with runs that do, few such answers are left. `--unmark-stubs` replays the
runs with no stub recorded: the decision without that rule, the question as it was first asked.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

import msgspec

from lab.evaluation.kinds import corpus_dir, corpus_of, read_corpus
from lab.experiments.signals import add_arguments, fit_from, runs_from, seed_rule_runs
from service.decide.decider import content_leads
from service.evaluation.cross_corpus import replay_calibrated
from service.evaluation.labelled import SPLITS
from service.flags import load_flags
from service.settings import load_settings


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_arguments(parser)
    parser.add_argument(
        "--unmark-stubs",
        action="store_true",
        help="replay as if the runs recorded no stub (the decision before stubs gave way)",
    )
    args = parser.parse_args(argv)
    model = fit_from(args.fit)
    corpora = runs_from(args)
    settings = load_settings()
    flags = load_flags(settings.flags_file)

    totals = dict.fromkeys(
        ("stub-led answers", "the stub is labelled", "the content page is labelled", "neither"), 0
    )
    for corpus in corpora:
        folder = corpus_dir(corpus_of(args.queries / f"{corpus.name}.yaml"), settings, None)
        documents, _ = read_corpus(folder, flags)
        stubs = {d.slug for d in documents if d.stub}
        for _, case, run in seed_rule_runs([corpus], SPLITS):
            if args.unmark_stubs:
                run = msgspec.structs.replace(run, stubs=())
            status, shown, _ = replay_calibrated(model, run)
            if status != "answer" or not content_leads(shown, stubs.__contains__):
                continue
            content = next(page for page in shown if page not in stubs)
            totals["stub-led answers"] += 1
            if shown[0] in case.pages:
                totals["the stub is labelled"] += 1
            elif content in case.pages:
                totals["the content page is labelled"] += 1
            else:
                totals["neither"] += 1
            print(corpus.name, "|", case.query, "|", list(shown[:3]), "|", list(case.pages))
    print(totals)
    return 0


if __name__ == "__main__":
    sys.exit(main())
