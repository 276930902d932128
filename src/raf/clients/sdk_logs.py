"""The model SDKs' own loggers, kept from printing credentials.

botocore logs every request at DEBUG, headers included (the AWS session token among
them), and the OpenAI and Anthropic SDKs log request options at DEBUG. An application
that turns on DEBUG for its own code (`logging.basicConfig(level=logging.DEBUG)`) would
print them. So when raf makes a model client:

- each of these loggers whose level nobody set is set to INFO (a level the user set,
  DEBUG included, is theirs and kept; `RAF_SDK_DEBUG=1` leaves them all as they are);
- a filter on them replaces every credential a raf client holds, in any form `redact`
  knows, in the records they still print.
"""

from __future__ import annotations

import logging
import os

from raf.clients.errors import redact

__all__ = ["SDK_LOGGERS", "guard_sdk_logs"]

SDK_LOGGERS = (
    "botocore",
    "botocore.auth",
    "botocore.credentials",
    "botocore.endpoint",
    "botocore.hooks",
    "botocore.httpsession",
    "botocore.parsers",
    "boto3",
    "urllib3",
    "urllib3.connectionpool",
    "openai",
    "openai._base_client",
    "anthropic",
    "anthropic._base_client",
)
"""Loggers of the SDKs raf's clients use that print request headers or options."""
_QUIET_PARENTS = ("botocore", "boto3", "urllib3", "openai", "anthropic")
DEBUG_ENV = "RAF_SDK_DEBUG"
"""Set to 1 to leave the SDKs' loggers at the levels their own configuration gives."""

_known: set[str] = set()


class _RedactCredentials(logging.Filter):
    """Replaces the credentials raf's clients hold in a record's message and arguments."""

    def filter(self, record: logging.LogRecord) -> bool:
        if _known:
            message = record.getMessage()
            cleaned = redact(message, _known)
            if cleaned != message:
                record.msg, record.args = cleaned, None
        return True


_FILTER = _RedactCredentials()


def guard_sdk_logs(secrets: list[str]) -> None:
    """Remember `secrets` for the filter and put the SDK loggers in order (see above)."""
    _known.update(value for value in secrets if value and len(value) >= 4)
    for name in SDK_LOGGERS:
        logger = logging.getLogger(name)
        if _FILTER not in logger.filters:
            logger.addFilter(_FILTER)
    if os.environ.get(DEBUG_ENV, "").strip() in ("1", "true", "yes"):
        return
    for name in _QUIET_PARENTS:
        logger = logging.getLogger(name)
        if logger.level == logging.NOTSET:
            logger.setLevel(logging.INFO)
