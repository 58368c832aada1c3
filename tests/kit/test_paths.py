"""kit.paths: loose path spellings agree, and the reader never opens hidden/ or escapes."""

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kit.paths import PathRefused, normalise, read_text, safe_path


@pytest.mark.parametrize(
    "raw",
    [
        "algos/sorting.py",
        "./algos/sorting.py",
        "/algos/sorting.py",
        "data/algos/audited/algos/sorting.py",
        "/work/x/audited/algos/sorting.py",
        "algos\\sorting.py",
        "algos//./sorting.py",
    ],
)
def test_spellings_of_one_file_normalise_alike(raw: str) -> None:
    assert normalise(raw) == "algos/sorting.py"


def test_parent_steps_are_kept_so_readers_can_refuse_them() -> None:
    assert normalise("../hidden/answer_key.json") == "../hidden/answer_key.json"


@given(st.text(alphabet="ab/._\\ ", max_size=20))
def test_normalise_is_idempotent(raw: str) -> None:
    once = normalise(raw)
    assert normalise(once) == once


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    (tmp_path / "audited" / "pkg").mkdir(parents=True)
    (tmp_path / "audited" / "pkg" / "mod.py").write_text("x = 1\n", encoding="utf-8")
    (tmp_path / "hidden").mkdir()
    (tmp_path / "hidden" / "answer_key.json").write_text("{}", encoding="utf-8")
    return tmp_path


def test_reads_a_corpus_file_by_any_spelling(corpus: Path) -> None:
    root = corpus / "audited"
    for raw in ["pkg/mod.py", "./pkg/mod.py", "/pkg/mod.py", str(root / "pkg" / "mod.py")]:
        assert read_text(root, raw) == "x = 1\n"


@pytest.mark.parametrize(
    "raw", ["hidden/answer_key.json", "./hidden/answer_key.json", "x/../hidden/answer_key.json"]
)
def test_refuses_hidden_under_the_corpus_root(corpus: Path, raw: str) -> None:
    with pytest.raises(PathRefused, match="hidden"):
        read_text(corpus, raw)


def test_refuses_escaping_the_root(corpus: Path) -> None:
    with pytest.raises(PathRefused, match="outside|hidden"):
        read_text(corpus / "audited", "../hidden/answer_key.json")
    with pytest.raises(PathRefused, match="outside"):
        read_text(corpus / "audited", "../../etc/passwd")


def test_refuses_an_absolute_path_into_hidden(corpus: Path) -> None:
    with pytest.raises(PathRefused):
        read_text(corpus, str(corpus / "hidden" / "answer_key.json"))


def test_refuses_a_hidden_root(corpus: Path) -> None:
    with pytest.raises(PathRefused, match="hidden"):
        read_text(corpus / "hidden", "answer_key.json")


def test_refuses_a_symlink_that_leads_into_hidden(corpus: Path) -> None:
    (corpus / "audited" / "link.json").symlink_to(corpus / "hidden" / "answer_key.json")
    with pytest.raises(PathRefused):
        read_text(corpus / "audited", "link.json")


def test_the_error_repeats_the_bad_path(corpus: Path) -> None:
    with pytest.raises(PathRefused, match="nothing.py"):
        read_text(corpus / "audited", "pkg/nothing.py")
    with pytest.raises(PathRefused, match="names no file"):
        safe_path(corpus / "audited", "./")
