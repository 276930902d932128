"""Without OpenTelemetry, `raf` still imports and `raf.observability` names the extra."""

from __future__ import annotations

import subprocess
import sys


def test_without_opentelemetry_the_error_names_the_otel_extra() -> None:
    code = (
        "import sys\n"
        "sys.modules['opentelemetry'] = None\n"
        "import raf\n"
        "from raf import AgentBuilder\n"
        "try:\n"
        "    import raf.observability\n"
        "except raf.RafError as exc:\n"
        "    print(type(exc).__name__, exc)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("MissingExtraError tracing (raf.observability) needs the 'otel'")
    assert "raf-agents[otel]" in done.stdout or '".[otel]"' in done.stdout
