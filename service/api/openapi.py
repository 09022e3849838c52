"""OpenAPI generation tweaks, so the published schema is what the service enforces.

Litestar documents a msgspec Struct without `additionalProperties`, which
says "extra fields are fine"; our wire types forbid unknown fields (400).
`StrictStructSchemaPlugin` adds `additionalProperties: false` to the schema
of every Struct declared with `forbid_unknown_fields=True`, so clients and
schemathesis (tests/integration/test_fuzz_api.py) see the real contract.
`OptionalBodyOperation` marks an optional request body as not required.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import msgspec

# Litestar's own Struct plugin (not re-exported publicly); we only extend its output.
from litestar._openapi.schema_generation.plugins.struct import StructSchemaPlugin
from litestar.openapi.spec import Operation, RequestBody

if TYPE_CHECKING:
    from litestar._openapi.schema_generation import SchemaCreator
    from litestar.openapi.spec import Schema
    from litestar.typing import FieldDefinition


class StrictStructSchemaPlugin(StructSchemaPlugin):
    def to_openapi_schema(self, field_definition: FieldDefinition, schema_creator: SchemaCreator) -> Schema:
        schema = super().to_openapi_schema(field_definition, schema_creator)
        info = msgspec.inspect.type_info(field_definition.type_)
        if isinstance(info, msgspec.inspect.StructType) and info.forbid_unknown_fields:
            schema.additional_properties = False
        return schema


@dataclass
class OptionalBodyOperation(Operation):
    """`operation_class=` for a handler whose body may be omitted.

    Litestar always documents a request body as required, even for
    `data: X | None = None`; a client (or schemathesis) would then believe a
    call without a body is invalid while the service accepts it.
    """

    def __post_init__(self) -> None:
        if isinstance(self.request_body, RequestBody):
            self.request_body.required = False
