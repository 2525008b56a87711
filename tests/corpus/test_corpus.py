"""Corpus loading: every format, the bundled corpus, bad records with file:line, stable ids."""

from __future__ import annotations

import gzip
import json
import tempfile
from pathlib import Path

import pytest
from conftest import PAPERS, shared_file

from rag.corpus.chunking import chunk_paper
from rag.corpus.reading import count_papers, load_bibtex, load_corpus, load_csv, load_jsonl, load_listing, read_corpus
from rag.corpus.upload import load_upload
from rag.errors import CorpusError, RecordError
from rag.records import Limits, SkippedRecord, normalize_space, stable_id
from rag.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = Path(__file__).resolve().parents[1] / "data"


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


# --- the seed listing and the bundled corpus ------------------------------------------------


def test_seed_listing_loads_its_20_papers():
    result = load_corpus(shared_file("seeds/icml2025_listing.txt"))

    assert len(result.papers) == 20 and result.skipped == ()
    first, second, last = result.papers[0], result.papers[1], result.papers[-1]
    assert first.authors == ("Peng Jin", "Bo Zhu", "Li Yuan", "Shuicheng YAN")
    assert first.category == "Deep Learning · Attention Mechanisms"
    assert first.abstract.startswith("In this work, we upgrade the multi-head attention mechanism")
    assert second.authors == ("Su Jia", "Peter Frazier", "Nathan Kallus")
    assert second.category == "Theory · Online Learning and Bandits"
    assert last.authors == ("Joan Serrà", "Recep Oguz Araz", "Dmitry Bogdanov", "Yuki Mitsufuji")
    assert last.category == "Applications · Everything Else"
    assert all(p.title == "" and p.venue == "" and p.year is None for p in result.papers)
    assert len({p.id for p in result.papers}) == 20


def test_listing_fixture_joins_wrapped_paragraphs_and_strips_trailing_spaces():
    papers = load_listing(FIXTURES / "listing.txt").papers

    assert [p.category for p in papers] == [
        "Optimization",
        "Theory · Learning Theory",
        "Deep Learning · Attention Mechanisms",
    ]
    assert papers[0].authors == ("Ada Lovelace", "Charles Babbage")
    assert papers[0].abstract == (
        "We study engines that compute. The abstract wraps onto a second line."
    )
    assert papers[1].authors == ("Grace Hopper",)
    assert papers[1].abstract == "Compilers translate programs."
    assert papers[2].authors == ("Alan Turing", "Alonzo Church", "Kurt Gödel")
    assert papers[0].id == stable_id("", "Ada Lovelace; Charles Babbage", papers[0].abstract)


def test_listing_with_windows_line_endings_reads_the_same(tmp_path):
    text = (FIXTURES / "listing.txt").read_text(encoding="utf-8")
    crlf = write(tmp_path, "crlf.txt", text.replace("\n", "\r\n"))

    assert load_corpus(crlf).papers == load_corpus(FIXTURES / "listing.txt").papers


def test_listing_block_missing_its_abstract_is_reported_at_its_category_line(tmp_path):
    text = "论文检索\n\nOptimization\n\nA. Author\n\nAn abstract.\n\nTheory\n\nB. Author\n"
    path = write(tmp_path, "listing.txt", text)

    with pytest.raises(RecordError, match=r"listing\.txt:9: incomplete paper: 2 of 3 paragraphs"):
        load_corpus(path)
    result = load_corpus(path, skip_invalid=True)
    assert [p.abstract for p in result.papers] == ["An abstract."]
    assert [s.line for s in result.skipped] == [9]


def test_bundled_corpus_has_titles_venue_and_year():
    result = load_corpus(ROOT / "data" / "papers.jsonl")

    assert len(result.papers) == 20 and result.skipped == ()
    assert all(p.title and p.authors and p.category and p.url for p in result.papers)
    assert {(p.venue, p.year) for p in result.papers} == {("ICML 2025", 2025)}
    assert {p.extra.get("status") for p in result.papers} == {"Poster"}
    assert result.papers[0].title == "MoH: Multi-Head Attention as Mixture-of-Head Attention"
    assert len({p.id for p in result.papers}) == 20


