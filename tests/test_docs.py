"""The docs tell the truth about the CLI and the config: every command and key is documented, the README's
sample config is valid and keeps semantic search on, and the README stays a five-minute read."""

from __future__ import annotations

import re
import typing
from pathlib import Path

import pydantic
import pytest
import tomllib
from typer.main import get_command

from mdrecall.cli.app import app
from mdrecall.config.settings import MemoryConfig, parse_config

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
DOCS = {p.name: p.read_text() for p in sorted((ROOT / "docs").glob("*.md"))}
ALL_DOCS = README + "\n".join(DOCS.values())


def _commands(command: typing.Any, prefix: list[str]) -> list[str]:
    if getattr(command, "commands", None):  # a group (typer may vendor its own click)
        out = []
        for name, sub in command.commands.items():
            out += _commands(sub, [*prefix, name])
        return out
    return [" ".join(prefix)]


def _config_keys(model: type[pydantic.BaseModel], prefix: str = "") -> list[str]:
    keys = []
    for name, field in model.model_fields.items():
        alias = field.alias or field.validation_alias or name
        if isinstance(alias, pydantic.AliasChoices):
            alias = alias.choices[0]
        key = prefix + str(alias)
        nested = [
            t
            for outer in (field.annotation, *typing.get_args(field.annotation))
            for t in (outer, *typing.get_args(outer))
            if isinstance(t, type) and issubclass(t, pydantic.BaseModel)
        ]
        keys += _config_keys(nested[0], key + ".") if nested else [key]
    return keys


COMMANDS = _commands(get_command(app), [])


@pytest.mark.parametrize("command", COMMANDS)
def test_every_cli_command_is_documented(command: str) -> None:
    assert f"mdrecall {command}" in ALL_DOCS or re.search(rf"mdrecall (--\S+ \S+ )*{re.escape(command)}\b", ALL_DOCS)


def test_the_command_list_is_read_from_the_cli() -> None:
    assert {"index", "search", "get", "status", "mcp", "facts store", "install claude-code"} <= set(COMMANDS)


def test_every_config_key_is_in_the_reference() -> None:
    reference = DOCS["configuration.md"]
    keys = _config_keys(MemoryConfig)
    assert len(keys) > 100
    assert [k for k in keys if f"`{k}`" not in reference] == []


def test_the_reference_names_no_key_that_does_not_exist() -> None:
    keys = set(_config_keys(MemoryConfig))
    named = set(re.findall(r"^\| `([a-zA-Z.]+)`", DOCS["configuration.md"], re.M))
    named |= set(re.findall(r"`([a-z][a-zA-Z]*(?:\.[a-zA-Z]+)+)`", DOCS["configuration.md"]))
    sections = {k.split(".")[0] for k in keys if "." in k}
    assert sorted(k for k in named if k.split(".")[0] in sections and k not in keys) == []


def _readme_toml() -> str:
    section = README.split("## Configuration", 1)[1]
    return re.search(r"```toml\n(.*?)```", section, re.S).group(1)


def test_the_readme_sample_config_is_valid_and_keeps_semantic_search_on(tmp_path: Path) -> None:
    from mdrecall.config.settings import resolve_settings
    from mdrecall.embeddings.factory import create_provider

    raw = tomllib.loads(_readme_toml())
    config = parse_config(raw)
    assert config.provider != "none" and config.query.hybrid.enabled
    assert config.local.model_path is None or Path(config.local.model_path).exists()
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "MEMORY.md").write_text("# Memory\n")
    settings = resolve_settings(workspace=tmp_path / "ws", state_dir=tmp_path / "state", config=config)
    result = create_provider(settings.config)
    assert result.provider is not None, result.reason  # a model, not keyword-only


def test_the_readme_is_short_and_speaks_to_users() -> None:
    assert len(README.encode()) <= 12 * 1024
    for name, text in {"README.md": README, **DOCS}.items():
        found = re.findall(r"\b(?:round \d+|this round|issue \d+|the spec(?:'s)?)\b", text, re.I)
        assert found == [], (name, found)


def test_the_readme_python_example_uses_the_public_api() -> None:
    import mdrecall

    example = re.search(r"```python\n(.*?)```", README, re.S).group(1)
    names = re.findall(r"from mdrecall import ([\w, ]+)", example)
    assert names, "the example imports from the package"
    for name in names[0].split(","):
        assert hasattr(mdrecall, name.strip()), name
