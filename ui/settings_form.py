"""The settings panel, generated from the settings models: a slider for a bounded number, a radio or dropdown
for a choice, a checkbox for a flag; labels and hover text from the fields' descriptions. A new method's
settings appear here without any UI code."""

from __future__ import annotations

from dataclasses import dataclass

import gradio as gr
from pydantic import BaseModel

from pipeline.settings import SettingField, Settings, setting_fields

_SHARED_SKIP = {"temperature"}  # kept at greedy decoding in the app: runs stay reproducible


@dataclass(frozen=True)
class Control:
    key: str  # dotted setting name: "top_k", "toc.max_depth"
    component: gr.components.Component


def _label(name: str) -> str:
    return name.replace("_", " ").capitalize()


def _first_sentence(text: str) -> str:
    """The short note under a control (the full description, with its sources, is in ``ask --help``)."""
    head = text.split(". ", 1)[0].strip()
    return head if head.endswith(".") else head + "."


def _component(field: SettingField, key: str) -> gr.components.Component:
    info = _first_sentence(field.description) if field.description else None
    elem_id = "setting-" + key.replace(".", "-").replace("_", "-")
    if field.kind == "bool":
        return gr.Checkbox(field.default, label=_label(field.name), info=info, elem_id=elem_id)
    if field.kind == "choice":
        return gr.Radio(list(field.choices), value=field.default, label=_label(field.name), info=info,
                        elem_id=elem_id)
    if field.minimum is not None and field.maximum is not None:
        step = 1 if field.kind == "int" else 0.05
        return gr.Slider(field.minimum, field.maximum, field.default, step=step, label=_label(field.name),
                         info=info, elem_id=elem_id)
    return gr.Number(field.default, label=_label(field.name), info=info, precision=0 if field.kind == "int" else None,
                     elem_id=elem_id)


def build_settings_panel(methods: dict[str, tuple[str, type[BaseModel]]]) -> list[Control]:
    """Draw the panel (shared settings, then one accordion per method: ``name -> (label, model)``) inside the
    current Gradio block; return its controls in order."""
    controls = [Control(f.name, _component(f, f.name)) for f in setting_fields(Settings)
                if f.name not in _SHARED_SKIP]
    for name, (label, model) in methods.items():
        fields = setting_fields(model)
        if not fields:
            continue
        with gr.Accordion(label, open=False, elem_id=f"settings-{name}"):
            controls += [Control(f"{name}.{f.name}", _component(f, f"{name}.{f.name}")) for f in fields]
    return controls


def settings_from_values(controls: list[Control], values: list, models: dict[str, type[BaseModel]],
                         base: Settings | None = None) -> Settings:
    """The settings the panel's ``values`` (in the order of ``controls``) describe; ``ValueError`` for a
    value out of bounds (a hand-crafted request)."""
    overrides = {c.key: v for c, v in zip(controls, values) if v is not None}
    return (base or Settings()).changed(overrides, models)
