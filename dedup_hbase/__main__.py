"""``python -m dedup_hbase`` and the ``dedup-hbase`` console script.

Ctrl-C while the command line is still importing its modules (the first fraction of a
second) ends it like Ctrl-C anywhere else: one line, status 130, no traceback, also when it
lands where Python can only print it (jobs/interrupts.py, ``deliver_dropped_stops``). Before this
module runs (the interpreter starting, its ``site`` module reading the ``.pth`` files) nothing of
the package can catch a signal: docs/commands.md says what a user sees then.
"""

import sys


def main() -> None:
    try:
        from .jobs.interrupts import deliver_dropped_stops

        deliver_dropped_stops()  # a Ctrl-C that lands in an import's lock callback is not lost
        from .cli.commands import main as run
    except KeyboardInterrupt:
        sys.stderr.write("interrupted by SIGINT\n")
        sys.exit(130)
    run()


if __name__ == "__main__":
    main()
