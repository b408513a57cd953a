"""``python -m dedup_hbase`` and the ``dedup-hbase`` console script.

Ctrl-C while the command line is still importing its modules (the first fraction of a
second) ends it like Ctrl-C anywhere else: one line, status 130, no traceback.
"""

import sys


def main() -> None:
    try:
        from .cli.commands import main as run
    except KeyboardInterrupt:
        sys.stderr.write("interrupted by SIGINT\n")
        sys.exit(130)
    run()


if __name__ == "__main__":
    main()
