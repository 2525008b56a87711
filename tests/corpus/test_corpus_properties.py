"""Property tests of every corpus loader: whatever the bytes and whatever the name, a load gives
valid papers or raises one of our errors (a message, a hint, file:line for a record), strict or
skipping, and every entry point agrees with `load_corpus`."""

from __future__ import annotations

import csv
import gzip
import io
import json
import tempfile
from collections.abc import Callable
from pathlib import Path

from hypothesis import example, given
from hypothesis import strategies as st

from rag.corpus import reading as corpus
from rag.corpus import upload
from rag.corpus.tokens import count_tokens
from rag.errors import CorpusError, PaperChatError, RecordError
from rag.records import Limits, LoadResult, Paper, SkippedRecord, normalize_space
from rag.settings import Settings

LOADERS: dict[str, Callable[..., LoadResult]] = {
    ".jsonl": corpus.load_jsonl,
    ".csv": corpus.load_csv,
    ".bib": corpus.load_bibtex,
    ".txt": corpus.load_listing,
}
SUFFIXES = [*LOADERS, *(f"{suffix}.gz" for suffix in LOADERS)]
DEFAULT = Settings.model_construct().limits
# The real limits, and an abstract limit so small that most abstracts are tokenized and over it.
LIMITS = st.sampled_from([DEFAULT, DEFAULT.model_copy(update={"max_abstract_tokens": 4})])
FIELDS = ["id", "_id", "title", "authors", "author", "abstract", "text", "category", "primary_area",
          "venue", "year", "url", "keywords", "ABSTRACT", " Title "]
Outcome = LoadResult | PaperChatError


def outcome(load: Callable[[], LoadResult]) -> Outcome:
    """What a load gives: its result, or the error of ours it raised. Any other exception fails."""
    try:
        return load()
    except PaperChatError as exc:
        return exc


def utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def assert_valid(paper: Paper, limits: Limits) -> None:
    texts = [paper.id, paper.title, *paper.authors, paper.abstract, paper.category, paper.venue, paper.url,
             *paper.extra, *paper.extra.values()]
    # The id hash, the index and every export write a paper as UTF-8.
    assert all(map(utf8, texts)), paper
    assert paper.abstract and paper.abstract == normalize_space(paper.abstract)
    assert count_tokens(paper.abstract) <= limits.max_abstract_tokens
    assert paper.id and paper.id == paper.id.strip() and paper.url == paper.url.strip()
    shown = [paper.title, paper.category, paper.venue, *paper.authors, *paper.extra.values()]
    assert all(text == normalize_space(text) for text in shown)
    assert all(paper.authors) and all(paper.extra.values())
    assert paper.year is None or 0 <= paper.year <= 9999


def assert_ours(error: PaperChatError, lines: int | None = None) -> None:
    """An error a user can act on: a message the CLI can print, a hint, and for a record its line."""
    assert utf8(str(error)) and error.message and error.hint
    if isinstance(error, RecordError):
        assert error.line >= 1 and (lines is None or error.line <= lines + 1)


def assert_sound(result: Outcome, limits: Limits, lines: int | None) -> None:
    if isinstance(result, PaperChatError):
        assert_ours(result, lines)
        return
    for paper in result.papers:
        assert_valid(paper, limits)
    assert len({paper.id for paper in result.papers}) == len(result.papers)
    for skipped in result.skipped:
        assert 1 <= skipped.line <= (lines or skipped.line) and skipped.reason and utf8(str(skipped))


def same(left: Outcome, right: Outcome) -> bool:
    if isinstance(left, PaperChatError) or isinstance(right, PaperChatError):
        return type(left) is type(right) and str(left) == str(right)
    return left == right


def as_upload(result: Outcome, path: Path, filename: str) -> Outcome:
    """`load_corpus`'s outcome on a file as `load_upload` gives it for that file under `filename`."""
    if isinstance(result, RecordError):
        return RecordError(filename, result.line, result.reason, hint=result.hint)
    if isinstance(result, CorpusError):
        return CorpusError(result.message.replace(str(path), filename), hint=result.hint)
    skipped = tuple(s.model_copy(update={"path": filename}) for s in result.skipped)
    return result.model_copy(update={"skipped": skipped})


