"""Example questions for the bundled demo corpus, per method: shown under the question box, one click runs one.

The examples are data (``corpora/demo/examples.yaml``): each has its method, the question, why it suits the
method, where it comes from, and its gold answers, at least one of which a passage cited by the answer must
hold (``tests/test_examples.py`` checks this with the default model).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field

from pipeline.text import normalize_answer

EXAMPLES_FILE = Path(__file__).parent / "demo" / "examples.yaml"


class DemoExample(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    method: str
    question: str
    gold: tuple[str, ...] = Field(min_length=1)  # a cited passage holds at least one of these
    why: str = ""  # what the question shows of the method
    source: str = ""  # the evaluation item it comes from, and what was measured on it


class _ExamplesFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    version: int
    examples: list[DemoExample]


def holds(text: str, gold: tuple[str, ...]) -> bool:
    """Whether ``text`` contains one of the gold answers (SQuAD normalisation, whole words)."""
    words = f" {normalize_answer(text)} "
    return any(f" {normalize_answer(answer)} " in words for answer in gold if normalize_answer(answer))


@lru_cache(maxsize=4)
def demo_examples(path: Path = EXAMPLES_FILE) -> tuple[DemoExample, ...]:
    """The examples in ``path``, in file order (the file is read once)."""
    data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    return tuple(_ExamplesFile.model_validate(data).examples)
