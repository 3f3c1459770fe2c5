"""Method defaults in one place, each with where it comes from. A run gets its own copy (per session)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field


class Settings(BaseModel):
    """Knobs shared by the methods; the UI and CLI override them per run."""

    top_k: int = Field(
        5,
        ge=1,
        le=20,
        description="Passages given to the model per answer. ToC uses top-5 per RAC prompt (Kim et al. 2023, "
        "Sec. 3); the 1.5B model reads 3-5 short passages better than 7 (DESIGN.md, measured).",
    )
    answer_max_tokens: int | None = Field(
        None, description="Override the answer prompt's own budget (prompts/*.yaml max_tokens)."
    )
    answer_style: Literal["long", "short"] = Field(
        "long",
        description="long: a few sentences citing passages (the app, ASQA); short: a phrase only, for datasets "
        "scored by EM/F1 against short answers (the IRCoT reader, FlashRAG).",
    )
    temperature: float = Field(0.0, ge=0.0, le=2.0, description="Greedy decoding makes runs reproducible.")
    use_web: bool = Field(False, description="Add DuckDuckGo results to local passages.")
