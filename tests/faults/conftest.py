"""The end-to-end fixtures (``start_bot``, the tagged scripted ``model``) serve the fault tests too."""

from tests.e2e.conftest import model, start_bot

__all__ = ["model", "start_bot"]