def test_bundled_corpus_holds_the_listings_abstracts():
    listing = load_corpus(shared_file("seeds/icml2025_listing.txt")).papers
    bundled = load_corpus(ROOT / "data" / "papers.jsonl").papers

    def abstracts(papers):
        return {normalize_space(p.abstract) for p in papers}

    assert len(abstracts(bundled)) == 20
    assert abstracts(bundled) == abstracts(listing)


# --- one test per format --------------------------------------------------------------------


def test_jsonl_in_our_schema():
    first, second, third = load_jsonl(FIXTURES / "papers.jsonl").papers

    assert first.id == "p1"
    assert first.title == "Sparse Attention At Scale"
    assert first.authors == ("Ada Lovelace", "Charles Babbage")
    assert first.abstract == "We make attention sparse."
    assert (first.venue, first.year, first.url) == ("ICML 2025", 2025, "https://example.org/p1")
    assert first.extra == {"status": "Poster"}  # null tldr and the nested match object left out
    assert second.authors == ("Grace Hopper", "Alan Turing", "Kurt Gödel")
    assert second.category == "Theory"  # from primary_area
    assert second.year == 2025  # from the venue "3DV 2025"
    assert second.extra == {"keywords": "bandits, interference", "openreview_id": "abc123"}
    assert (third.venue, third.year) == ("COLT", 2024)


def test_beir_corpus_jsonl_maps_id_and_text():
    papers = load_corpus(FIXTURES / "beir_corpus.jsonl").papers

    assert [p.id for p in papers] == ["4983", "5836"]
    assert papers[0].title == "Microstructural development of white matter."
    assert papers[0].abstract == "Alterations of the architecture of cerebral white matter."
    assert papers[1].title == "" and papers[0].extra == {}


def test_gzipped_jsonl_reads_like_plain_and_keeps_line_numbers(tmp_path):
    plain = (FIXTURES / "papers.jsonl").read_bytes()
    packed = tmp_path / "papers.jsonl.gz"
    packed.write_bytes(gzip.compress(plain))

    assert load_corpus(packed).papers == load_corpus(FIXTURES / "papers.jsonl").papers
    packed_csv = tmp_path / "papers.csv.gz"
    packed_csv.write_bytes(gzip.compress((FIXTURES / "papers.csv").read_bytes()))
    assert load_corpus(packed_csv).papers == load_corpus(FIXTURES / "papers.csv").papers

    broken = tmp_path / "broken.jsonl.gz"
    broken.write_bytes(gzip.compress(plain.replace(b'{"title": "No Id Here"', b'{"title": ')))
    with pytest.raises(RecordError, match=r"broken\.jsonl\.gz:4: invalid JSON"):
        load_corpus(broken)


def test_csv_with_header_in_any_case():
    papers = load_csv(FIXTURES / "papers.csv").papers

    assert [p.id for p in papers] == ["c1", "c2", "c3"]
    assert papers[0].authors == ("Ada Lovelace", "Charles Babbage")
    assert papers[0].abstract == "Graph transformers, revisited."
    assert (papers[0].venue, papers[0].year) == ("NeurIPS 2023", 2023)
    assert papers[0].extra == {"track": "main"}
    assert papers[1].authors == ("Grace Hopper", "Alan Turing")
    assert papers[1].abstract == "An abstract that spans two lines."
    assert papers[1].year == 2024  # from the venue: the year cell is empty
    assert papers[2].authors == ("Kurt Gödel",) and papers[2].url == ""


