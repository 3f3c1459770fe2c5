"""A long model call gives way to a call of somebody charged less (models/cancel.py ``CallGate``): the short
call is answered first, and the long one carries on exactly where it was, with the reply it gives alone."""

from __future__ import annotations

import threading
import time

import pytest

from models.cancel import CallGate
from models.errors import Cancelled
from models.llm import GenerationOptions

LONG = [{"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": "Write a long story about a river and the towns along it."}]
SHORT = [{"role": "user", "content": "What is the capital of France? Answer in one word."}]
LIST_GRAMMAR = 'root ::= "[" item ("," item)* "]"\nitem ::= "\\"" [a-z ]+ "\\""'
LISTING = [{"role": "user", "content": "List twenty rivers of Europe as a JSON array of lower-case names."}]


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _mallory_served_alice_waiting(clock: _Clock, alice_first_alone_s: float = 0.0):
    """A gate on ``clock`` whose call being served is mallory's while alice's waits (in a thread); alice may
    first use the model alone for ``alice_first_alone_s``. (gate, mallory's Stop switch, alice's, alice's
    waiting thread)."""
    gate = CallGate(clock=clock)
    mallory, alice = threading.Event(), threading.Event()
    gate.share(mallory, "mallory")
    gate.share(alice, "alice")
    if alice_first_alone_s:
        gate.acquire(alice)
        clock.now += alice_first_alone_s
        gate.release()
    gate.acquire(mallory)
    waiter = threading.Thread(target=gate.acquire, args=(alice,), daemon=True)
    waiter.start()
    time.sleep(0.2)
    return gate, mallory, alice, waiter


def test_a_call_gives_way_only_to_a_share_charged_less_by_the_margin():
    clock = _Clock()
    gate, flooder, newcomer, waiter = _mallory_served_alice_waiting(clock)
    clock.now = gate.MARGIN_S * 0.5
    assert not gate.should_yield()  # alice waits, but mallory's call has not run the margin yet
    clock.now = gate.MARGIN_S + 0.1
    assert gate.should_yield()
    resumed = []
    back = threading.Thread(target=lambda: gate.give_way(flooder, lambda: "state", resumed.append), daemon=True)
    back.start()
    waiter.join(2)
    assert not waiter.is_alive() and gate.ahead_of(newcomer) == 0 and gate.ahead_of(flooder) == 1
    assert not gate.should_yield()  # mallory, charged more, never takes the model back from alice
    gate.release()
    back.join(2)
    assert resumed == ["state"] and gate.gave_way == 1
    gate.release()


def test_using_the_model_while_nobody_else_waits_costs_nothing():
    """alice asked alone for half a minute; then mallory floods: alice's next call still goes first."""
    clock = _Clock()
    gate, mallory, alice, waiter = _mallory_served_alice_waiting(clock, alice_first_alone_s=30.0)
    clock.now = 30.0 + gate.MARGIN_S + 0.2
    assert gate.should_yield()
    threading.Thread(target=gate.give_way, args=(mallory, lambda: None, lambda state: None), daemon=True).start()
    waiter.join(2)
    assert gate.ahead_of(alice) == 0
    gate.release()


def test_a_stop_while_waiting_to_carry_on_leaves_the_gate_to_the_others():
    clock = _Clock()
    gate, flooder, newcomer, waiter = _mallory_served_alice_waiting(clock)
    clock.now = gate.MARGIN_S + 5.0
    flooder.set()
    with pytest.raises(Cancelled):
        gate.give_way(flooder, lambda: None, lambda state: None)
    waiter.join(2)  # alice's call has its turn (released below on its behalf, once it has seen it)
    assert not waiter.is_alive() and gate.ahead_of(newcomer) == 0 and gate.ahead_of(flooder) is None
    gate.release()


@pytest.mark.real_model
@pytest.mark.parametrize("grammar", [None, LIST_GRAMMAR], ids=["free text", "grammar"])
def test_a_long_real_call_gives_way_and_carries_on_with_its_own_reply(fast_model_path, grammar, monkeypatch):
    from models.llama_backend import CALL_GATE, LlamaCppChatModel

    monkeypatch.setattr(CALL_GATE, "MARGIN_S", 1.0)  # the fast model's long reply takes a few seconds

    model = LlamaCppChatModel(fast_model_path, n_ctx=4096, prompt_cache_mb=0)
    long_messages = LISTING if grammar else LONG
    options = GenerationOptions(max_tokens=160, grammar=grammar)
    try:
        # Each reply is asked of an empty context, as in the race below: a prompt read in other slices can
        # differ in the last bits and change a greedy reply.
        short_alone = model.chat(SHORT, GenerationOptions(max_tokens=8)).text
        model.forget_prompts()
        alone = model.chat(long_messages, options).text
        model.forget_prompts()
        long_run, short_run = threading.Event(), threading.Event()
        CALL_GATE.share(long_run, f"flooder-{grammar is None}")
        CALL_GATE.share(short_run, f"newcomer-{grammar is None}")
        finished: dict[str, tuple[float, str]] = {}

        def ask(name, messages, opts, cancel):
            result = model.chat(messages, GenerationOptions(**{**opts.__dict__, "cancel": cancel}))
            finished[name] = (time.perf_counter(), result.text)

        gave_way = CALL_GATE.gave_way
        long_thread = threading.Thread(target=ask, args=("long", long_messages, options, long_run), daemon=True)
        long_thread.start()
        time.sleep(CALL_GATE.MARGIN_S + 1.0)  # the long call is generating by now
        asked = time.perf_counter()
        ask("short", SHORT, GenerationOptions(max_tokens=8), short_run)
        long_thread.join(120)
    finally:
        model.close()
    assert finished["short"][0] < finished["long"][0]
    assert finished["short"][0] - asked < 3 * CALL_GATE.MARGIN_S + 2
    assert CALL_GATE.gave_way > gave_way
    assert finished["long"][1] == alone and finished["short"][1] == short_alone
