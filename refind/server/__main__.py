"""``python -m refind.server``: the same command as ``refind serve``, with the same options.

One front door: this module hands its arguments to the ``refind serve`` command (``refind.cli``), so the
two can never drift apart.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    from refind.cli import main as cli

    args = list(sys.argv[1:] if argv is None else argv)
    try:
        cli.main(["serve", *args], prog_name="python -m refind.server", standalone_mode=True)
    except SystemExit as exc:
        return int(exc.code or 0) if isinstance(exc.code, int | None) else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
