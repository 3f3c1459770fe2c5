"""IRCoT (Trivedi et al., ACL 2023): its registration. The chain and its readers are in ``chain``."""

from pipeline.methods.base import MethodSpec
from pipeline.methods.ircot.chain import IRCoTSettings, chain_record, run
from pipeline.methods.ircot.steer import reanswer

METHOD = MethodSpec(
    name="ircot", label="IRCoT (reasoning interleaved with retrieval)", run=run,
    summary="Reasons one sentence at a time, retrieving with each sentence: for questions that chain or "
            "compare facts from several passages.",
    chosen_because="it chains or compares facts from more than one source",
    settings=IRCoTSettings, structure="chain",
    prompts=("ircot_reason", "oner_answer", "oner_answer_short", "ircot_read", "ircot_read_short", "ircot_plan",
             "ircot_hop_answer", "ircot_hop_infer"),
    record=chain_record, edits=("edit_step", "drop_passage"), reanswer=reanswer,
)
