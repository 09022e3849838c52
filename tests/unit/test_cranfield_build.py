"""lab/experiments/cranfield_to_beir.py on a two-document SMART sample (the real files are not shipped)."""

from __future__ import annotations

import json
from pathlib import Path

from lab.experiments.cranfield_to_beir import convert


def test_smart_files_become_the_beir_layout(tmp_path: Path) -> None:
    source = tmp_path / "smart"
    source.mkdir()
    (source / "cran.all.1400").write_text(
        ".I 1\n.T\nexperimental wing\nin a slipstream .\n.A\nbrenckman,m.\n.B\nj. ae. scs. 25, 1958\n"
        ".W\nexperimental wing\nin a slipstream .  an  experimental study\n"
        ".I 2\n.T\nsimple shear flow\n.A\nting-yili\n.W\nsimple shear flow past a plate .\n"
    )
    (source / "cran.qry").write_text(".I 001\r\n.W\r\nwhat similarity laws\r\nmust be obeyed .\r\n.I 004\r\n.W\r\nshear flow ?\r\n")
    (source / "cranqrel").write_text("1 1 2\n1 2 -1\n2 2 4 \n")
    out = tmp_path / "beir"
    counts = convert(source, out)
    assert counts == {"documents": 2, "queries": 2, "qrels": 2}
    corpus = [json.loads(line) for line in (out / "corpus.jsonl").read_text().splitlines()]
    assert corpus[0] == {"_id": "1", "title": "experimental wing in a slipstream .",
                         "text": "experimental wing in a slipstream . an experimental study"}
    queries = [json.loads(line) for line in (out / "queries.jsonl").read_text().splitlines()]
    assert queries == [{"_id": "1", "text": "what similarity laws must be obeyed ."},
                       {"_id": "2", "text": "shear flow ?"}]
    assert (out / "qrels" / "test.tsv").read_text() == "query-id\tcorpus-id\tscore\n1\t1\t3\n2\t2\t1\n"
    assert (out / "query_id_map.tsv").read_text() == "query-id\tcran.qry-.I\n1\t001\n2\t004\n"
