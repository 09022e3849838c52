"""Any documentation set (issue 17): slug / title / category / keyword rules,
the Markdown of common tools cleaned, outliner pages, anchors, link check."""

from __future__ import annotations

from pathlib import Path

import pytest

from service.domain.types import Chunk, Document
from service.ingest.chunker import chunk_document
from service.ingest.markdown import CorpusRules, SeedError, parse_corpus, parse_seeds, seed_files
from service.ingest.parse import anchor_slug, parse_page
from service.ingest.seeder import SeedOptions, prepare

FRONT = "---\ntitle: {title}\n---\n"


def write(root: Path, relative: str, text: str) -> Path:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def only(root: Path) -> Document:
    docs = parse_seeds(root)
    assert len(docs) == 1, [d.slug for d in docs]
    return docs[0]


def chunks_of(text: str, title: str = "Page") -> list[Chunk]:
    doc = Document(slug="p", category="c", title=title, content=text, keywords=(), content_hash="h")
    return chunk_document(doc)


def all_text(text: str) -> str:
    return "\n".join(c.content for c in chunks_of(text))


# --- slug ----------------------------------------------------------------------


def test_slug_is_the_lower_cased_path_with_runs_of_other_characters_as_one_dash(tmp_path: Path) -> None:
    write(tmp_path, "Plugins/Command palette.md", "Body.\n")
    write(tmp_path, "Home.md", "Body.\n")
    write(tmp_path, "Whiteboard___Action Bar.md", "Body.\n")
    write(tmp_path, "User interface/  Tabs & Panes!.md", "Body.\n")
    slugs = sorted(d.slug for d in parse_seeds(tmp_path))
    assert slugs == ["home", "plugins/command-palette", "user-interface/tabs-panes", "whiteboard-action-bar"]


def test_front_matter_slug_or_permalink_overrides_the_path(tmp_path: Path) -> None:
    write(tmp_path, "a.md", "---\nslug: guides/start\n---\nBody.\n")
    write(tmp_path, "b.md", "---\npermalink: /faq/\n---\nBody.\n")
    assert sorted(d.slug for d in parse_seeds(tmp_path)) == ["faq", "guides/start"]


def test_two_files_with_one_slug_fail_naming_both(tmp_path: Path) -> None:
    first = write(tmp_path, "Guide/Start here.md", "One.\n")
    second = write(tmp_path, "guide/start-here.md", "Two.\n")
    with pytest.raises(SeedError) as info:
        parse_seeds(tmp_path)
    message = str(info.value)
    assert "duplicate slug 'guide/start-here'" in message
    assert str(first) in message and str(second) in message


def test_a_colliding_outliner_page_is_named_by_its_title_property(tmp_path: Path) -> None:
    # Logseq's own pair: both paths give term-page-title; the page whose title::
    # names it otherwise takes that name, the other keeps its path slug.
    write(tmp_path, "term.page title.md", "title:: custom page title\n\n- Body\n")
    write(tmp_path, "term___page title.md", "title:: term/page title\n\n- Body\n")
    write(tmp_path, "config edn file.md", "title:: config.edn\n\n- Body\n")  # no collision: path slug
    docs = {d.slug: d.title for d in parse_seeds(tmp_path)}
    assert docs == {"custom-page-title": "custom page title", "term-page-title": "term/page title",
                    "config-edn-file": "config.edn"}


def test_file_name_titles_decode_percent_escapes_but_slugs_keep_the_path(tmp_path: Path) -> None:
    write(tmp_path, "New to Logseq%3F.md", "- Body\n")
    assert {(d.slug, d.title) for d in parse_seeds(tmp_path)} == {("new-to-logseq-3f", "New to Logseq?")}


# --- title ---------------------------------------------------------------------


def test_title_front_matter_then_first_heading_then_file_name(tmp_path: Path) -> None:
    write(tmp_path, "a/one.md", FRONT.format(title="From front matter") + "# Heading\n\nBody.\n")
    write(tmp_path, "a/two.md", "Intro.\n\n# From the heading\n\nBody.\n")
    write(tmp_path, "a/Command palette.md", "## Not a title\n\nBody.\n")
    titles = {d.slug: d.title for d in parse_seeds(tmp_path)}
    assert titles == {"a/one": "From front matter", "a/two": "From the heading",
                      "a/command-palette": "Command palette"}