def test_bibtex_decodes_latex_reorders_names_and_builds_urls():
    arxiv, acl = load_bibtex(FIXTURES / "papers.bib").papers

    assert arxiv.id == "vaswani2017attention"
    assert arxiv.authors == ("Ashish Vaswani", "Noam Shazeer", "Niki Parmar")
    assert arxiv.url == "https://arxiv.org/abs/1706.03762"
    assert (arxiv.category, arxiv.year) == ("cs.CL", 2017)
    assert arxiv.abstract.endswith("improving BLEU by 2.0 points (a 7% gain).")  # bare % kept

    assert acl.id == "muller-2023-schon"
    assert acl.title == "Schöne BERT Embeddings für Deutsch"
    assert acl.authors == ("Jörg Müller", "María García", "Barnes and Noble")
    assert acl.venue == "Proceedings of the 61st Annual Meeting of the ACL"
    assert acl.url == "https://doi.org/10.18653/v1/2023.acl-long.1"
    assert acl.abstract == (
        "We embed German text with BERT and reach 90% accuracy on $n$-gram tasks."
    )
    assert acl.year == 2023 and acl.extra["pages"] == "1--12"


def test_bibtex_url_field_is_kept_verbatim(tmp_path):
    path = write(tmp_path, "x.bib", "@misc{k, url = {https://x.org/a_b%20c}, abstract = {A.}}\n")

    assert load_corpus(path).papers[0].url == "https://x.org/a_b%20c"


# --- bad records and bad files --------------------------------------------------------------