def check_file(suffix: str, data: bytes, limits: Limits) -> None:
    """Every property of the loaders on one file of these bytes."""
    fmt = suffix.removesuffix(".gz")
    lines = None if suffix.endswith(".gz") else data.count(b"\n") + 1
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"corpus{suffix}"
        path.write_bytes(data)
        results = {}
        for skip in (False, True):
            result = results[skip] = outcome(lambda: corpus.load_corpus(path, skip_invalid=skip, limits=limits))
            assert_sound(result, limits, lines)
            # Every entry point reads the file alike.
            assert same(outcome(lambda: LOADERS[fmt](path, skip_invalid=skip, limits=limits)), result)
            streamed = outcome(lambda: list(corpus.read_corpus(path, skip_invalid=skip, limits=limits)))
            if isinstance(result, LoadResult):
                assert isinstance(streamed, list)
                assert [r for r in streamed if isinstance(r, Paper)] == list(result.papers)
                assert [r for r in streamed if isinstance(r, SkippedRecord)] == list(result.skipped)
                assert corpus.count_papers(path, skip_invalid=skip, limits=limits) == len(result.papers)
            else:
                assert same(streamed, result)
                assert same(outcome(lambda: corpus.count_papers(path, skip_invalid=skip, limits=limits)), result)
            uploaded = outcome(lambda: upload.load_upload(path.name, data, skip_invalid=skip, limits=limits))
            assert same(uploaded, as_upload(result, path, path.name))
    strict, skipping = results[False], results[True]
    if isinstance(strict, LoadResult):
        assert skipping == strict and strict.skipped == ()
    if isinstance(skipping, RecordError):
        # A skipping load stops only where the rest of the file cannot be read: a CSV without an
        # abstract column or with a broken quote. Every other bad record is skipped.
        assert fmt == ".csv" and skipping.reason.startswith(("no abstract column", "malformed CSV"))
    if isinstance(skipping, CorpusError):
        assert isinstance(strict, CorpusError)
    elif skipping.skipped == () and isinstance(strict, RecordError):
        # Strict refuses a byte that is not UTF-8 wherever it is; skipping, only a record holding it.
        assert strict.reason.startswith("not UTF-8")


# --- what goes into the files -----------------------------------------------------------------

# Any JSON value, nested a little.
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)
FIELD = st.sampled_from(FIELDS) | st.text(max_size=8)


@st.composite
def records(draw) -> dict[str, object]:
    """Our field names holding values of any type; often an abstract, and ids that repeat."""
    record = draw(st.dictionaries(FIELD, JSON | st.text(min_size=1, max_size=40), max_size=6))
    if draw(st.booleans()):
        record["abstract"] = draw(st.text(min_size=1, max_size=40) | JSON)
    if draw(st.booleans()):
        record["id"] = draw(st.sampled_from(["p1", "p2"]) | JSON)
    return record


@st.composite
def json_lines(draw) -> bytes:
    """JSON Lines of such records among any JSON and any other lines."""
    line = records().map(json.dumps)
    if draw(st.booleans()):
        line |= JSON.map(json.dumps) | st.text(max_size=30)
    lines = draw(st.lists(line, max_size=8))
    # A lone surrogate is an escape in ASCII JSON; written raw ("surrogatepass") it is bytes that
    # are not UTF-8.
    ascii_only = draw(st.booleans())
    text = "\n".join(json.dumps(json.loads(line), ensure_ascii=ascii_only) if _is_json(line) else line for line in lines)
    return text.encode("utf-8", "surrogatepass")


def _is_json(line: str) -> bool:
    try:
        json.loads(line)
    except ValueError:
        return False
    return True


@st.composite
def csv_files(draw) -> bytes:
    """A header of field names and other words, and rows of any cells, quoted or not."""
    header = draw(st.lists(FIELD, min_size=1, max_size=5))
    if draw(st.booleans()):
        header.insert(draw(st.integers(0, len(header))), "abstract")
    rows = draw(st.lists(st.lists(st.text(max_size=30), max_size=len(header) + 1), max_size=6))
    if draw(st.booleans()):
        out = io.StringIO()
        csv.writer(out).writerows([header, *rows])
        text = out.getvalue()
    else:
        text = "\n".join(",".join(row) for row in [header, *rows])
    return text.encode("utf-8", "surrogatepass")


BIB_PIECES = st.sampled_from(["@article{", "@inproceedings{", "@string{", "@comment{", "key,", "}", "{", "\"",
                              ",", "=", "#", "%", "\\", "\\'{e}", "$", "\n", " ", "abstract = ", "author = ",
                              "title = ", "year = ", "doi = ", "eprint = ", " and ", "{\\\"u}", "\\url{"])


@st.composite
def bibtex_files(draw) -> bytes:
    """Entries whose fields hold any text, with braces, quotes and LaTeX strewn among them."""
    entries = []
    for _ in range(draw(st.integers(0, 3))):
        fields = draw(st.dictionaries(FIELD, st.text(max_size=30), max_size=5))
        body = ",\n".join(f"  {key} = {{{value}}}" for key, value in fields.items())
        entries.append(f"@{draw(st.sampled_from(['article', 'misc', 'book', '']))}{{{draw(st.text(max_size=8))},\n{body}\n}}")
    noise = draw(st.lists(BIB_PIECES | st.text(max_size=5), max_size=20))
    pieces = entries + noise
    return "".join(draw(st.permutations(pieces))).encode("utf-8", "surrogatepass")