# --- category ------------------------------------------------------------------


def test_category_front_matter_then_first_folder_then_configurable_default(tmp_path: Path) -> None:
    write(tmp_path, "User Interface/Deep/tabs.md", "Body.\n")
    write(tmp_path, "guides/x.md", "---\ncategory: reference\n---\nBody.\n")
    write(tmp_path, "root.md", "Body.\n")
    categories = {d.slug: d.category for d in parse_seeds(tmp_path)}
    assert categories == {"user-interface/deep/tabs": "user-interface", "guides/x": "reference",
                          "root": "general"}
    assert {d.category for d in parse_seeds(tmp_path, CorpusRules(default_category="docs"))} == {
        "user-interface", "reference", "docs"}


# --- keywords, summary, front matter -------------------------------------------


def test_keywords_add_aliases_and_tags_and_unknown_keys_are_accepted(tmp_path: Path) -> None:
    write(tmp_path, "x.md", "---\ntitle: Sync\nkeywords: [sync]\naliases: [Syncing]\ntags: [beta, Paid]\n"
                            "description: Keeps devices in step.\nlayout: page\nnav_order: 3\n---\nBody.\n")
    doc = only(tmp_path)
    assert doc.keywords == ("sync", "syncing", "beta", "paid")
    assert doc.summary == "Keeps devices in step."


def test_keywords_written_as_one_comma_separated_string_are_read_as_a_list(tmp_path: Path) -> None:
    """Foam's docs (../shared/train-corpora/foam-docs, user/features/note-properties.md) write
    `keywords: hello world, bonjour`; the page was refused until this was read like `tags`."""
    write(tmp_path, "x.md", "---\ntitle: Props\nkeywords: hello world, bonjour\ntags: a, b\n---\nBody.\n")
    assert only(tmp_path).keywords == ("hello world", "bonjour", "a", "b")


def test_outliner_alias_and_description_properties(tmp_path: Path) -> None:
    write(tmp_path, "Tasks.md", "alias:: Todos, [[Task list]]\ntype:: [[Feature]]\n"
                                "description:: Manage [[tasks]] with markers.\n\n- ## Usage\n\t- Type `/TODO`.\n")
    doc = only(tmp_path)
    assert {"todos", "task list"} <= set(doc.keywords)
    assert doc.summary == "Manage tasks with markers."
    assert "alias::" not in doc.content and "type::" not in doc.content


def test_automatic_keywords_skip_code_of_every_fence_kind(tmp_path: Path) -> None:
    write(tmp_path, "x.md", "# Export\n\nExport your pages.\n\n```\nbacktickword\n```\n\n~~~\ntildeword\n~~~\n\n"
                            "    indentedword\n\nUse `inlineword` too.\n")
    keywords = only(tmp_path).keywords
    assert "export" in keywords
    assert not {"backtickword", "tildeword", "indentedword", "inlineword"} & set(keywords)


def test_broken_yaml_fails_naming_file_and_line(tmp_path: Path) -> None:
    bad = write(tmp_path, "bad.md", "---\ntitle: Fine\nkeywords: [a, b\nsummary: x\n---\nBody.\n")
    write(tmp_path, "good.md", "Body.\n")
    with pytest.raises(SeedError) as info:
        parse_seeds(tmp_path)
    assert str(bad) in str(info.value) and "(line 4)" in str(info.value)
    assert len(info.value.errors) == 1


def test_corpus_files_hidden_paths_and_ignore_globs_are_not_pages(tmp_path: Path) -> None:
    for name in ("LICENSE.md", "README.md", "SOURCE.md", ".obsidian/x.md", "drafts/wip.md", "page.md"):
        write(tmp_path, name, "Body.\n")
    rules = CorpusRules(ignore=("drafts/*",))
    assert [p.name for p in seed_files(tmp_path, rules)] == ["page.md"]


