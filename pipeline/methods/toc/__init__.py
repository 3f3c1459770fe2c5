"""Tree of Clarifications (Kim et al., EMNLP 2023): its registration. The tree is grown in ``tree``, nodes are
expanded in ``clarify`` and verified in ``verification``, the answer is written in ``answer`` (and written again
after a person's edits in ``steer``)."""

from pipeline.methods.base import MethodSpec
from pipeline.methods.toc.evaluation import clarification_scores, tree_record
from pipeline.methods.toc.settings import ToCSettings
from pipeline.methods.toc.steer import reanswer
from pipeline.methods.toc.tree import run

METHOD = MethodSpec(
    name="toc", label="Tree of Clarifications", run=run,
    summary="Finds the readings an ambiguous question may have, verifies each against the passages and "
            "merges them into one cited answer.",
    chosen_because="it may have several readings (a version, a time, a person...)",
    settings=ToCSettings, structure="tree",
    prompts=("toc_clarify", "toc_read_passage", "toc_verify", "toc_answer", "toc_answer_brief", "oner_answer",
             "oner_answer_short"),
    record=tree_record, scores=clarification_scores,
    edits=("prune", "restore", "edit_reading", "expand", "drop_passage"), reanswer=reanswer,
)
