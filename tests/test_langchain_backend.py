"""Any LangChain chat model runs every method through one adapter (here LangChain's own fake chat model,
which has no log-probabilities, no JSON schema and no grammar: the methods fall back gracefully)."""

from __future__ import annotations

import json

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage

from models.langchain_backend import LangChainChatBackend
from models.llm import GenerationOptions
from models.rerankers import RankFusionReranker
from pipeline.context import RunContext
from pipeline.payloads import NodePayload
from pipeline.service import RunRequest, RunService
from tests.fakes import ScriptedRetriever, settings_with
from tests.test_method_plugins import AQ, DOCS


def fake(*replies: str) -> LangChainChatBackend:
    return LangChainChatBackend(GenericFakeChatModel(messages=iter([AIMessage(content=r) for r in replies])))


def test_streams_pieces_then_a_result_and_stops_early():
    model = fake("Tadej Pogacar won. Then more text follows here.")
    items = list(model.stream([{"role": "user", "content": "Who won?"}], GenerationOptions()))
    assert "".join(i for i in items if isinstance(i, str)) == items[-1].text
    early = fake("First sentence. Second sentence.").chat(
        [{"role": "user", "content": "q"}], GenerationOptions(until=lambda text: "." in text))
    assert early.text.startswith("First") and "Second" not in early.text and early.finish_reason == "until"
    assert early.logprobs is None  # this model has none; verifiers read the sampled word instead


@pytest.mark.parametrize("method, replies", [
    ("oner", ["Tadej Pogacar won the 2024 Tour [1]."]),
    ("ircot", ["Tadej Pogacar won the 2024 Tour [1].", "So the answer is: Tadej Pogacar.", "Tadej Pogacar [1]."]),
    ("toc", [json.dumps({"disambiguations": [{"question": "Who won the 2024 Tour de France?",
                                              "answer": "Tadej Pogacar"}]}),
             "True", json.dumps({"disambiguations": []}), "Tadej Pogacar won in 2024 [1]."]),
])
def test_methods_run_on_a_langchain_model(method, replies, embeddings):
    # ToC's one clarification call lists every reading (the paper's enumerate: a short script of replies).
    settings = settings_with(toc={"clarify": "enumerate"})
    ctx = RunContext(llm=fake(*replies), retriever=ScriptedRetriever(lambda q, k: DOCS), embeddings=embeddings,
                     reranker=RankFusionReranker(embeddings), settings=settings)
    run = RunService().start(RunRequest(question=AQ, method=method, settings=settings), context=ctx)
    list(run)
    assert not run.state.errors() and "Pogacar" in run.state.answer.answer
    if method == "toc":
        kept = [n for n in run.state.payloads(NodePayload, done=False) if n.state in ("kept", "restored")]
        assert [n.answer for n in kept] == ["Tadej Pogacar"]