def test_an_upper_case_root_file_its_front_matter_names_is_a_page(tmp_path: Path) -> None:
    """Jest's `CLI.md` ("Jest CLI Options", `id: cli`) and Redux's `FAQ.md` are pages their sites
    render; a README or LICENSE with no front matter, or with front matter naming nothing, is not."""
    write(tmp_path, "CLI.md", "---\nid: cli\ntitle: Jest CLI Options\n---\n\nThe `jest` runner.\n")
    write(tmp_path, "FAQ.md", "---\ntitle: FAQ Index\n---\n\nQuestions.\n")
    write(tmp_path, "README.md", "# Docs\n\nHow to build them.\n")
    write(tmp_path, "NOTICE.md", "---\nlicense: MIT\n---\n\nCopyright.\n")
    assert [p.name for p in seed_files(tmp_path, CorpusRules())] == ["CLI.md", "FAQ.md"]


def test_property_only_pages_are_kept_with_their_properties_as_text(tmp_path: Path) -> None:
    write(tmp_path, "Query.md", "type:: [[Command]]\ndescription:: Starts a simple query\n")
    doc = only(tmp_path)
    assert doc.content == "type: Command\ndescription: Starts a simple query"
    assert doc.summary == "Starts a simple query"


# --- Markdown constructs ---------------------------------------------------------


def test_wikilinks_keep_their_label_or_page() -> None:
    text = all_text("See [[Page]], [[Other page|the label]] and [[Guide#Install it]].\n")
    assert text == "See Page, the label and Guide > Install it."


def test_embeds_images_block_refs_and_macros_go() -> None:
    text = all_text("Intro ![[diagram.png]] text ![alt](img.png){:height 3} and ((6380a818-1a69-46f1-85f0-2b86fcba9b70)).\n\n"
                    "- ![only an image](x.gif)\n- kept {{video https://x}} item\n- {{cloze answer \\\\ cue}} stays\n")
    assert text == "Intro  text  and .\n\n- kept  item\n- answer stays"


def test_callouts_read_as_a_label() -> None:
    assert all_text("> [!tip] Pin it\n> Right-click the tab.\n") == "> Tip: Pin it\n> Right-click the tab."


def test_html_comments_and_tags_are_removed_keeping_text() -> None:
    text = all_text("Before <!-- hidden\nnote --> after.\n\n<div class=\"x\">Inside <b>bold</b></div>\n")
    assert "hidden" not in text and "<" not in text
    assert "Before  after." in text and "Inside bold" in text


def test_footnote_markers_go_and_the_note_text_stays() -> None:
    text = all_text("Claim[^1] here.\n\n[^1]: The source.\n")
    assert "[^" not in text
    assert "Claim here." in text and "The source." in text


def test_tables_with_and_without_leading_pipes_are_one_block_with_plain_text_keywords(tmp_path: Path) -> None:
    table = "Key | Action\n--- | ---\nCtrl+K | Open palette\n"
    assert all_text("Intro.\n" + table) == "Intro.\n\n" + table.strip()
    write(tmp_path, "t.md", "# Keys\n\n" + table)
    assert "palette" in only(tmp_path).keywords


def test_code_blocks_are_kept_verbatim_even_with_markup_inside() -> None:
    code = "~~~\n[[not a link]] <b>x</b>\nalias:: kept\n~~~"
    assert all_text("Text.\n\n" + code + "\n") == "Text.\n\n" + code


def test_setext_headings_open_sections() -> None:
    chunks = chunks_of("Intro.\n\nUsage\n-----\n\nBody.\n")
    assert [c.header_path for c in chunks] == ["Page", "Page > Usage"]


