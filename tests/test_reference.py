"""The generated reference: complete, and docs/reference.md is current."""

from __future__ import annotations

from pathlib import Path

import pytest

from cdc_smt.transforms import reference
from cdc_smt.transforms.formats import registry as formats
from cdc_smt.transforms.predicates import builtins as predicates
from cdc_smt.transforms.smt import builtins as transforms
from cdc_smt.transforms.smt.base import COMMON_OPTIONS

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT / reference.DEFAULT_FILE


def test_every_transform_predicate_format_and_option_is_documented() -> None:
    text = reference.generate()
    for name, cls in [*transforms().items(), *predicates().items()]:
        assert f"#### `{name}`" in text
        for opt in cls.options:
            assert f"| `{opt.name}` |" in text, f"{name}.{opt.name}"
    for name in formats():
        assert f"#### `{name}`" in text
    for opt in COMMON_OPTIONS:
        assert f"| `{opt.name}` |" in text
    assert "#### Grammar" in text and "between" in text


def test_defaults_choices_and_required_are_shown() -> None:
    text = reference.generate()
    assert '| `delete_handling` | string | `"tombstone"` |' in text
    assert "One of: `drop`, `tombstone`, `rewrite`, `rewrite-with-tombstone`." in text
    assert "| `fields` | list | *required* |" in text


def test_generation_is_deterministic() -> None:
    assert reference.generate() == reference.generate()


def test_write_and_check(tmp_path: Path) -> None:
    f = tmp_path / "README.md"
    stale = "".join(f"{b}\nold\n{e}\n\n" for b, e in map(reference.markers, reference.BLOCKS))
    f.write_text(f"# Title\n\nintro\n\n{stale}after\n")
    assert reference.main(["--check", str(f)]) == 1
    assert reference.main(["--write", str(f)]) == 0
    text = f.read_text()
    assert text.startswith("# Title\n\nintro\n\n") and text.endswith("\n\nafter\n")
    for name in reference.BLOCKS:
        assert reference.current_block(text, name) == reference.block(name)
    assert reference.main(["--check", str(f)]) == 0
    f.write_text(f"{reference.BEGIN}\n{reference.END}\n")  # some blocks missing
    assert reference.main(["--check", str(f)]) == 2


@pytest.mark.parametrize("name", sorted(reference.BLOCKS))
def test_reference_generated_blocks_are_current(name: str) -> None:
    text = REFERENCE.read_text(encoding="utf-8")
    assert reference.has_markers(text, name), f"{reference.DEFAULT_FILE} lacks the generated {name} block"
    assert reference.current_block(text, name) == reference.block(name), (
        f"{reference.DEFAULT_FILE}'s {name} block is stale: run python -m cdc_smt.transforms.reference --write"
    )


def test_write_and_check_default_to_the_reference_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / reference.DEFAULT_FILE
    target.parent.mkdir()
    target.write_text("".join(f"{b}\nold\n{e}\n" for b, e in map(reference.markers, reference.BLOCKS)))
    monkeypatch.chdir(tmp_path)
    assert reference.main(["--check"]) == 1
    assert reference.main(["--write"]) == 0
    assert reference.main(["--check"]) == 0
    assert reference.current_block(target.read_text(), "formats") == reference.block("formats")


def test_readme_is_a_front_door() -> None:
    """The README stays short; the generated reference lives in docs/, not in it."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 250
    assert "GENERATED" not in text
