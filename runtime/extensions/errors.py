"""Faults of the extensions package (see the tree in ``runtime.extensions``)."""

from __future__ import annotations


class ExtensionError(Exception):
    """Base class of mistakes made when registering extensions."""


class ScopeClosedError(ExtensionError):
    """Raised when something is registered into a scope that has been disposed."""


class DuplicateExtensionError(ExtensionError):
    """Raised when a game, activity or life source name is already registered."""


class InvalidExtensionError(ExtensionError):
    """Raised when a spec cannot be used (bad name, no tools, bad interval)."""
