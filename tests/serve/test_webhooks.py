"""The webhook signature: HMAC-SHA256 over "<t>.<body>" with the server's secret, as a
receiver computes it with nothing but the standard library; a changed body, another
secret or an old timestamp does not verify."""

from __future__ import annotations

import hashlib
import hmac
import time

from raf.serve.webhooks import signature, verify


def test_the_signature_is_an_hmac_of_the_time_and_the_body() -> None:
    body = b'{"id":"r1","state":"done"}'
    header = signature("s3cret", body, 1_700_000_000)
    mac = hmac.new(b"s3cret", b"1700000000." + body, hashlib.sha256).hexdigest()
    assert header == f"t=1700000000,v1={mac}"


def test_only_the_same_body_secret_and_a_recent_time_verify() -> None:
    body = b'{"id":"r1"}'
    now = int(time.time())
    header = signature("s3cret", body, now)
    assert verify("s3cret", body, header)
    assert not verify("s3cret", body + b" ", header)
    assert not verify("other", body, header)
    assert not verify("s3cret", body, signature("s3cret", body, now - 3600))
    assert not verify("s3cret", body, "v1=00")
