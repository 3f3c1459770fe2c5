"""Knowledge Graph Prompting (Wang et al., AAAI 2024): its registration. The walk and its reader are in
``walk``; the graphs it walks and their seeds in ``graph_sources``; questions about a table or a page in
``structure_nodes``; the walk read hop by hop in ``hop_read``."""

from pipeline.methods.base import MethodSpec
from pipeline.methods.kgp.walk import KGPSettings, reanswer, run, walk_record, walk_scores

METHOD = MethodSpec(
    name="kgp", label="KGP (knowledge graph prompting)", run=run,
    summary="Walks a graph of the collection's passages (shared keywords, embedding neighbours, titles named, "
            "pages and tables), the model choosing each next piece of evidence: for questions whose facts are "
            "spread over linked documents, and for questions about a table or a page.",
    settings=KGPSettings, structure="graph",
    prompts=("kgp_next_evidence", "oner_answer", "oner_answer_short", "ircot_plan", "ircot_hop_answer",
             "ircot_hop_infer", "ircot_read", "ircot_read_short"),
    record=walk_record, scores=walk_scores, reanswer=reanswer, edits=("pin_passage", "drop_passage"),
)
