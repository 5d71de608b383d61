"""Shared fixtures for the whole suite."""

from collections.abc import Iterator

import pytest

from tests.support.openai_server import ScriptedOpenAIServer


@pytest.fixture
def openai_server() -> Iterator[ScriptedOpenAIServer]:
    """A scripted OpenAI-compatible server on 127.0.0.1 (ephemeral port), stopped after the test."""
    with ScriptedOpenAIServer() as server:
        yield server
