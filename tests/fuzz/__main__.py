"""The long fuzz run: ``./dev fuzz`` (``python -m tests.fuzz``).

::

    ./dev fuzz                                # 1,000,000 inputs per target
    ./dev fuzz --inputs 50000 canal-json      # fewer, one target
    ./dev fuzz --seconds 600 --seed 7         # at most ten minutes per target
    nice -n 10 ./dev fuzz --jobs 2            # two targets at a time, niced

Each target gets a seeded ``random.Random`` (the run is reproducible with
``--seed``) driving the same mutators the test suite's hypothesis run uses,
without hypothesis' per-example bookkeeping. Each input runs under a CPU timer
(:class:`tests.fuzz.harness.Guard`, one ``setitimer`` per input, no thread or
subprocess); resident memory is sampled every 10,000 inputs. Prints one line
per target: inputs, wall and CPU time, inputs per CPU second (the machine may
be shared: wall-clock rates say little), distinct findings, the slowest input's
CPU time and the peak RSS. Findings are minimized and written to ``--out`` (one
file per distinct exception site); exit 1 if there are any.
"""

from __future__ import annotations

import argparse
import functools
import logging
import multiprocessing
import random
import resource
import signal
import sys
import time
from pathlib import Path

from tests.fuzz.harness import Finding, Guard, minimize
from tests.fuzz.targets import all_targets

#: Address-space cap of the fuzzing process (memory bounded: a MemoryError is a finding).
MEMORY_LIMIT = 4 << 30
#: Resident memory the process may grow to, sampled every :data:`RSS_EVERY` inputs: more is a
#: finding (a leak, or state some input makes a codec keep), named after the last input.
RSS_LIMIT_MB = 1024
RSS_EVERY = 10_000
_PAGE_MB = resource.getpagesize() / (1 << 20)


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _rss_mb() -> float:
    with open("/proc/self/statm", "rb") as f:
        return int(f.read().split()[1]) * _PAGE_MB


def fuzz_target(
    name: str, inputs: int, seconds: float, seed: int, out: Path, progress: bool
) -> tuple[int, list[Finding]]:
    target = all_targets()[name]()
    if target is None:
        print(f"{name:22} not in this build (native core not built, or CDC_SMT_NATIVE=0): skipped", flush=True)
        return 0, []
    if not target.seeds:
        print(f"{name:22} no seeds (corpus missing?): skipped", flush=True)
        return 0, []
    rng = random.Random(f"{seed}:{name}")
    found: dict[tuple[str, str], Finding] = {}
    started = time.monotonic()
    cpu_started = time.process_time()
    n = 0
    seeds, mutator, run, expected, limit = target.seeds, target.mutator, target.run, target.expected, target.limit_s
    choice = rng.choice
    with Guard() as guard:
        check = guard.check
        try:
            while n < inputs and time.monotonic() - started < seconds:
                data = choice(seeds)
                # stack 1-3 mutations: a mutated input is mutated further now and then
                for _ in range(choice((1, 1, 2, 3))):
                    data = mutator(data, rng)
                n += 1
                finding = check(name, run, expected, data, limit)
                if n % RSS_EVERY == 0:
                    rss = _rss_mb()
                    if rss > RSS_LIMIT_MB and finding is None:
                        finding = Finding(name, "memory", "rss", f"resident memory {rss:.0f} MB", data, 0.0)
                    if progress and n % 100_000 == 0:
                        cpu = time.process_time() - cpu_started
                        print(
                            f"  {name}: {n} inputs, {n / cpu:.0f}/CPU s, slowest {guard.max_cpu_s * 1000:.1f} ms CPU, "
                            f"RSS {rss:.0f} MB",
                            flush=True,
                        )
                if finding is not None and finding.signature not in found:
                    target.reset()
                    memory = finding.kind == "memory"  # not the input's doing alone: kept as it is
                    small = finding if memory else minimize(guard, name, run, expected, finding, limit)
                    found[finding.signature] = small
                    _save(out, small)
                    print(f"  FOUND {small.describe()}", flush=True)
        except KeyboardInterrupt:  # Ctrl-C or SIGTERM: stop here, and say how far it got
            print(f"  {name}: interrupted", flush=True)
        elapsed = time.monotonic() - started
        cpu = time.process_time() - cpu_started
        print(
            f"{name:40} {n:>10,} inputs {elapsed:8.1f} s {cpu:8.1f} s CPU {n / max(cpu, 1e-9):7.0f}/CPU s  "
            f"findings {len(found)}  slowest {guard.max_cpu_s * 1000:6.1f} ms CPU  "
            f"peak RSS {_peak_rss_mb():5.0f} MB",
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
    p.add_argument("--jobs", type=int, default=1, help="targets fuzzed in parallel, one process each (default 1)")
    args = p.parse_args(argv)
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # kill: the summary of what ran
    logging.disable(logging.CRITICAL)  # the catalog's and transforms' warnings about garbage are expected
    run = functools.partial(
        fuzz_target, inputs=args.inputs, seconds=args.seconds, seed=args.seed, out=args.out, progress=args.progress
    )
    if args.jobs > 1:  # one process per target at a time (each with its own CPU timer and memory cap)
        with multiprocessing.get_context("fork").Pool(args.jobs, maxtasksperchild=1) as pool:
            results = pool.map(run, args.targets or names, chunksize=1)
    else:
        results = [run(name) for name in args.targets or names]
    total = sum(n for n, _ in results)
    findings = [f for _, found in results for f in found]
    print(f"total {total:,} inputs, {len(findings)} distinct findings" + (f" (in {args.out}/)" if findings else ""))
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
