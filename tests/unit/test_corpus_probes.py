"""The corpus self-check's probes (service/decide/corpus_probes.py): the sentence kind gives nothing away."""

from __future__ import annotations

from lab.experiments.corpus_adaptation import spearman
from service.decide.corpus_probes import first_sentence, sentence_probes
from service.domain.types import Chunk


def _chunk(slug: str, path: str, content: str, index: int = 0) -> Chunk:
    return Chunk(doc_slug=slug, category="", title=path.split(" > ")[0], header_path=path, chunk_index=index,
                 content=content, keywords=(), chunk_hash=f"{slug}{index}", token_count=0)


def test_sentence_probe_drops_the_heading_paths_words() -> None:
    chunks = [
        _chunk("deploy", "Deploying > Cache headers",
               "Set the cache headers so that browsers keep static assets for a whole year. More text."),
        _chunk("deploy", "Deploying > Cache headers", "A second chunk of the same section is not read.", 1),
    ]
    [probe] = sentence_probes(chunks)
    assert probe.page == "deploy"
    assert probe.query == "Set the so that browsers keep static assets for a whole year"


def test_first_sentence_skips_outliner_properties_and_reads_link_text() -> None:
    assert first_sentence("type:: Platform\ndescription:: a graph") == ""
    assert first_sentence("See [the guide](/g.md) for more. Then go on.") == "See the guide for more."


def test_spearman_ranks_ties_alike() -> None:
    assert spearman([1, 2, 3, 4], [10, 20, 30, 40]) == 1.0
    assert round(spearman([1, 1, 2], [1, 2, 3]), 3) == 0.866


def test_a_real_corpus_gives_enough_probes_each_naming_one_of_its_pages() -> None:
    from lab.evaluation.kinds import read_corpus
    from service.decide.corpus_probes import MAX_PROBES, MIN_PROBES
    from service.flags import Flags
    from service.settings import PROJECT_ROOT

    _, chunks = read_corpus(PROJECT_ROOT / "tests" / "corpora" / "helix-docs", Flags())
    probes = sentence_probes(chunks)
    assert MIN_PROBES <= len(probes) <= MAX_PROBES
    assert len({p.query.casefold() for p in probes}) == len(probes)
    pages = {c.doc_slug for c in chunks}
    assert all(p.page in pages for p in probes)


def test_the_shift_moves_p_towards_what_the_probes_found_and_no_further() -> None:
    from service.decide.corpus_probes import MAX_SHIFT, adapted, gap, shift_of

    # Probes right 90 of 100 times while the fit said 0.7 on average: the corpus ranks better
    # than the fit expects, so p rises; at strength 0 (the default) nothing moves.
    assert shift_of(90, 100, 0.7, strength=0.0, reference_gap=0.0) == 0.0
    up = shift_of(90, 100, 0.7, strength=0.5, reference_gap=0.0)
    assert up == 0.5 * gap(90, 100, 0.7) > 0
    assert adapted(0.6, up) > 0.6 and adapted(0.6, -up) < 0.6 and adapted(0.6, 0.0) == 0.6
    # A corpus whose gap is the reference corpora's is not moved; too few probes say nothing.
    assert shift_of(90, 100, 0.7, strength=1.0, reference_gap=gap(90, 100, 0.7)) == 0.0
    assert shift_of(5, 6, 0.2, strength=1.0, reference_gap=0.0) == 0.0
    assert shift_of(100, 100, 0.01, strength=1.0, reference_gap=0.0) == MAX_SHIFT


def test_the_decider_shifts_only_with_a_check_made_under_the_fit_in_force() -> None:
    from service.decide.calibration import load_model
    from service.decide.corpus_probes import CorpusProbes, shift_of
    from service.decide.decider import PORTABLE_CALIBRATION_FILE, Decider
    from service.flags import DecisionFlags

    model = load_model(PORTABLE_CALIBRATION_FILE)
    decider = Decider(portable=model)
    flags = DecisionFlags(corpus_shift_strength=0.5)
    assert decider.corpus_shift(flags, model) == 0.0  # no check yet
    decider.use_self_check(CorpusProbes(corpus="c", fit=model.version, probes=100, hits=90, mean_p=0.7))
    assert decider.corpus_shift(flags, model) == shift_of(90, 100, 0.7, 0.5, flags.corpus_shift_reference) != 0
    assert decider.corpus_shift(DecisionFlags(), model) == 0.0  # the default strength
    decider.use_self_check(CorpusProbes(corpus="c", fit="another-fit", probes=100, hits=90, mean_p=0.7))
    assert decider.corpus_shift(flags, model) == 0.0
