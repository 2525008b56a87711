"""Saved conversations on disk: one readable JSON file each, read back whole by a store made
afresh (a restart), listed newest first, renamed and deleted; bad files and ids refused by name."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime, timedelta

import pytest

from rag.answering.chain import Assistant
from rag.conversations import FORMAT, TITLE_CHARS, Conversation, ConversationStore, added, started, title_for
from rag.errors import ConversationError, ConversationNotFoundError
from rag.records import (
    Answer,
    Answerability,
    Citation,
    CollectionMatch,
    ComparisonTable,
    Coverage,
    Filters,
    Paper,
    QuestionAnalysis,
    QuestionType,
    ResearchCell,
    ResearchRow,
    ResearchTable,
    Source,
    TableCell,
    TableRow,
)
from rag.settings import Settings

T0 = datetime(2025, 6, 1, 9, 30, tzinfo=UTC)
MOH = Paper(
    id="moh",
    title="MoH: Multi-Head Attention as Mixture-of-Head Attention",
    authors=("Peng Jin", "Bo Zhu"),
    abstract="We propose Mixture-of-Head attention (MoH). MoH uses 50%$\\sim$90% of the heads.",
    category="Deep Learning · Attention Mechanisms",
    venue="ICML 2025",
    year=2025,
    url="https://icml.cc/virtual/2025/poster/44579",
    extra={"doi": "10.0/moh"},
)


def answer(question: str = "Which papers make attention cheaper?") -> Answer:
    """An answer with every part a turn can have: citations, sources, analysis, a table..."""
    return Answer(
        question=question,
        standalone_question=question,
        text="**MoH** routes tokens to fewer heads [1].",
        note="No abstract gives a figure for latency.",
        citations=(
            Citation(
                number=1, paper_id="moh", title=MOH.title, authors=MOH.authors, url=MOH.url,
                citing_sentence="MoH routes tokens to fewer heads [1].", support="MoH uses 50%∼90% of the heads.",
                support_score=0.8, supported=False, unsupported_numbers=("40%",),
            ),
        ),
        sources=(Source(number=1, paper=MOH, score=0.9, dense_similarity=0.7, bm25_rank=1),),
        invalid_citations=(3,),
        backend="extractive",
        form="collection",
        analysis=QuestionAnalysis(
            question=question, cleaned=question, search_text=question, focus="attention cheaper",
            type=QuestionType.COLLECTION, filters=Filters(venue="ICML"),
        ),
        answerability=Answerability(coverage=Coverage.PARTLY, missing=("latency",), best_similarity=0.5),
        closest=(Source(number=2, paper=MOH, score=0.1),),
        matches=(CollectionMatch(number=1, sentence="We propose MoH.", relevance=0.9, group="attention"),),
        table=ComparisonTable(
            aspects=("method", "result"),
            rows=(TableRow(number=1, paper="MoH", cells=(TableCell(text="heads as experts"), TableCell())),),
        ),
        filters=Filters(year_min=2024),
        created="2025-06-01T09:30:00+00:00",
        timings={"retrieve": 0.12},
    )


@pytest.fixture
def store(tmp_path) -> ConversationStore:
    return ConversationStore(Settings(data_dir=tmp_path).conversations_dir)


def test_the_folder_is_under_the_data_dir(tmp_path):
    assert Settings(data_dir=tmp_path).conversations_dir == tmp_path / "conversations"


def test_every_part_of_an_answer_is_read_back_by_a_new_store(store):
    saved = store.add_turn(answer(), now=T0)
    saved = store.add_turn(answer("And how?"), to=saved.id, now=T0 + timedelta(minutes=1))
    # A new store on the same folder: what a restarted app sees.
    again = ConversationStore(store.folder).load(saved.id)
    assert again == saved
    assert again.turns == (answer(), answer("And how?"))
    assert again.turns[0].citations[0].supported is False and again.turns[0].table == answer().table
    assert (again.created, again.updated) == (T0, T0 + timedelta(minutes=1))


@pytest.mark.slow
@pytest.mark.semantic
def test_a_real_answer_with_citations_round_trips(seed_index, tmp_path):
    real = Assistant(seed_index, seed_index.settings).ask("Which papers make attention cheaper, and how?")
    assert real.citations and real.sources and real.analysis is not None
    store = ConversationStore(tmp_path)
    saved = store.add_turn(real)
    assert ConversationStore(tmp_path).load(saved.id).turns == (real,)


def test_one_indented_json_file_per_conversation_that_a_person_can_read(store):
    saved = store.add_turn(answer(), now=T0)
    [path] = store.folder.iterdir()
    assert path.name == f"{saved.id}.json" and saved.id.startswith("20250601-093000-")
    text = path.read_text(encoding="utf-8")
    assert text.startswith('{\n  "format": 1,\n  "id": ')
    assert "50%∼90%" in text, "written as Unicode, not \\u escapes"
    data = json.loads(text)
    assert (data["format"], data["title"], data["created"]) == (FORMAT, "Which papers make attention cheaper?", "2025-06-01T09:30:00Z")
    assert data["turns"][0]["citations"][0]["paper_id"] == "moh"


def test_the_list_is_newest_first_with_titles_and_turn_counts(store):
    older = store.add_turn(answer("First question?"), now=T0)
    newer = store.add_turn(answer("Second question?"), now=T0 + timedelta(hours=1))
    # A turn added to the older one makes it the newest.
    store.add_turn(answer("More?"), to=older.id, now=T0 + timedelta(hours=2))
    listing = ConversationStore(store.folder).list()
    assert [(c.id, c.title, c.turns) for c in listing.conversations] == [
        (older.id, "First question?", 2),
        (newer.id, "Second question?", 1),
    ]
    assert listing.conversations[0].updated == T0 + timedelta(hours=2)
    assert listing.skipped == ()


def test_an_empty_or_missing_folder_lists_nothing(tmp_path):
    listing = ConversationStore(tmp_path / "never-made").list()
    assert listing.conversations == () and listing.skipped == ()


def test_rename_changes_the_file_and_keeps_the_order(store):
    older = store.add_turn(answer("First?"), now=T0)
    newer = store.add_turn(answer("Second?"), now=T0 + timedelta(hours=1))
    renamed = store.rename(older.id, "  Attention,\n cheaper ")
    assert renamed.title == "Attention, cheaper" and renamed.updated == older.updated
    assert ConversationStore(store.folder).load(older.id).title == "Attention, cheaper"
    assert [c.id for c in store.list().conversations] == [newer.id, older.id]
    with pytest.raises(ConversationError, match="cannot be blank") as caught:
        store.rename(older.id, " \n ")
    assert str(store.path(older.id)) in caught.value.message
    with pytest.raises(ConversationNotFoundError):
        store.rename("20250101-000000-abcdef", "Gone")


def test_a_turn_is_added_to_the_file_as_it_is_now(store):
    saved = store.add_turn(answer(), now=T0)
    # Renamed from another tab meanwhile: the next turn keeps the new title.
    ConversationStore(store.folder).rename(saved.id, "Mine")
    assert store.add_turn(answer("And how?"), to=saved.id, now=T0).title == "Mine"
    # Deleted from another tab meanwhile: the turn starts a new conversation.
    store.delete(saved.id)
    again = store.add_turn(answer("Still there?"), to=saved.id, now=T0)
    assert again.id != saved.id and [t.question for t in again.turns] == ["Still there?"]
    assert [c.id for c in store.list().conversations] == [again.id]


def test_delete_removes_the_file_and_deleting_again_is_no_error(store):
    kept = store.add_turn(answer("Kept?"), now=T0)
    gone = store.add_turn(answer("Gone?"), now=T0)
    store.delete(gone.id)
    assert sorted(p.name for p in store.folder.iterdir()) == [f"{kept.id}.json"]
    store.delete(gone.id)
    with pytest.raises(ConversationNotFoundError, match="no such saved conversation"):
        store.load(gone.id)


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        ('{"format": 1, "id": "x", "ti', "Invalid JSON"),
        ('{"format": 1, "id": "x", "title": "t", "created": "yesterday", "updated": "2025-06-01T09:30:00Z"}', "created"),
        ('{"format": 1, "id": "x", "title": "t", "created": "2025-06-01T09:30:00", "updated": "2025-06-01T09:30:00Z"}', "timezone"),
        ('{"format": 1, "id": "x", "title": "t", "created": "2025-06-01T09:30:00Z", "updated": "2025-06-01T09:30:00Z", "turns": [{}]}', "turns.0"),
        ('{"format": 2, "id": "x", "title": "t", "created": "2025-06-01T09:30:00Z", "updated": "2025-06-01T09:30:00Z"}', "newer PaperChat"),
        (b"\xff\xfe not UTF-8", "cannot read"),
    ],
)
def test_a_bad_file_is_skipped_by_the_list_and_named_by_load(store, content, reason):
    good = store.add_turn(answer(), now=T0)
    bad = store.folder / "20250101-000000-abcdef.json"
    if isinstance(content, bytes):
        bad.write_bytes(content)
    else:
        bad.write_text(content, encoding="utf-8")
    listing = store.list()
    assert [c.id for c in listing.conversations] == [good.id], "one bad file hides no other"
    [skipped] = listing.skipped
    assert skipped.path == str(bad) and reason in skipped.reason and skipped.hint
    with pytest.raises(ConversationError) as caught:
        store.load("20250101-000000-abcdef")
    assert not isinstance(caught.value, ConversationNotFoundError)
    assert caught.value.message.startswith(f"{bad}: ") and reason in caught.value.message
    assert caught.value.hint


def test_a_file_whose_name_is_no_id_is_named_in_the_list(store):
    store.add_turn(answer(), now=T0)
    odd = store.folder / "My notes.json"
    odd.write_text("{}", encoding="utf-8")
    [skipped] = store.list().skipped
    assert skipped.path == str(odd) and "not a conversation id" in skipped.reason


def test_a_copied_file_is_a_conversation_of_its_own(store):
    saved = store.add_turn(answer(), now=T0)
    copy = store.folder / "20990101-000000-c0ffee.json"
    copy.write_bytes(store.path(saved.id).read_bytes())
    store.rename(copy.stem, "The copy")
    assert {c.id: c.title for c in store.list().conversations} == {
        saved.id: saved.title,
        copy.stem: "The copy",
    }


@pytest.mark.parametrize(
    "unsafe", ["../outside", "..", "a/b", "/etc/passwd", "", ".hidden", "x.json", "UPPER", "a b", "a\x00b", "x" * 65]
)
def test_an_id_no_file_can_have_is_refused_before_any_file_is_touched(store, tmp_path, unsafe):
    store.add_turn(answer(), now=T0)
    before = sorted(tmp_path.rglob("*"))
    for act in (store.load, store.delete, lambda id: store.rename(id, "t")):
        with pytest.raises(ConversationNotFoundError, match="is not a conversation id"):
            act(unsafe)
    with pytest.raises(ConversationNotFoundError):
        store.save(started(answer(), T0).model_copy(update={"id": unsafe}))
    assert sorted(tmp_path.rglob("*")) == before


def test_a_save_that_fails_leaves_the_previous_version_whole(store, monkeypatch):
    saved = store.add_turn(answer(), now=T0)
    before = store.path(saved.id).read_bytes()

    def crash(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", crash)
    with pytest.raises(ConversationError, match="No space left on device") as caught:
        store.add_turn(answer("And how?"), to=saved.id, now=T0)
    assert caught.value.message.startswith(str(store.path(saved.id)))
    assert store.path(saved.id).read_bytes() == before
    assert [p.name for p in store.folder.iterdir()] == [f"{saved.id}.json"], "no temporary file left behind"


def test_titles_are_the_first_question_shortened_at_a_word():
    assert title_for("  Which papers make\n attention cheaper? ") == "Which papers make attention cheaper?"
    long = title_for("How do the papers on federated learning keep the clients' data private and the model accurate?")
    assert long.endswith("…") and len(long) <= TITLE_CHARS + 1
    assert "federated learning keep the" in long and not long[:-1].endswith(" ")
    assert title_for("x" * 100) == "x" * TITLE_CHARS + "…"
    assert title_for("What does $\\alpha$-entmax do?") == "What does α-entmax do?"
    assert title_for("  ") == "Untitled"


def test_a_turn_added_moves_updated_and_keeps_the_rest():
    first = started(answer(), T0)
    later = added(first, answer("And how?"), T0 + timedelta(seconds=1))
    assert (later.id, later.title, later.created) == (first.id, first.title, first.created)
    assert later.updated == T0 + timedelta(seconds=1) and len(later.turns) == 2
    assert isinstance(later, Conversation) and first.turns == (answer(),)


def _table(source: str = "Which papers make attention cheaper?") -> ResearchTable:
    cell = ResearchCell(quote="We route tokens to heads.", covered=True, closest="We route tokens to heads.", score=0.8)
    return ResearchTable(columns=("method",), rows=(ResearchRow(paper_id="moh", title="MoH", cells=(cell,)),), source=source)


def test_a_table_is_kept_with_its_conversation_and_read_back_whole(store):
    first = store.add_turn(answer(), now=datetime(2026, 12, 1, 9, tzinfo=UTC))
    saved = store.save_table(_table(), to=first.id, now=datetime(2026, 12, 1, 10, tzinfo=UTC))
    reopened = ConversationStore(store.folder).load(first.id)
    assert reopened.table == _table() and reopened.turns == first.turns
    assert saved.updated == reopened.updated == datetime(2026, 12, 1, 10, tzinfo=UTC)
    # A turn added later keeps the table.
    store.add_turn(answer("And the second?"), to=first.id)
    assert store.load(first.id).table == _table()


def test_a_table_with_no_open_conversation_starts_one_titled_by_its_rows(store):
    saved = store.save_table(_table("Which papers release code?"))
    assert saved.title == "Table: Which papers release code?" and saved.turns == ()
    assert [c.id for c in store.list().conversations] == [saved.id]
    # A deleted conversation's table starts a new one rather than failing.
    store.delete(saved.id)
    again = store.save_table(_table(), to=saved.id)
    assert again.id != saved.id and store.load(again.id).table == _table()


def test_a_file_from_before_tables_reads_with_none(store):
    first = store.add_turn(answer())
    path = store.path(first.id)
    data = json.loads(path.read_text())
    del data["table"]
    path.write_text(json.dumps(data))
    assert store.load(first.id).table is None


def test_a_row_is_dated_by_its_last_turn_today_as_a_time_else_as_a_day():
    from zoneinfo import ZoneInfo

    from rag.conversations import when

    now = datetime(2026, 12, 5, 14, 30, tzinfo=UTC)
    assert when(datetime(2026, 12, 5, 14, 2, tzinfo=UTC), now) == "14:02"
    assert when(datetime(2026, 12, 4, 23, 59, tzinfo=UTC), now) == "Dec 4"
    assert when(datetime(2025, 12, 5, 14, 2, tzinfo=UTC), now) == "Dec 5, 2025"
    # In the reader's zone: 23:30 UTC on Dec 4 is already Dec 5 in Berlin, so today.
    berlin = now.astimezone(ZoneInfo("Europe/Berlin"))
    assert when(datetime(2026, 12, 4, 23, 30, tzinfo=UTC), berlin) == "00:30"


def test_rows_of_one_title_are_told_apart_by_their_time_then_by_a_number():
    from rag.conversations import ConversationSummary, row_dates

    def row(id: str, title: str, updated: datetime) -> ConversationSummary:
        return ConversationSummary(id=id, title=title, updated=updated, turns=1)

    now = datetime(2026, 12, 5, 18, 0, tzinfo=UTC)
    rows = [
        row("e", "Bandits?", datetime(2026, 12, 5, 14, 2, 40, tzinfo=UTC)),
        row("d", "Bandits?", datetime(2026, 12, 5, 14, 2, 10, tzinfo=UTC)),
        row("c", "Attention?", datetime(2026, 12, 3, 11, 0, tzinfo=UTC)),
        row("b", "Bandits?", datetime(2026, 12, 3, 10, 15, tzinfo=UTC)),
        row("a", "Bandits?", datetime(2026, 12, 3, 9, 5, tzinfo=UTC)),
    ]
    dates = row_dates(rows, now)
    assert dates == ["14:02 (2)", "14:02 (1)", "Dec 3", "Dec 3, 10:15", "Dec 3, 09:05"]
    assert len({(r.title, d) for r, d in zip(rows, dates, strict=True)}) == len(rows), "no two rows read alike"
    # A title of its own keeps the short date.
    assert row_dates(rows[2:4], now) == ["Dec 3", "Dec 3"]


def test_rows_whose_titles_read_alike_until_the_row_is_cut_show_where_they_part():
    from rag.conversations import ConversationSummary, row_titles

    def row(id: str, title: str) -> ConversationSummary:
        return ConversationSummary(id=id, title=title, updated=datetime(2026, 12, 5, 14, 2, tzinfo=UTC), turns=1)

    rows = [
        row("d", "Table: Which papers are about bandits?"),
        row("c", "Table: Which papers are about graph neural networks?"),
        row("b", "List papers on optimization"),
        row("a", "List papers on optimizers"),
    ]
    shown = row_titles(rows, ["14:02"] * 4)
    assert shown[:2] == ["Table: … bandits?", "Table: … graph neural networks?"]
    # These part within the row ("14:02 List papers on optimiz" and then "a" or "e"), so they stay whole.
    assert shown[2:] == ["List papers on optimization", "List papers on optimizers"]
    # A longer date, or the open conversation's row, leaves less room: there the two part too
    # late, and the row shows its own end.
    assert row_titles(rows[2:], ["Dec 3, 10:15 (2)", "Dec 3, 10:15 (1)"]) == ["List … optimization", "List … optimizers"]
    assert row_titles(rows[2:], ["14:02"] * 2, open_id="a") == ["List papers on optimization", "List … optimizers"]
