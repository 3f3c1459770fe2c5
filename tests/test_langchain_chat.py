"""Backends as LangChain chat models."""

from __future__ import annotations

from langchain_core.messages import HumanMessage, SystemMessage

from models.langchain_chat import LangChainChatModel
from tests.fakes import ScriptedLLM


def test_invoke_and_stream_through_langchain():
    backend = ScriptedLLM(["Paris is the capital.", "Rome is the capital."])
    chat = LangChainChatModel(backend=backend)
    reply = chat.invoke([SystemMessage("Be brief."), HumanMessage("Capital of France?")], max_tokens=12)
    assert reply.content == "Paris is the capital." and reply.usage_metadata["output_tokens"] == 4
    assert backend.calls[0][0] == [{"role": "system", "content": "Be brief."},
                                   {"role": "user", "content": "Capital of France?"}]
    assert backend.calls[0][1].max_tokens == 12
    chunks = [c.content for c in chat.stream("Capital of Italy?")]
    assert "".join(chunks) == "Rome is the capital." and len(chunks) > 2
