#!/usr/bin/env python3
"""Fuzzes the argument parsing of `autotune` (and `tunedb`) with random
option/value mixes: huge, negative, malformed and out-of-range numbers,
repeated and conflicting options, unknown words, odd targets and shapes.

Usage: python3 scripts/fuzz-cli.py BUILD_DIR [--minutes M] [--seed S]

Meant for an AddressSanitizer build (scripts/build.sh build-asan
-DCMAKE_BUILD_TYPE=Debug -DLOOM_SANITIZE=ON): a run fails the fuzz when it
is killed by a signal, prints a sanitizer report, exits with a status
other than 0, 1, 2 or 130, or outlives its time limit (a hang). Runs that
would tune are kept small (a few trials of a tiny matmul), so each run
takes seconds. Failing command lines are printed and saved to
BUILD_DIR/fuzz-cli-failures.txt.
"""
import argparse
import os
import random
import shlex
import subprocess
import sys
import tempfile
import time

NUMS = ["0", "1", "2", "3", "-1", "-0", "+2", "1e3", "0x10", "2147483647", "2147483648",
        "4294967296", "4294967299", "9223372036854775807", "9223372036854775808",
        "-9223372036854775809", "99999999999999999999999", "", " ", "abc", "3abc", "nan", "inf",
        "-inf", "1.5", "0.0001", "1e308", "1e-320", "--", "--trials", "%s%s%n", "\x7f"]
SMALL = ["1", "2", "3"]
OPS = ["matmul", "conv2d", "nosuch", "", "matmul(M=4)", "relu", "user.mm", "MATMUL", "x" * 300,
       "user.sqnorm_rows"]
PLUGINS = ["libloom_plugin_example.so", "libloom_plugin_fails.so", "libloom_plugin_noentry.so",
           "/nonexistent/libx.so", "libloom.so", "", "/etc/passwd"]
SHAPES = ["M=8,N=8,K=8", "M=4,N=4,K=4", "M=0,N=4,K=4", "M=-1", "M=2147483648,N=1,K=1",
          "M=9223372036854775807,N=9223372036854775807,K=1", "M=1e3", "M=,N=", "=", ",,,",
          "M=8,M=8", "Q=3", "M=8,N=8,K=8,dtype=float64", "N=1,C=4,H=8,W=8,K=4,R=3,S=3,pad=1",
          "M=1000000,N=1000000,K=1000000", "x" * 2000]
TARGETS = ["llvm", "cuda", "tpu", "llvm -mcpu=bogus", "llvm -mcpu=", "llvm -mattr=+nosuch",
           "llvm -mcpu=x86-64", "", "llvm  ", "cuda -arch=sm_0"]
FLAGS = ["--resume", "--no-model", "--random-model", "--skip-default", "--no-heuristic", "--baseline", "--eval-model"]
INT_OPTS = ["--trials", "--seed", "--threads", "--jobs", "--per-round", "--population", "--retime"]
REAL_OPTS = ["--timeout", "--progress-interval"]
WORDS = ["--bogus", "stray", "-x", "--", "-h", "--trials=3", "--op=matmul"]


BUILD = "."


def plugin(rng):
    p = rng.choice(PLUGINS)
    return os.path.join(BUILD, p) if p.startswith("libloom") else p


def autotune_args(rng, db, suite):
    args = []
    # usually a runnable core, so that the rest is parsed against it
    if rng.random() < 0.8:
        args += ["--op", rng.choice(OPS[:2] if rng.random() < 0.7 else OPS)]
        args += ["--shape", rng.choice(SHAPES[:2] if rng.random() < 0.6 else SHAPES)]
        args += ["--trials", rng.choice(SMALL if rng.random() < 0.6 else NUMS)]
        args += ["--db", db]
    for _ in range(rng.randrange(0, 6)):
        r = rng.random()
        if r < 0.35:
            args += [rng.choice(INT_OPTS), rng.choice(NUMS)]
        elif r < 0.5:
            args += [rng.choice(REAL_OPTS), rng.choice(NUMS)]
        elif r < 0.65:
            args.append(rng.choice(FLAGS))
        elif r < 0.75:
            args += ["--target", rng.choice(TARGETS)]
        elif r < 0.82:
            args += ["--suite", rng.choice([suite, "/nonexistent.tsv", db])]
        elif r < 0.85:
            args += ["--cost-loss", rng.choice(["rank", "squared", "", "ranks"])]
        elif r < 0.88:
            args += ["--plugin", plugin(rng)]
        elif r < 0.94:
            args.append(rng.choice(WORDS))
        else:
            args += [rng.choice(["--op", "--shape", "--db"]), rng.choice(OPS + SHAPES)]
    if rng.random() < 0.1 and args:
        args.pop(rng.randrange(len(args)))  # an option left without its value
    if rng.random() < 0.1:
        rng.shuffle(args)
    return args


