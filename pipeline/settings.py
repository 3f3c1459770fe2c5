"""Run settings: the knobs every method shares, plus each method's own settings model (declared by the method,
``pipeline.methods``). Each default says where it comes from. A run gets its own copy (per session)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, SerializeAsAny

HIDDEN = {"expose": False}  # a field's json_schema_extra: not offered as a UI control or CLI flag


class Settings(BaseModel):
    """Knobs shared by the methods; the UI, the CLI and the evaluation override them per run. ``methods`` holds
    the settings of methods whose defaults were changed, by method name (``for_method`` fills in the rest)."""

    model_config = ConfigDict(extra="forbid")

    top_k: int = Field(
        5,
        ge=1,
        le=20,
        description="Passages given to the model per answer. ToC uses top-5 per RAC prompt (Kim et al. 2023, "
        "Sec. 3); the 1.5B model reads 3-5 short passages better than 7 (docs/design-notes.md, measured).",
    )
    answer_style: Literal["long", "short"] = Field(
        "long",
        description="long: a few sentences citing passages (the app, ASQA); short: a phrase only, for datasets "
        "scored by EM/F1 against short answers (the IRCoT reader, FlashRAG).",
    )
    temperature: float = Field(0.0, ge=0.0, le=2.0, description="0 is greedy decoding: runs are reproducible.")
    min_support: float = Field(
        0.7, ge=0.0, le=1.0,
        description="Answer when one passage mentions at least this weighted share of the question's key terms "
        "(names and numbers count double), or when one is close enough in meaning (support_similarity); "
        "otherwise say that the sources do not answer it. 0 never abstains. Chosen with support_similarity on "
        "dev items 50-99 (docs/benchmarks.md, benchmarks/abstention.py).")
    support_similarity: float = Field(
        0.45, ge=0.0, le=1.0,
        description="Also answer when one passage's embedding cosine similarity to the question reaches this, "
        "for questions worded unlike their passages ('WW1' for 'the First World War'); 1 turns it off. "
        "Calibrated for the bundled all-MiniLM-L6-v2 embedder: on held-out dev items the pair abstains on 90% "
        "of questions whose passages are absent, against 57% for the earlier lexical-only check, and wrongly on "
        "5 of 200 whose passages are present (docs/benchmarks.md).")
    ask_again_yes_no: bool = Field(
        True, description="A short answer that is a bare yes or no to a question asking for a name, place, date or "
        "number (pipeline.text.asks_for_phrase) is asked for once more, the model told why; a second yes or no "
        "is not given as the answer. Measured on the dev and test items it touches (docs/benchmarks.md, \"A yes "
        "or no to a question that asks for a name\").", json_schema_extra=HIDDEN)
    passage_window: int = Field(
        0, ge=0, le=300,
        description="OneR's answer (and Auto's quick answer) shows each passage as at most about this many words: "
        "its first sentence, then the sentences closest in meaning to the question (pipeline/windows.py), so the "
        "model reads fewer tokens. 0 shows whole passages (the default). 60 was 1.21-1.49 x faster on the first 50 "
        "items of every dev and test file within its quality intervals, but lost 14.8 points [-27.8, -3.7] on the "
        "real-document questions, whose manual passages hold options and lists a window leaves out "
        "(docs/performance.md).")
    answer_max_tokens: int | None = Field(
        None, description="Override the answer prompt's own budget (prompts/*.yaml max_tokens).",
        json_schema_extra=HIDDEN,
    )
    use_web: bool = Field(False, description="Add DuckDuckGo results to local passages.",
                          json_schema_extra=HIDDEN)
    auto_deeper: bool = Field(
        True, description="Auto: after its quick answer, run a deeper method when the check asks for one (an "
        "answer reached through another passage: IRCoT; a question whose wording points at several readings: ToC; "
        "newer facts with web search on: the web agent). Off: the check still says what could help, and the quick "
        "answer is the answer.")
    auto_hop_coverage: float = Field(
        0.7, ge=0.0, le=1.0, description="Auto goes to IRCoT when the question reaches one thing through another "
        "and the passage holding the quick answer mentions less than this share of the question. Chosen on "
        "HotpotQA, 2Wiki and MuSiQue dev items 0-49 (benchmarks/auto_replay.py, docs/benchmarks.md) with IRCoT "
        "choosing hop by hop per question: 0.7 keeps Auto within 2.4 F1 of IRCoT on each file, where 0.5 (the "
        "value chosen with the sentence chain) left 2Wiki's compositional questions to the quick answer "
        "(-17.3); always going deeper (1.01) scores the same as 0.7 at a slower median. With auto_bridge_always "
        "on it applies to comparisons only.", json_schema_extra=HIDDEN)
    auto_bridge_always: bool = Field(
        True, description="Auto goes to IRCoT whenever a question that reaches one thing through another (the "
        "director of the film X, X's wife, a grandparent) has a quick answer, whatever share of the question the "
        "answer's passage mentions: a passage that mentions most of such a question is usually X's own, which "
        "names the bridge but not what is asked of it. Chosen on dev items 0-49 of HotpotQA, 2Wiki and MuSiQue "
        "(docs/benchmarks.md, \"Auto: a bridge question always goes deeper\").", json_schema_extra=HIDDEN)
    auto_readings: bool = Field(
        True, description="Auto goes to ToC when the question's wording points at several readings (the cues "
        "and the vote of pipeline/routing.py).", json_schema_extra=HIDDEN)
    methods: dict[str, SerializeAsAny[BaseModel]] = Field(default_factory=dict, json_schema_extra=HIDDEN)

    def for_method(self, name: str, model: type[BaseModel]) -> BaseModel:
        """The settings of method ``name`` (its defaults unless changed)."""
        current = self.methods.get(name)
        return current if isinstance(current, model) else model()

    def changed(self, overrides: dict[str, Any], models: dict[str, type[BaseModel]]) -> "Settings":
        """A copy with ``overrides`` applied: ``{"top_k": 3, "toc.max_depth": 2}``; values are validated (and
        converted from text) by the settings' own models. Raises ``ValueError`` naming a bad key or value."""
        common: dict[str, Any] = {}
        per_method: dict[str, dict[str, Any]] = {}
        for key, value in overrides.items():
            method, dot, field = key.partition(".")
            if not dot:
                if key not in Settings.model_fields or key == "methods":
                    raise ValueError(f"Unknown setting '{key}'.")
                common[key] = value
            elif method not in models:
                raise ValueError(f"Unknown method '{method}' in setting '{key}'.")
            elif field not in models[method].model_fields:
                raise ValueError(f"Method '{method}' has no setting '{field}'.")
            else:
                per_method.setdefault(method, {})[field] = value
        methods = dict(self.methods)
        for method, values in per_method.items():
            base = self.for_method(method, models[method]).model_dump()
            methods[method] = _validated(models[method], {**base, **values}, prefix=f"{method}.")
        merged = _validated(Settings, {**self.model_dump(exclude={"methods"}), **common})
        return merged.model_copy(update={"methods": methods})


