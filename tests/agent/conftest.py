"""The stores' `spot` fixture, for the approval tests that run on every store."""

from tests.stores.conftest import spot

__all__ = ["spot"]
