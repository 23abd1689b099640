"""The data converter of Flowdesk's clients and workers: Temporal's default, except that JSON
keeps the order of an object's keys (the SDK's sorts them), so a step's output, a node's data
and a run's variables reach the other side, and the run's log, exactly as they were."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from temporalio.api.common.v1 import Payload
from temporalio.converter import (
    AdvancedJSONEncoder,
    CompositePayloadConverter,
    DataConverter,
    DefaultPayloadConverter,
    JSONPlainPayloadConverter,
)

__all__ = ["DATA_CONVERTER", "OrderedJSONPayloadConverter", "FlowdeskPayloadConverter"]


class OrderedJSONPayloadConverter(JSONPlainPayloadConverter):
    """``json/plain`` payloads with the keys in their own order."""

    def to_payload(self, value: Any) -> Payload | None:
        return Payload(
            metadata={"encoding": self.encoding.encode()},
            data=json.dumps(value, cls=AdvancedJSONEncoder, separators=(",", ":")).encode(),
        )


class FlowdeskPayloadConverter(CompositePayloadConverter):
    def __init__(self) -> None:
        super().__init__(
            *(
                OrderedJSONPayloadConverter() if isinstance(c, JSONPlainPayloadConverter) else c
                for c in DefaultPayloadConverter.default_encoding_payload_converters
            )
        )


DATA_CONVERTER = dataclasses.replace(DataConverter.default, payload_converter_class=FlowdeskPayloadConverter)