@st.composite
def listings(draw) -> bytes:
    """A header and paragraphs of any text, blank lines between some."""
    paragraphs = draw(st.lists(st.text(max_size=40), max_size=10))
    separators = draw(st.lists(st.sampled_from(["\n", "\n\n", "\r\n\r\n", "\n \n\n"]), min_size=len(paragraphs), max_size=len(paragraphs)))
    return "".join(p + s for p, s in zip(paragraphs, separators, strict=True)).encode("utf-8", "surrogatepass")


STRUCTURED = {".jsonl": json_lines(), ".csv": csv_files(), ".bib": bibtex_files(), ".txt": listings()}


@st.composite
def gzipped(draw, data: st.SearchStrategy[bytes]) -> bytes:
    """Bytes gzipped, whole or cut short anywhere."""
    packed = gzip.compress(draw(data), mtime=0)
    cut = draw(st.none() | st.integers(0, len(packed)))
    return packed if cut is None else packed[:cut]


# --- the properties ---------------------------------------------------------------------------


@given(suffix=st.sampled_from(SUFFIXES), data=st.binary(max_size=600), limits=LIMITS)
def test_any_bytes_in_any_format_give_papers_or_our_error(suffix, data, limits):
    check_file(suffix, data, limits)


@given(suffix=st.sampled_from(list(LOADERS)), text=st.text(max_size=300), bom=st.booleans(), limits=LIMITS)
def test_any_text_in_any_format_gives_papers_or_our_error(suffix, text, bom, limits):
    check_file(suffix, (b"\xef\xbb\xbf" if bom else b"") + text.encode("utf-8", "surrogatepass"), limits)


@given(data=json_lines(), limits=LIMITS)
@example(data=b'{"abstract": "A lone half \\udc80 of a pair."}', limits=DEFAULT)
@example(data=b'{"abstract": "Key.", "\\ud800": 1}', limits=DEFAULT)
@example(data=b'[' * 5000, limits=DEFAULT)  # deeper than json.loads can go
@example(data=b'{"abstract": "A.", "year": ' + b'1' * 5000 + b'}', limits=DEFAULT)  # int() refuses 4,300+ digits
@example(data=b'{"abstract": "A.", "year": "' + b'1' * 5000 + b'"}', limits=DEFAULT)
@example(data=b'{"abstract": "A.", "k": ' + b'[' * 900 + b'"\x80"' + b']' * 900 + b'}', limits=DEFAULT)
def test_hostile_json_lines_give_papers_or_our_error(data, limits):
    check_file(".jsonl", data, limits)


@given(data=csv_files(), limits=LIMITS)
def test_hostile_csv_gives_papers_or_our_error(data, limits):
    check_file(".csv", data, limits)


@given(data=bibtex_files(), limits=LIMITS)
def test_hostile_bibtex_gives_papers_or_our_error(data, limits):
    check_file(".bib", data, limits)


@given(data=listings(), limits=LIMITS)
def test_hostile_listings_give_papers_or_our_error(data, limits):
    check_file(".txt", data, limits)


@given(data=st.data(), suffix=st.sampled_from(list(LOADERS)), limits=LIMITS)
def test_gzip_of_any_file_whole_or_cut_short_gives_papers_or_our_error(data, suffix, limits):
    content = STRUCTURED[suffix] | st.binary(max_size=300)
    check_file(f"{suffix}.gz", data.draw(gzipped(content)), limits)


@given(filename=st.text(max_size=40) | st.sampled_from(["..", "../../x.jsonl", "/etc/x.jsonl", "a\0.jsonl", ".gz", "x.jsonl.gz"]),
       data=st.binary(max_size=300) | json_lines(), skip=st.booleans())
def test_an_upload_of_any_name_and_bytes_gives_papers_or_our_error_naming_it(filename, data, skip):
    result = outcome(lambda: upload.load_upload(filename, data, skip_invalid=skip))
    assert_sound(result, DEFAULT, None)
    if isinstance(result, RecordError):
        assert result.path == filename
    elif isinstance(result, PaperChatError):
        # Named as the user knows it, never as the copy in a temporary folder.
        assert tempfile.gettempdir() not in result.message or tempfile.gettempdir() in filename
    else:
        assert all(s.path == filename for s in result.skipped)


@given(filename=st.text(max_size=300))
def test_an_upload_is_copied_under_one_safe_name_in_a_fresh_folder(filename):
    copy = upload.read_upload(filename, b"", lambda path: path)
    name = copy.name
    assert copy.parent.parent == Path(tempfile.gettempdir())
    assert name not in ("", ".", "..") and not name.startswith(".")
    assert not set(name) & {"/", "\\", "\0"} and utf8(name) and len(name.encode()) <= 255
