"""A shared process of the workflow (dyafdb.procpool): answers each job's command line with
`dyafdb`'s own entry point, as the job's own process would, capturing what it prints."""

from __future__ import annotations

import contextlib
import io
import traceback
from typing import Any

from dyafdb.procpool import serve_main


def answer(request: dict[str, Any]) -> tuple[str, str, int]:
    from dyafdb.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = main(request["argv"])
        except SystemExit as exc:  # argparse
            rc = exc.code if isinstance(exc.code, int) else 2
        except Exception:  # a bug: its traceback goes to the job's log, as the job's own process would print it
            traceback.print_exc()
            rc = 1
    return out.getvalue(), err.getvalue(), rc


if __name__ == "__main__":
    serve_main(answer)