def test_outliner_headings_inside_bullets_open_sections_and_blocks_stay_whole() -> None:
    page = ("type:: [[Feature]]\n\n- ## Usage\n\t- First step\n\t\t- detail\n\t  id:: 6380a818-1a69-46f1-85f0-2b86fcba9b70\n"
            "- ## Functionality\n\t- ### Modes\n\t\t- Global mode\n- A loose block\n")
    chunks = chunks_of(page)
    assert [(c.header_path, c.anchor, c.content) for c in chunks] == [
        ("Page > Usage", "usage", "- First step\n\t- detail"),  # the block's id:: line is gone
        # A plain bullet after a heading bullet belongs to that heading's section.
        ("Page > Functionality > Modes", "modes", "- Global mode\n\n- A loose block"),
    ]


def test_anchors_are_github_style_and_numbered_when_repeated() -> None:
    assert anchor_slug("Pin a command!") == "pin-a-command"
    assert anchor_slug("What's `new` in [[v2]]?") == "whats-new-in-v2"
    chunks = chunks_of("## Setup\n\nA.\n\n## Setup\n\nB.\n")
    assert [c.anchor for c in chunks] == ["setup", "setup-1"]
    assert parse_page("## Setup\n\nA.\n\n## Setup\n\nB.\n").anchors == {"setup", "setup-1"}


# --- link check ------------------------------------------------------------------


def _linked_corpus(root: Path) -> None:
    write(root, "guide/start.md", "# Start\n\n## Install it\n\nSee [setup](../ref/setup.md#options), "
                                  "[[Setup]], [[Setup#Options]], [up](#install-it) and [site](https://x.org).\n")
    write(root, "ref/setup.md", "# Setup\n\n## Options\n\nText ![img](../assets/a.png).\n")


def test_internal_links_that_resolve_are_not_reported(tmp_path: Path) -> None:
    _linked_corpus(tmp_path)
    _, _, broken = prepare(tmp_path, chunk_document, SeedOptions())
    assert broken == []


def test_broken_links_warn_by_default_naming_file_and_target(tmp_path: Path) -> None:
    _linked_corpus(tmp_path)
    start = tmp_path / "guide" / "start.md"
    start.write_text(start.read_text() + "\n[gone](../ref/missing.md), [[Nowhere]], [[Setup#Nope]], [x](#nope)\n")
    documents, _, broken = prepare(tmp_path, chunk_document, SeedOptions())
    assert len(documents) == 2
    assert len(broken) == 4
    assert all(str(start) in b for b in broken)
    joined = "\n".join(broken)
    for target in ("../ref/missing.md", "[[Nowhere]]", "[[Setup#Nope]]", "'#nope'"):
        assert target in joined


def test_broken_links_fail_the_seed_when_flagged(tmp_path: Path) -> None:
    _linked_corpus(tmp_path)
    write(tmp_path, "x.md", "Link to [[Nowhere]].\n")
    with pytest.raises(SeedError) as info:
        prepare(tmp_path, chunk_document, SeedOptions(broken_links="fail"))
    assert "x.md" in str(info.value) and "[[Nowhere]]" in str(info.value)


def test_outliner_block_refs_resolve_against_block_ids(tmp_path: Path) -> None:
    write(tmp_path, "a.md", "- Referenced block\n  id:: 6380a818-1a69-46f1-85f0-2b86fcba9b70\n")
    write(tmp_path, "b.md", "- See ((6380a818-1a69-46f1-85f0-2b86fcba9b70)) and ((6380a818-0000-46f1-85f0-2b86fcba9b70))\n")
    _, _, broken = prepare(tmp_path, chunk_document, SeedOptions())
    assert len(broken) == 1 and "6380a818-0000" in broken[0]


def test_every_logseq_page_parses() -> None:
    root = Path(__file__).resolve().parents[1] / "corpora" / "logseq-docs"
    corpus = parse_corpus(root)
    assert len(corpus) == 238
    assert not any(e.path.name in ("LICENSE.md", "SOURCE.md") for e in corpus)


def test_plain_text_for_snippets_drops_markup_and_keeps_words() -> None:
    from service.ingest.parse import plain_text

    text = "# T\n\n- **Bold** [link](x.md) and `code` ![img](a.png) [[Wiki|label]]\n\n| a | b |\n|--|--|\n| 1 | 2 |"
    assert plain_text(text) == "T Bold link and code label a b 1 2"
