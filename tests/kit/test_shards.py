"""kit.shards: numbered whole files, packed folder by folder, biggest first, first fit."""

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kit.paths import PathRefused
from kit.shards import estimate_tokens, numbered, pack
from kit.source import enclosing_function, function_spans


def _write(root: Path, relative: str, lines: int) -> None:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"value_{i} = {i}\n" for i in range(lines)), encoding="utf-8")


def test_numbered_shows_every_line_with_its_number(tmp_path: Path) -> None:
    _write(tmp_path, "pkg/a.py", 3)
    text = numbered("pkg/a.py", root=tmp_path)
    assert text.splitlines() == [
        "=== pkg/a.py (3 lines) ===",
        "1| value_0 = 0",
        "2| value_1 = 1",
        "3| value_2 = 2",
    ]


def test_numbered_refuses_hidden(tmp_path: Path) -> None:
    _write(tmp_path, "hidden/key.py", 1)
    with pytest.raises(PathRefused):
        numbered(tmp_path / "hidden" / "key.py")
    with pytest.raises(PathRefused):
        numbered("hidden/key.py", root=tmp_path)


def test_a_folder_that_fits_stays_together(tmp_path: Path) -> None:
    for name in ["a", "b", "c"]:
        _write(tmp_path, f"small/{name}.py", 20)
    _write(tmp_path, "big/x.py", 200)
    _write(tmp_path, "big/y.py", 200)
    files = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*.py"))
    size_big = estimate_tokens(numbered("big/x.py", tmp_path))
    shards = pack(files, size_big + 10, root=tmp_path)
    small = [s for s in shards if any(f.startswith("small/") for f in s.files)]
    assert len(small) == 1 and len([f for f in small[0].files if f.startswith("small/")]) == 3


def test_biggest_first_first_fit(tmp_path: Path) -> None:
    _write(tmp_path, "a/big.py", 300)
    _write(tmp_path, "b/mid.py", 150)
    _write(tmp_path, "c/small.py", 100)
    files = ["a/big.py", "b/mid.py", "c/small.py"]
    big = estimate_tokens(numbered("a/big.py", tmp_path))
    small = estimate_tokens(numbered("c/small.py", tmp_path))
    shards = pack(files, big + small + 5, root=tmp_path)
    # big opens shard 1; mid does not fit beside it, opens shard 2; small fits beside big.
    assert [s.files for s in shards] == [("a/big.py", "c/small.py"), ("b/mid.py",)]


@settings(max_examples=50)
@given(
    sizes=st.lists(st.integers(min_value=1, max_value=120), min_size=1, max_size=12),
    target=st.integers(min_value=200, max_value=3000),
)
def test_every_file_lands_in_exactly_one_shard_and_shards_respect_the_target(
    tmp_path_factory: pytest.TempPathFactory, sizes: list[int], target: int
) -> None:
    root = tmp_path_factory.mktemp("corpus")
    files = []
    for index, lines in enumerate(sizes):
        relative = f"d{index % 3}/f{index}.py"
        _write(root, relative, lines)
        files.append(relative)
    shards = pack(files, target, root=root)
    placed = [f for shard in shards for f in shard.files]
    assert sorted(placed) == sorted(files)
    for shard in shards:
        alone = len(shard.files) == 1
        sizes_sum = sum(estimate_tokens(numbered(f, root)) for f in shard.files)
        assert alone or sizes_sum <= target
    assert pack(files, target, root=root) == shards


def test_pack_refuses_a_non_positive_target(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="-5"):
        pack([], -5, root=tmp_path)


SOURCE = """\
import os


@decorator
def top(x):
    def helper():
        return x
    return helper()


class Outer:
    class Inner:
        def method(self):
            return 1

    def other(self):
        pass
"""


def test_enclosing_function_is_qualified_and_nested_helpers_belong_to_their_function() -> None:
    assert enclosing_function(SOURCE, 1) is None
    assert enclosing_function(SOURCE, 4) == "top"  # the decorator line
    assert enclosing_function(SOURCE, 7) == "top"
    assert enclosing_function(SOURCE, 14) == "Outer.Inner.method"
    assert enclosing_function(SOURCE, 17) == "Outer.other"
    assert enclosing_function("def (:", 1) is None
    assert [s.name for s in function_spans(SOURCE)] == ["top", "Outer.Inner.method", "Outer.other"]