class NoSettings(BaseModel):
    """For a method without settings of its own."""

    model_config = ConfigDict(extra="forbid")


def _validated(model: type[BaseModel], values: dict[str, Any], prefix: str = "") -> BaseModel:
    from pydantic import ValidationError

    try:
        return model.model_validate(values)
    except ValidationError as exc:
        problems = "; ".join(f"{prefix}{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise ValueError(f"Invalid setting: {problems}") from None


@dataclass(frozen=True)
class SettingField:
    """One setting as the UI and the CLI offer it: generated from a pydantic field."""

    name: str
    kind: str  # int, float, bool or choice
    default: Any
    description: str
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[str, ...] = ()


def setting_fields(model: type[BaseModel]) -> list[SettingField]:
    """The settings of ``model`` a person may change (types, bounds, choices and descriptions)."""
    out = []
    for name, info in model.model_fields.items():
        extra = info.json_schema_extra if isinstance(info.json_schema_extra, dict) else {}
        if extra.get("expose") is False:
            continue
        bounds = {type(m).__name__: m for m in info.metadata}
        low = getattr(bounds.get("Ge"), "ge", None)
        high = getattr(bounds.get("Le"), "le", None)
        annotation = info.annotation
        if get_origin(annotation) is Literal:
            kind, choices = "choice", tuple(str(c) for c in get_args(annotation))
        elif annotation is bool:
            kind, choices = "bool", ()
        elif annotation in (int, float):
            kind, choices = annotation.__name__, ()
        else:
            raise TypeError(f"{model.__name__}.{name}: settings must be int, float, bool or a Literal; hide others "
                            "with json_schema_extra=HIDDEN.")
        out.append(SettingField(name, kind, info.default, info.description or "", low, high, choices))
    return out
