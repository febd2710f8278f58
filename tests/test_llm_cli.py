"""``python -m core llm ...`` against the loopback server and a temporary model folder."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pytest

from core.llm import cli as llm_cli
from core.llm.factory import make_llm
from core.settings import load_settings
from tests.llm_server import DEFAULT_REPLY, FakeLLMServer


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> dict:
    parser = argparse.ArgumentParser()
    parser.add_argument("--preset", default=None)
    parser.add_argument("--set", action="append")
    llm_cli.register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    assert args.func(args) == 0
    return json.loads(capsys.readouterr().out)


def test_chat_json_through_the_openai_backend(llm_server: FakeLLMServer, capsys: pytest.CaptureFixture[str]) -> None:
    out = run(
        [
            "--set",
            f"llm.openai.base_url={llm_server.base_url}",
            "--set",
            "llm.openai.model=fake-model",
            "llm",
            "chat",
            "hello",
            "--backend",
            "openai",
            "--logprobs",
            "2",
            "--json",
        ],
        capsys,
    )
    assert out["text"] == DEFAULT_REPLY and out["backend"] == "openai"
    assert len(out["tokens"]) == len(llm_server.tokens()) and len(out["tokens"][0]["top"]) == 2
    assert llm_server.requests[-1].body["messages"] == [{"role": "user", "content": "hello"}]


def test_status_json_for_an_unassembled_model(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = run(["--set", f"paths.model_dir={tmp_path}", "llm", "status", "--json"], capsys)
    assert out["backend"] == "llamacpp" and out["exists"] is False and out["hash_verified"] is False
    assert out["model_file"].startswith(str(tmp_path)) and len(out["expected_sha256"]) == 64
    assert out["threads"] >= 1


def test_extractive_builds_no_model() -> None:
    assert make_llm(load_settings(llm={"backend": "extractive"})) is None


def test_importing_the_layer_loads_no_model_or_sdk() -> None:
    code = (
        "import sys, core.llm; print(sorted(m for m in ('torch', 'groq', 'openai', 'xllamacpp') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