def tunedb_args(rng, db):
    cmds = ["list", "best", "show", "history", "export", "import", "prune", "stats", "apply",
            "bogus", ""]
    args = ["--db", db] if rng.random() < 0.9 else []
    args.append(rng.choice(cmds))
    for _ in range(rng.randrange(0, 5)):
        r = rng.random()
        if r < 0.25:
            args += ["--op", rng.choice(OPS)]
        elif r < 0.45:
            args += ["--shape", rng.choice(SHAPES)]
        elif r < 0.7:
            args += [rng.choice(["-k", "--keep"]), rng.choice(NUMS)]
        elif r < 0.8:
            args.append(rng.choice(NUMS))  # show's ID, import's and export's file
        elif r < 0.9:
            args += [rng.choice(["--workload", "--target"]), rng.choice(OPS + TARGETS)]
        elif r < 0.95:
            args.append(rng.choice(WORDS + ["--csv"]))
        else:
            args = ["--plugin", plugin(rng)] + args
    return args


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--minutes", type=float, default=10)
    ap.add_argument("--seed", type=int, default=int(time.time()))
    ap.add_argument("--limit", type=float, default=120, help="seconds before a run is a hang")
    a = ap.parse_args()
    global BUILD
    BUILD = os.path.abspath(a.build)
    rng = random.Random(a.seed)
    tmp = tempfile.mkdtemp(prefix="loom-fuzz-")
    suite = os.path.join(tmp, "s.tsv")
    with open(suite, "w") as f:
        f.write("a\tmatmul\tM=8,N=8,K=8\n")
    env = dict(os.environ)
    env.setdefault("ASAN_OPTIONS", "detect_leaks=0:abort_on_error=0")
    env.setdefault("UBSAN_OPTIONS", "print_stacktrace=1:halt_on_error=1")
    failures, runs, codes = [], 0, {}
    end = time.time() + a.minutes * 60
    print(f"fuzz-cli: seed {a.seed}, {a.minutes} min, {a.build}", flush=True)
    while time.time() < end:
        db = os.path.join(tmp, f"f{runs % 4}.db")
        if rng.random() < 0.3:
            tool, args = "tunedb", tunedb_args(rng, db)
        else:
            tool, args = "autotune", autotune_args(rng, db, suite)
        cmd = [os.path.join(os.path.abspath(a.build), tool)] + args
        t0 = time.time()
        try:
            p = subprocess.run(cmd, capture_output=True, timeout=a.limit, env=env, cwd=tmp,
                               stdin=subprocess.DEVNULL)
            rc, out = p.returncode, (p.stdout + p.stderr).decode("utf-8", "replace")
        except subprocess.TimeoutExpired as e:
            rc, out = "hang", ((e.stdout or b"") + (e.stderr or b"")).decode("utf-8", "replace")
        runs += 1
        codes[rc] = codes.get(rc, 0) + 1
        bad = rc == "hang" or not isinstance(rc, int) or rc < 0 or rc not in (0, 1, 2, 130)
        bad |= "Sanitizer" in out or "runtime error:" in out
        if bad:
            line = f"{rc} ({time.time() - t0:.1f} s): {shlex.join(cmd)}"
            print("FAIL", line, "\n", out[-3000:], flush=True)
            failures.append(line)
    with open(os.path.join(a.build, "fuzz-cli-failures.txt"), "w") as f:
        f.write("\n".join(failures) + ("\n" if failures else ""))
    print(f"fuzz-cli: {runs} runs, exit codes {dict(sorted(codes.items(), key=str))}, "
          f"{len(failures)} failures", flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