@pytest.fixture
def workdir(tmp_path, monkeypatch):
    """A temporary current directory, so files are named as a user types them ("file.jsonl")."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


def good(n: int) -> str:
    """A valid JSONL record with id gN."""
    return json.dumps({"id": f"g{n}", "title": f"Good {n}", "abstract": f"A fine abstract {n}."})


def test_broken_json_is_named_by_file_and_line(workdir):
    write(workdir, "file.jsonl", "\n".join([good(1), good(2), '{"id": "g3", "title": ', good(4)]))

    with pytest.raises(RecordError) as raised:
        load_corpus("file.jsonl")
    assert str(raised.value).startswith("file.jsonl:3: invalid JSON")
    assert raised.value.line == 3 and "--skip-invalid" in raised.value.hint


def test_line_separator_inside_a_json_string_does_not_shift_line_numbers(workdir):
    inside = json.dumps({"id": "g1", "abstract": "One\u2028two."}, ensure_ascii=False)
    write(workdir, "sep.jsonl", f"{inside}\n{good(2)}\nnot json\n")

    with pytest.raises(RecordError, match=r"^sep\.jsonl:3: invalid JSON"):
        load_corpus("sep.jsonl")

def test_json_line_that_is_not_an_object_is_a_bad_record(workdir):
    write(workdir, "file.jsonl", good(1) + '\n["a", "list"]\n')

    with pytest.raises(RecordError, match=r"^file\.jsonl:2: expected a JSON object, got list"):
        load_corpus("file.jsonl")


def test_missing_abstract_says_how_to_fix_it(workdir):
    write(workdir, "x.jsonl", good(1) + '\n{"id": "g2", "title": "Blank", "abstract": "  "}\n')

    with pytest.raises(RecordError) as raised:
        load_corpus("x.jsonl")
    assert str(raised.value).startswith("x.jsonl:2: missing abstract")
    assert raised.value.hint == (
        'add an "abstract" field, or load with --skip-invalid to skip such records'
    )


def test_bibtex_syntax_error_and_entry_without_abstract_name_their_lines(workdir):
    write(
        workdir,
        "refs.bib",
        "@misc{ok, title = {Fine}, abstract = {Fine.}}\n"
        "\n"
        "@article{broken,\n"
        "  title = {Unclosed {brace,\n"
        "  abstract = {Lost.}\n"
        "}\n"
        "\n"
        "@article{noabstract, title = {Bare}}\n"
        "@misc{last, abstract = {Last one.}}\n",
    )

    with pytest.raises(RecordError, match=r"^refs\.bib:3: BibTeX syntax error"):
        load_corpus("refs.bib")
    result = load_corpus("refs.bib", skip_invalid=True)
    assert [p.id for p in result.papers] == ["ok", "last"]
    assert [(s.line, s.reason.split(":")[0]) for s in result.skipped] == [
        (3, "BibTeX syntax error"),
        (8, "missing abstract"),
    ]


def test_csv_row_without_abstract_names_its_line(workdir):
    write(workdir, "p.csv", "id,title,abstract\nc1,One,First.\nc2,Two\nc3,Three,Third.\n")

    with pytest.raises(RecordError, match=r"^p\.csv:3: missing abstract"):
        load_corpus("p.csv")
    result = load_corpus("p.csv", skip_invalid=True)
    assert [p.id for p in result.papers] == ["c1", "c3"]
    assert result.skipped == (SkippedRecord(path="p.csv", line=3, reason="missing abstract"),)


def test_csv_without_abstract_column_is_reported_at_the_header(workdir):
    write(workdir, "p.csv", "id,title,summary\nc1,One,Something.\n")

    with pytest.raises(RecordError, match=r'^p\.csv:1: no abstract column'):
        load_corpus("p.csv", skip_invalid=True)


def test_csv_row_with_unquoted_comma_is_a_bad_record(workdir):
    write(workdir, "p.csv", "id,abstract\nc1,Fine.\nc2,Split, by a comma.\n")

    with pytest.raises(RecordError, match=r"^p\.csv:3: 3 cells but the header has 2"):
        load_corpus("p.csv")


def test_csv_the_reader_cannot_get_past_is_reported_at_the_row(workdir):
    runaway = '"' + "an unclosed quote swallows the rest " * 4000
    write(workdir, "q.csv", f"id,abstract\nc1,Fine.\nc2,{runaway}\nc3,Lost.\n")

    with pytest.raises(RecordError, match=r"^q\.csv:3: malformed CSV"):
        load_corpus("q.csv", skip_invalid=True)


def test_latin1_byte_is_reported_at_its_line(workdir):
    (workdir / "l1.jsonl").write_bytes(
        f"{good(1)}\n".encode() + b'{"id": "g2", "abstract": "Caf\xe9 au lait."}\n' + good(3).encode()
    )

    with pytest.raises(RecordError) as raised:
        load_corpus("l1.jsonl")
    assert str(raised.value).startswith("l1.jsonl:2: not UTF-8: byte 0xe9")
    assert "iconv" in raised.value.hint
    result = load_corpus("l1.jsonl", skip_invalid=True)
    assert [p.id for p in result.papers] == ["g1", "g3"]
    assert [str(s) for s in result.skipped] == ["l1.jsonl:2: not UTF-8: byte 0xe9 cannot be decoded"]


def test_latin1_byte_inside_a_listing_abstract_is_reported_at_the_bytes_line(workdir):
    (workdir / "l.txt").write_bytes("论文检索\n\nTheory\n\nA. Author\n\n".encode() + b"Na\xefve.\n")

    with pytest.raises(RecordError, match=r"^l\.txt:7: not UTF-8: byte 0xef"):
        load_corpus("l.txt")
    skipped = load_corpus("l.txt", skip_invalid=True).skipped
    assert [(s.line, s.reason) for s in skipped] == [(7, "not UTF-8: byte 0xef cannot be decoded")]


def test_utf8_byte_order_mark_is_accepted(workdir):
    (workdir / "bom.jsonl").write_bytes(b"\xef\xbb\xbf" + good(1).encode())
    (workdir / "bom.csv").write_bytes(b"\xef\xbb\xbfid,abstract\nc1,Fine.\n")

    assert [p.id for p in load_corpus("bom.jsonl").papers] == ["g1"]
    assert [p.id for p in load_corpus("bom.csv").papers] == ["c1"]


def test_skip_invalid_keeps_the_good_records_and_lists_every_skipped_one(workdir):
    write(
        workdir,
        "mixed.jsonl",
        "\n".join(
            [
                good(1),
                "not json",
                '{"id": "g3", "title": "No abstract"}',
                good(4),
                "42",
                '{"id": "g6", "abstract": "Bad year.", "year": "soon"}',
                good(7),
            ]
        ),
    )

    result = load_corpus("mixed.jsonl", skip_invalid=True)

    assert [p.id for p in result.papers] == ["g1", "g4", "g7"]
    assert [s.line for s in result.skipped] == [2, 3, 5, 6]
    assert all(s.path == "mixed.jsonl" for s in result.skipped)
    assert result.skipped[1].reason == "missing abstract"
    assert str(result.skipped[3]) == "mixed.jsonl:6: year 'soon' is not a year"


def test_a_paper_listed_twice_is_folded_and_a_conflicting_id_names_both_lines(workdir):
    other = json.dumps({"id": "g1", "title": "Good 1", "abstract": "Another abstract under the same id."})
    write(workdir, "twice.jsonl", "\n".join([good(1), good(2), good(1)]))
    write(workdir, "conflict.jsonl", "\n".join([good(1), good(2), other]))
    write(workdir, "conflict.bib", "@misc{k, abstract = {First.}}\n@misc{k, abstract = {Second.}}\n")

    twice = load_corpus("twice.jsonl")
    assert [p.title for p in twice.papers] == ["Good 1", "Good 2"] and twice.skipped == ()

    with pytest.raises(RecordError, match=r"^conflict.jsonl:3: duplicate id g1 with other content than line 1"):
        load_corpus("conflict.jsonl")
    kept = load_corpus("conflict.jsonl", skip_invalid=True)
    assert [p.abstract for p in kept.papers] == ["A fine abstract 1.", "A fine abstract 2."]
    reason = "duplicate id g1 with other content than line 1"
    assert kept.skipped == (SkippedRecord(path="conflict.jsonl", line=3, reason=reason),)

    with pytest.raises(RecordError, match=r"^conflict.bib:2: duplicate id k with other content than line 1"):
        load_corpus("conflict.bib")
    assert [p.abstract for p in load_corpus("conflict.bib", skip_invalid=True).papers] == ["First."]


@pytest.mark.parametrize("name", ["notes.pdf", "corpus", "papers.json"])
def test_unknown_extension_lists_the_supported_ones(workdir, name):
    write(workdir, name, good(1))

    with pytest.raises(CorpusError) as raised:
        load_corpus(name)
    assert raised.value.message.startswith(name)
    assert all(ext in raised.value.hint for ext in (".txt", ".jsonl", ".csv", ".bib"))


def test_missing_file_directory_and_empty_file_are_corpus_errors(workdir):
    (workdir / "folder.jsonl").mkdir()
    write(workdir, "empty.jsonl", "\n\n")
    write(workdir, "header-only.txt", "论文检索\n")

    for name, message in [
        ("absent.jsonl", "absent.jsonl: no such file"),
        ("folder.jsonl", "folder.jsonl is a directory"),
        ("empty.jsonl", "empty.jsonl: no records found"),
        ("header-only.txt", "header-only.txt: no records found"),
    ]:
        with pytest.raises(CorpusError) as raised:
            load_corpus(name)
        assert not isinstance(raised.value, RecordError)
        assert raised.value.message.startswith(message) and raised.value.hint


def test_corrupt_gzip_is_a_corpus_error(workdir):
    write(workdir, "fake.jsonl.gz", good(1))

    with pytest.raises(CorpusError, match="not a valid gzip file"):
        load_corpus("fake.jsonl.gz")


# --- stable ids -----------------------------------------------------------------------------


def test_ids_are_the_same_on_every_load():
    for name in ("listing.txt", "papers.jsonl", "papers.csv", "papers.bib"):
        assert [p.id for p in load_corpus(FIXTURES / name).papers] == [
            p.id for p in load_corpus(FIXTURES / name).papers
        ]
    # Pinned, so a change to hashing or normalisation (which would re-embed every corpus) shows.
    assert load_corpus(FIXTURES / "listing.txt").papers[0].id == "8778ec208bf4eb23"


def test_record_without_id_gets_the_hash_of_title_authors_and_abstract():
    paper = load_corpus(FIXTURES / "papers.jsonl").papers[2]

    assert paper.id == stable_id("No Id Here", "Emmy Noether", "Symmetries give conservation laws.")


def test_changing_the_abstract_changes_the_content_hash_not_the_own_id(workdir):
    write(workdir, "a.jsonl", '{"id": "own", "title": "T", "abstract": "Before."}')
    write(workdir, "b.jsonl", '{"id": "own", "title": "T", "abstract": "After."}')

    before, after = load_corpus("a.jsonl").papers[0], load_corpus("b.jsonl").papers[0]
    assert before.id == after.id == "own"
    assert before.content_hash != after.content_hash


# --- at scale -------------------------------------------------------------------------------


@pytest.mark.slow
def test_scale_corpus_loads_whole_with_years_from_venues():
    result = load_corpus(shared_file("data/scale_corpus.jsonl.gz"))

    assert len(result.papers) == 13_687 and result.skipped == ()
    assert all(p.year is not None and p.venue.endswith(str(p.year)) for p in result.papers)
    assert min(p.year for p in result.papers) >= 2023


def test_a_file_is_read_a_record_at_a_time(tmp_path):
    lines = [json.dumps({"id": f"p{i}", "title": f"Paper {i}", "abstract": f"Abstract {i}."}) for i in range(2)]
    path = tmp_path / "papers.jsonl.gz"
    path.write_bytes(gzip.compress("\n".join([*lines, '{"id": "p2", "title": ']).encode()))

    stream = read_corpus(path)
    # The first papers come out before the reading reaches the broken third line.
    assert [next(stream).id, next(stream).id] == ["p0", "p1"]
    with pytest.raises(RecordError, match=r"papers\.jsonl\.gz:3: invalid JSON"):
        next(stream)
    assert count_papers(path, skip_invalid=True) == 2
    with pytest.raises(RecordError, match=r":3: "):
        count_papers(path)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["big.jsonl.gz", "big.csv", "big.txt"])
def test_reading_a_large_file_holds_one_record_at_a_time(tmp_path, name):
    import csv
    import io
    import tracemalloc

    abstract = "A sentence of the abstract that says little. " * 100  # 4.6 kB
    n = 3000
    path = tmp_path / name
    if name.endswith(".jsonl.gz"):
        body = "\n".join(json.dumps({"id": f"p{i}", "title": f"T {i}", "abstract": abstract}) for i in range(n))
        path.write_bytes(gzip.compress(body.encode()))
    elif name.endswith(".csv"):
        out = io.StringIO()
        csv.writer(out).writerows([("id", "title", "abstract"), *((f"p{i}", f"T {i}", abstract) for i in range(n))])
        path.write_text(out.getvalue())
    else:
        path.write_text("header\n\n" + "".join(f"Cat {i}\n\nA. Author\n\n{abstract}{i}\n\n" for i in range(n)))
    size = n * len(abstract)

    tracemalloc.start()
    try:
        read = sum(1 for _ in read_corpus(path))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    assert read == n
    assert peak < size / 20, f"reading {size / 2**20:.0f} MB of abstracts peaked at {peak / 2**20:.1f} MB"



def test_an_upload_is_read_by_its_name_and_errors_name_it():
    good = load_upload("mine.jsonl", b'{"id": "x", "title": "T", "abstract": "An abstract."}\n')
    assert [p.id for p in good.papers] == ["x"]
    with pytest.raises(RecordError, match=r"^mine\.jsonl:1: "):
        load_upload("mine.jsonl", b'{"id": "x", "title": "T"}\n')
    skipped = load_upload("mine.jsonl", b'{"id": "x", "title": "T"}\n', skip_invalid=True)
    assert [str(s).split(":")[:2] for s in skipped.skipped] == [["mine.jsonl", "1"]]
    with pytest.raises(CorpusError, match=r"^notes\.docx"):
        load_upload("notes.docx", b"hello")


# --- size limits ----------------------------------------------------------------------------

LONG = "word " * 5000  # 5,000 cl100k tokens, 25 kB: a whole paper, not an abstract
TOO_LONG = "abstract is 5,000 tokens; the limit is 2,000 (PAPERCHAT_MAX_ABSTRACT_TOKENS)"


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("big.jsonl", "\n".join([good(1), json.dumps({"id": "long", "abstract": LONG}), good(3)])),
        ("big.csv", f"id,abstract\ng1,A fine abstract 1.\nlong,{LONG}\ng3,A fine abstract 3.\n"),
        ("big.bib", f"@misc{{g1, abstract = {{A fine abstract 1.}}}}\n@misc{{long, abstract = {{{LONG}}}}}\n"
                    "@misc{g3, abstract = {A fine abstract 3.}}\n"),
        ("big.txt", f"header\n\nCat\n\nA. Author\n\nA fine abstract 1.\n\nCat\n\nB. Author\n\n{LONG}\n\n"
                    "Cat\n\nC. Author\n\nA fine abstract 3.\n"),
    ],
)
def test_an_abstract_over_the_token_limit_is_a_bad_record_in_every_format(workdir, name, text):
    write(workdir, name, text)
    line = {"big.jsonl": 2, "big.csv": 3, "big.bib": 2, "big.txt": 9}[name]

    with pytest.raises(RecordError) as raised:
        load_corpus(name)
    assert str(raised.value).startswith(f"{name}:{line}: {TOO_LONG}")
    assert "PAPERCHAT_MAX_ABSTRACT_TOKENS" in raised.value.hint and "--skip-invalid" in raised.value.hint
    with pytest.raises(RecordError, match=f"^{name}:{line}: abstract is 5,000 tokens"):
        count_papers(name)  # the check `paperchat ingest` makes before it writes anything

    result = load_corpus(name, skip_invalid=True)
    assert [p.abstract for p in result.papers] == ["A fine abstract 1.", "A fine abstract 3."]
    assert result.skipped == (SkippedRecord(path=name, line=line, reason=TOO_LONG),)


def test_the_limit_counts_tokens_and_is_a_setting(monkeypatch):
    # The bundled corpus's longest abstract in tokens is line 1's: 317 tokens in 1,506 characters.
    monkeypatch.setenv("PAPERCHAT_MAX_ABSTRACT_TOKENS", "317")
    assert len(load_corpus(PAPERS, limits=Settings().limits).papers) == 20
    monkeypatch.setenv("PAPERCHAT_MAX_ABSTRACT_TOKENS", "316")
    limits = Settings().limits
    with pytest.raises(RecordError, match=r"papers\.jsonl:1: abstract is 317 tokens; the limit is 316 "):
        load_corpus(PAPERS, limits=limits)
    result = load_corpus(PAPERS, skip_invalid=True, limits=limits)
    assert [s.line for s in result.skipped] == [1]
    # Tokens, not characters: the longest abstract in characters (1,553) is 291 tokens.
    assert max(len(p.abstract) for p in result.papers) == 1553
    # The default, read from no environment, is generous: three times the longest real abstract.
    assert Settings.model_construct().max_abstract_tokens == 2000
    assert len(load_corpus(PAPERS).papers) == 20


def test_an_abstract_that_spells_a_special_token_is_text(workdir):
    write(workdir, "special.jsonl", json.dumps({"id": "s", "abstract": "We train on <|endoftext|> markers."}))

    [paper] = load_corpus("special.jsonl", limits=Settings(max_abstract_tokens=11).limits).papers
    assert [c.text for c in chunk_paper(paper)] == ["We train on <|endoftext|> markers."]
    with pytest.raises(RecordError, match="abstract is 11 tokens; the limit is 10 "):
        load_corpus("special.jsonl", limits=Settings(max_abstract_tokens=10).limits)


def limits(**values: int) -> Limits:
    return Settings(**values).limits


def test_an_upload_over_the_size_limit_is_refused_before_it_is_read(monkeypatch):
    import rag.corpus.upload

    line = json.dumps({"id": "u", "abstract": "An abstract."}).encode()
    exactly = line + b" " * ((1 << 20) - len(line))
    assert [p.id for p in load_upload("one.jsonl", exactly, limits=limits(max_upload_mb=1)).papers] == ["u"]

    def unread(*args):
        raise AssertionError("a refused upload was read")

    monkeypatch.setattr(rag.corpus.upload, "read_upload", unread)
    with pytest.raises(CorpusError) as raised:
        load_upload("big.jsonl", exactly + b" ", limits=limits(max_upload_mb=1))
    assert raised.value.message == "big.jsonl is over 1 MB, the most an upload may be (PAPERCHAT_MAX_UPLOAD_MB)"
    assert "paperchat ingest" in raised.value.hint
    bomb = gzip.compress(exactly + b"\n" * (1 << 20))  # 1 kB that inflates to 2 MB
    assert len(bomb) < 10_000
    with pytest.raises(CorpusError, match=r"^bomb\.jsonl\.gz is over 1 MB decompressed, "):
        load_upload("bomb.jsonl.gz", bomb, limits=limits(max_upload_mb=1))


@pytest.mark.slow
def test_an_upload_past_the_record_limit_is_refused_at_that_record():
    two = "\n".join([good(1), good(2)]).encode()
    assert len(load_upload("two.jsonl", two, limits=limits(max_upload_records=2)).papers) == 2

    # Line 4 is broken: a strict load stops at the third record, never reaching it.
    four = "\n".join([good(1), "not json", good(3), "{"]).encode()
    with pytest.raises(CorpusError) as raised:
        load_upload("four.jsonl", four, skip_invalid=True, limits=limits(max_upload_records=2))
    assert not isinstance(raised.value, RecordError)
    assert raised.value.message == "four.jsonl holds over 2 records, the most an upload may hold (PAPERCHAT_MAX_UPLOAD_RECORDS)"
    assert "paperchat ingest" in raised.value.hint
    # A corpus read from a path has no record cap: that is `paperchat ingest`'s 100k-paper file.
    assert count_papers(shared_file("data/scale_corpus.jsonl.gz"), limits=limits(max_upload_records=2)) == 13_687


@pytest.mark.parametrize(
    "name", ["../../escaped.jsonl", "{tmp}/escaped.jsonl", "..\\..\\escaped.jsonl", "a\x00b.jsonl", "x" * 300 + ".jsonl"]
)
def test_a_hostile_upload_name_is_never_a_path(tmp_path, monkeypatch, name):
    name = name.format(tmp=tmp_path)  # an absolute path
    temp = tmp_path / "temp" / "deep"
    temp.mkdir(parents=True)
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    data = (good(1) + '\n{"id": "g2"}\n').encode()

    result = load_upload(name, data, skip_invalid=True)
    assert [p.id for p in result.papers] == ["g1"]
    assert [str(s) for s in result.skipped] == [f"{name}:2: missing abstract"]
    with pytest.raises(RecordError) as raised:
        load_upload(name, data)
    assert raised.value.path == name and raised.value.line == 2
    # The copies went to their temporary folders, which are gone; nothing was written elsewhere.
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == []


@pytest.mark.parametrize("name", ["..", ".", "", "/", "a/.."])
def test_an_upload_name_with_no_extension_is_a_corpus_error_naming_it(name):
    with pytest.raises(CorpusError) as raised:
        load_upload(name, good(1).encode())
    assert raised.value.message == f"{name}: no extension to tell its format"
