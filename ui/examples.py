"""The example questions under the question box (``corpora/demo/examples.yaml``): a click fills in the question,
picks its method and the demo collection, and asks it."""

from __future__ import annotations

import gradio as gr

from corpora.demo import DEMO_COLLECTION
from corpora.demo_examples import DemoExample, demo_examples
from pipeline.methods import METHODS


def shown_examples() -> list[DemoExample]:
    """The examples of the methods this app has, in file order."""
    return [e for e in demo_examples() if e.method in METHODS]


def example_rows() -> list[list[str]]:
    """(question, method label) for each shown example."""
    return [[e.question, METHODS[e.method].label] for e in shown_examples()]


def use_example(index, collections: list[str] | None, available: list[str]):
    """The question box, the method and the collections for the example at ``index``: the demo collection is
    added to the chosen ones when this app has it (``available``)."""
    examples = shown_examples()
    if not isinstance(index, int) or not 0 <= index < len(examples):
        return gr.skip(), gr.skip(), gr.skip()
    example = examples[index]
    chosen = list(collections or [])
    if DEMO_COLLECTION in available and DEMO_COLLECTION not in chosen:
        chosen.append(DEMO_COLLECTION)
    return example.question, example.method, chosen
