"""An example plug-in package for Flowdesk: one node kind, ``template``.

It is what a plug-in author writes (see README, "Plug-in node kinds"): a data model, a
spec, and an entry point in the ``flowdesk.nodes`` group naming the spec. It lives under
``tests/`` and is not shipped; the test suite puts ``tests/plugins`` on ``sys.path`` (the
``*.dist-info`` folder beside it carries the entry point) as if it were installed.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from engine import NodeData, NodeError, NodeSpec, as_text


class TemplateData(NodeData):
    template: str = Field(
        "{{input}}",
        title="Template",
        description="The text to produce; {{input}} is replaced by the previous output.",
        json_schema_extra={"multiline": True},
    )
    case: Literal["keep", "upper", "lower"] = Field(
        "keep", title="Letter case", description="Change the letter case of the result."
    )
    repeat: int = Field(1, ge=1, le=10, title="Repeat", description="How many times the text is repeated.")
    strip: bool = Field(True, title="Trim spaces", description="Remove spaces at both ends of the result.")


class TemplateSpec(NodeSpec):
    kind = "template"
    data_model = TemplateData
    label = "Template"
    description = "Fills a text template with the previous output."
    icon = "template"
    color = "#d2679f"
    category = "Text"

    def summary(self, data: Any) -> list[tuple[str, bool]]:
        return [(" ".join(data.template.split()) or "(empty template)", False)]

    def check(self, node: Any, checks: Any) -> None:
        if not node.data.template.strip():
            checks.error("template_empty", f"{checks.label(node)} has an empty template; write the text to produce.")

    async def execute(self, ctx: Any, node: Any, value: Any) -> tuple[str, str]:
        data = node.data
        if not data.template.strip():
            raise NodeError(f"Template '{node.id}' has an empty template.")
        text = data.template.replace("{{input}}", as_text(value)) * data.repeat
        if data.case == "upper":
            text = text.upper()
        elif data.case == "lower":
            text = text.lower()
        if data.strip:
            text = text.strip()
        ctx.last_text_output = text
        return text, "output"


SPECS = [TemplateSpec()]
