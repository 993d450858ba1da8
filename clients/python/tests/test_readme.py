"""The Python example of the repository's README ("Use it") runs against the real server."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

from conftest import Server

README = Path(__file__).resolve().parents[3] / "README.md"


def test_the_readme_python_example_runs(server: Server) -> None:
    text = README.read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert len(blocks) == 1, "README: one ```python block"
    source = blocks[0]
    assert 'rangelock.Client("127.0.0.1")' in source, "the example uses the default port"
    # The test server listens on a port of its own.
    source = source.replace('"127.0.0.1"', repr(server.address))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(source, str(README), "exec"), {})
    assert re.fullmatch(r"holding 0\.\.4096 of /var/lib/app\.db, fencing token \d+\n", out.getvalue())
