"""The long fuzz run: ``./dev fuzz`` (``python -m tests.fuzz``).

::

    ./dev fuzz                                # 1,000,000 inputs per target
    ./dev fuzz --inputs 50000 canal-json      # fewer, one target
    ./dev fuzz --seconds 600 --seed 7         # at most ten minutes per target

Each target gets a seeded ``random.Random`` (the run is reproducible with
``--seed``) driving the same mutators the test suite's hypothesis run uses,
without hypothesis' per-example bookkeeping, so a million inputs take minutes
rather than hours. Prints one line per target: inputs, rate, distinct findings,
the slowest input's CPU time and the peak RSS. Findings are minimized and written
to ``--out`` (one file per distinct exception site); exit 1 if there are any.
"""

from __future__ import annotations

import argparse
import logging
import random
import resource
import sys
import time
from pathlib import Path

from tests.fuzz.harness import Finding, Guard, minimize
from tests.fuzz.targets import all_targets

#: Address-space cap of the fuzzing process (memory bounded: a MemoryError is a finding).
MEMORY_LIMIT = 4 << 30


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def fuzz_target(
    name: str, inputs: int, seconds: float, seed: int, out: Path, progress: bool
) -> tuple[int, list[Finding]]:
    target = all_targets()[name]()
    if not target.seeds:
        print(f"{name:22} no seeds (corpus missing?): skipped", flush=True)
        return 0, []
    rng = random.Random(f"{seed}:{name}")
    found: dict[tuple[str, str], Finding] = {}
    started = time.monotonic()
    n = 0
    with Guard() as guard:
        while n < inputs and time.monotonic() - started < seconds:
            data = rng.choice(target.seeds)
            # stack 1-3 mutations: a mutated input is mutated further now and then
            for _ in range(rng.choice((1, 1, 2, 3))):
                data = target.mutator(data, rng)
            n += 1
            finding = guard.check(name, target.run, target.expected, data, target.limit_s)
            if finding is not None and finding.signature not in found:
                target.reset()
                small = minimize(guard, name, target.run, target.expected, finding, target.limit_s)
                found[finding.signature] = small
                _save(out, small)
                print(f"  FOUND {small.describe()}", flush=True)
            if progress and n % 100_000 == 0:
                print(f"  {name}: {n} inputs, {n / (time.monotonic() - started):.0f}/s", flush=True)
        elapsed = time.monotonic() - started
        print(
            f"{name:22} {n:>10,} inputs {elapsed:8.1f} s {n / elapsed:9.0f}/s  findings {len(found)}  "
            f"slowest {guard.max_cpu_s * 1000:6.1f} ms CPU  peak RSS {_peak_rss_mb():6.0f} MB",
            flush=True,
        )
    return n, list(found.values())


def _save(out: Path, f: Finding) -> None:
    out.mkdir(parents=True, exist_ok=True)
    stem = f"{f.target}-{f.kind}-{f.where.replace('/', '_').replace(':', '_')}"
    (out / f"{stem}.bin").write_bytes(f.data)
    (out / f"{stem}.txt").write_text(f.describe() + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    names = list(all_targets())
    p = argparse.ArgumentParser(prog="./dev fuzz", description=__doc__.split("\n\n")[0])
    p.add_argument(
        "targets", nargs="*", choices=[*names, []], metavar="TARGET", help=f"default: all ({', '.join(names)})"
    )
    p.add_argument("--inputs", type=int, default=1_000_000, help="inputs per target (default 1,000,000)")
    p.add_argument("--seconds", type=float, default=float("inf"), help="time limit per target")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, default=Path("fuzz-findings"), help="where minimized findings go")
    p.add_argument("--progress", action="store_true", help="a line every 100,000 inputs")
    args = p.parse_args(argv)
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
    logging.disable(logging.CRITICAL)  # the catalog's and transforms' warnings about garbage are expected
    total = 0
    findings: list[Finding] = []
    for name in args.targets or names:
        n, found = fuzz_target(name, args.inputs, args.seconds, args.seed, args.out, args.progress)
        total += n
        findings.extend(found)
    print(f"total {total:,} inputs, {len(findings)} distinct findings" + (f" (in {args.out}/)" if findings else ""))
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
