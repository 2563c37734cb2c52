"""``python -m refind.cli``: the ``refind`` command."""

from refind.cli import main

if __name__ == "__main__":
    main()
