"""The generated YAML reference: complete, and the README's copy is current."""

from __future__ import annotations

from pathlib import Path

import pytest

from cdc_smt.transforms import reference
from cdc_smt.transforms.formats import registry as formats
from cdc_smt.transforms.predicates import builtins as predicates
from cdc_smt.transforms.smt import builtins as transforms
from cdc_smt.transforms.smt.base import COMMON_OPTIONS

README = Path(__file__).resolve().parents[1] / "README.md"


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
def test_readme_generated_blocks_are_current(name: str) -> None:
    text = README.read_text(encoding="utf-8")
    assert reference.has_markers(text, name), f"README.md lacks the generated {name} block"
    assert reference.current_block(text, name) == reference.block(name), (
        f"README.md's {name} block is stale: run python -m cdc_smt.transforms.reference --write README.md"
    )
