"""Runs a command and succeeds iff it exits with the given status.

usage: expect_exit.py STATUS COMMAND [ARG]...

The command's stdout and stderr pass through, so a RUN line can pipe them
into FileCheck. lit's `not` only tells zero from non-zero; qattn-run's exit
statuses 1 (error) and 2 (failed check) mean different things.
"""
import subprocess
import sys

expected = int(sys.argv[1])
status = subprocess.run(sys.argv[2:]).returncode
if status != expected:
    print(f"expect_exit.py: expected exit status {expected}, got {status}",
          file=sys.stderr)
    sys.exit(1)
