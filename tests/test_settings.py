from __future__ import annotations

from pathlib import Path

from rag.settings import Settings


def test_environment_overrides_defaults(monkeypatch, tmp_path):
    monkeypatch.setenv("PAPERCHAT_K", "7")
    monkeypatch.setenv("PAPERCHAT_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    settings = Settings()
    assert settings.k == 7
    assert settings.data_dir == tmp_path
    assert settings.has_openai_key and settings.openai_api_key.get_secret_value() == "sk-test"


def test_toml_file_is_read_and_environment_wins(monkeypatch, tmp_path):
    config = tmp_path / "paperchat.toml"
    config.write_text('k = 9\nbackend = "extractive"\nbm25_weight = 2.0\n')
    monkeypatch.setenv("PAPERCHAT_CONFIG", str(config))
    monkeypatch.setenv("PAPERCHAT_BM25_WEIGHT", "0.5")
    settings = Settings()
    assert (settings.k, settings.backend, settings.bm25_weight) == (9, "extractive", 0.5)


def test_no_key_by_default(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    settings = Settings()
    assert not settings.has_openai_key
    assert isinstance(settings.data_dir, Path)
