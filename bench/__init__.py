"""Benchmarks (``python -m bench.codec``). Not shipped in the wheel; tests never time anything."""
