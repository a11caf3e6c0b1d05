#!/bin/sh
# Usage: expect_exit.sh STATUS PROGRAM [ARGS...]: runs the program and
# passes when it exits with STATUS (a ctest entry that checks an exit
# status other than 0, such as the CUDA tests' 77 for "skipped", which
# SKIP_RETURN_CODE would turn into a skip instead of a check).
want=$1
shift
"$@"
rc=$?
if [ "$rc" -ne "$want" ]; then
    echo "expect_exit.sh: $1 exited $rc, expected $want" >&2
    exit 1
fi
