"""The API key, and the credentials OPENAI_BASE_URL may carry (a password, a key in its query),
never leave the requests they authorize: canaries are set, every command that can print, write a
report or export runs against a server that answers and one that fails (and echoes the key in
its error, as some do), and then everything printed or written is searched for them."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import PAPERS, SEED_SET, run_cli
from fake_openai import FakeOpenAI

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("no_proxy")]

KEY = "sk-canary-5f1d0c8e9a7b4e21"
PASSWORD = "pw-canary-0b3e77c1"
QUERY_KEY = "qk-canary-9d41a6f2"
CANARIES = (KEY, PASSWORD, QUERY_KEY)
REPLY = "Mixture-of-Head attention lets each token select the attention heads it needs [1]."
QUESTION = "How does MoH make attention cheaper?"


def written(folder: Path) -> dict[Path, bytes]:
    return {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def test_the_key_is_in_no_output_report_export_or_error(tmp_path):
    data_dir, out = tmp_path / "index", tmp_path / "out"
    out.mkdir()
    printed: list[str] = []

    def paperchat(*args: str, server: FakeOpenAI) -> int:
        # A key in the query only where the server fails: the client appends its paths after it.
        url = server.base_url.replace("http://", f"http://paperchat:{PASSWORD}@")
        url += f"?api_key={QUERY_KEY}" if server.status != 200 else ""
        done = run_cli(data_dir, *args, check=False, env={
            "OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": url, "PAPERCHAT_OPENAI_MODEL": "fake",
            "PAPERCHAT_MAX_RETRIES": "0", "PAPERCHAT_REPORTS_DIR": str(out / "reports"),
        })
        printed.extend([done.stdout, done.stderr])
        return done.returncode

    with FakeOpenAI(reply=REPLY) as server:
        assert paperchat("ingest", str(PAPERS), server=server) == 0
        assert paperchat("ask", QUESTION, "--export", str(out / "answer.md"), server=server) == 0
        assert paperchat("ask", QUESTION, "--export", str(out / "cited.bib"), server=server) == 0
        assert paperchat("ask", QUESTION, "--json", server=server) == 0
        assert paperchat("summarize", "MoH", server=server) == 0
        assert paperchat("eval", "--set", str(SEED_SET), "--limit", "2", "--judge", "llm", server=server) == 0
        assert paperchat("stats", server=server) == 0
        authorized = {r.get("path") for r in server.requests}
    echoing = {"error": {"message": f"Incorrect API key provided: {KEY}", "type": "invalid_request_error", "code": None}}
    for status in (400, 401, 500):
        with FakeOpenAI(status=status, error_body=echoing) as server:
            assert paperchat("ask", QUESTION, server=server) == 1
            assert paperchat("eval", "--set", str(SEED_SET), "--limit", "1", "--judge", "similarity", server=server) == 1

    assert "/v1/chat/completions" in authorized, "the key was used: the model was asked"
    assert any("failed" in text for text in printed), "the failures were reported"
    leaks = [text for text in printed if any(c in text for c in CANARIES)]
    assert not leaks, leaks[0][:500]
    assert any("http://***@127.0.0.1" in text for text in printed), "the server is named, its credentials hidden"
    files = {**written(out), **written(data_dir)}
    assert {"answer.md", "cited.bib", "report.json", "report.md"} <= {p.name for p in files}
    assert not [p for p, data in files.items() if any(c.encode() in data for c in CANARIES)]
