from __future__ import annotations

import re
from pathlib import Path

import pytest

from rag.errors import ConfigError
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


def test_a_bad_value_names_its_variable_the_value_and_what_is_allowed(monkeypatch):
    monkeypatch.setenv("PAPERCHAT_K", "0")
    monkeypatch.setenv("PAPERCHAT_BACKEND", "bogus")
    with pytest.raises(ConfigError) as raised:
        Settings()
    message = raised.value.message
    assert "PAPERCHAT_K is '0': it should be greater than or equal to 1" in message
    assert "PAPERCHAT_BACKEND is 'bogus': it should be 'auto', 'extractive', 'openai' or 'local'" in message
    assert "docs/settings.md" in raised.value.hint


def test_a_bad_config_file_is_named_with_its_line(monkeypatch, tmp_path):
    config = tmp_path / "paperchat.toml"
    monkeypatch.setenv("PAPERCHAT_CONFIG", str(config))
    config.write_text('k = 3\nbackend = "extractive\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=rf"^{re.escape(str(config))}:2: not valid TOML"):
        Settings()
    config.write_text('k = 3\n\nchunk_size = 4\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=rf"{re.escape(str(config))}:3: chunk_size is 4: it should be greater than or equal to 32"):
        Settings()
    config.write_bytes(b"k = \xff\n")
    with pytest.raises(ConfigError, match="cannot read the config file"):
        Settings()


def test_an_argument_is_named_as_the_option_it_came_from():
    with pytest.raises(ConfigError, match="the k option is -2"):
        Settings(k=-2)



@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("http://user:PASSWORD@host:8080/v1", "http://***@host:8080/v1"),
        ("https://TOKEN@gateway.example/v1", "https://***@gateway.example/v1"),
        ("https://gw.example/v1?api_key=SECRET&api-version=2024-06-01", "https://gw.example/v1?api_key=***&api-version=***"),
        ("http://localhost:11434/v1", "http://localhost:11434/v1"),
    ],
)
def test_a_base_url_is_shown_without_its_credentials(url, shown):
    settings = Settings(openai_base_url=url)
    assert settings.openai_server == shown


def test_the_secrets_are_the_key_and_the_base_urls_credentials():
    settings = Settings(openai_api_key="sk-k", openai_base_url="http://user:pw@host/v1?key=qk")
    assert set(settings.secrets) == {"sk-k", "pw", "qk"}


def test_a_question_length_cap_is_a_setting(monkeypatch):
    assert Settings().max_question_chars == 4000
    monkeypatch.setenv("PAPERCHAT_MAX_QUESTION_CHARS", "0")
    with pytest.raises(ConfigError, match="PAPERCHAT_MAX_QUESTION_CHARS is '0'"):
        Settings()
