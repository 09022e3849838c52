"""OpenAPI generation tweaks, so the published schema is what the service enforces.

- `StrictStructSchemaPlugin`: `additionalProperties: false` on every Struct
  declared with `forbid_unknown_fields=True` (Litestar leaves it out, which
  says "extra fields are fine"), and a field's `Meta(extra_json_schema=...)`
  limits that the handler checks itself (the query's minimum length).
- `publish_flag_limits`: limits that are flags (`retrieval.max_top_k` → the
  `top_k` maximum), written at start-up and again after a runtime override;
  413 and 415 documented on every operation that takes a body.
- `publish_categories`: the loaded corpus's categories as the enum of every
  `category` a request names, written after each corpus load.
- `OptionalBodyOperation`, `FlagOverrideOperation`, `ReplayOperation`: request
  bodies a type annotation cannot describe (optional; only known flags with
  their own types; exactly one of `file` / `yaml`).
- `render_plugins` / `swagger_asset`: the Swagger UI page with its scripts and
  styles served from the `swagger-ui-bundle` package (works offline).

tests/integration/test_fuzz_api.py runs every schemathesis check against it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import msgspec
from litestar import Litestar, Response, get
from litestar._openapi.plugin import OpenAPIPlugin

# Litestar's own Struct plugin (not re-exported publicly); we only extend its output.
from litestar._openapi.schema_generation.plugins.struct import StructSchemaPlugin
from litestar.exceptions import NotFoundException
from litestar.openapi.plugins import OpenAPIRenderPlugin, SwaggerRenderPlugin
from litestar.openapi.spec import OpenAPI, Operation, Reference, RequestBody
from litestar.openapi.spec.enums import OpenAPIType
from litestar.params import FromPath
from swagger_ui_bundle import swagger_ui_path

from service.flags import Flags, leaf_json_schemas

if TYPE_CHECKING:
    from litestar._openapi.schema_generation import SchemaCreator
    from litestar.openapi.spec import Schema
    from litestar.typing import FieldDefinition


class StrictStructSchemaPlugin(StructSchemaPlugin):
    def to_openapi_schema(self, field_definition: FieldDefinition, schema_creator: SchemaCreator) -> Schema:
        schema = super().to_openapi_schema(field_definition, schema_creator)
        info = msgspec.inspect.type_info(field_definition.type_)
        if isinstance(info, msgspec.inspect.StructType):
            if info.forbid_unknown_fields:
                schema.additional_properties = False
            for field in info.fields:
                _document_extra(schema, field)
                _document_items(schema, field)
        return schema


def _document_items(schema: Schema, field: msgspec.inspect.Field) -> None:
    """Litestar drops the constraints of a list's items (`list[Name]` documents
    plain strings while an empty name is refused): copy them over."""
    info = field.type.type if isinstance(field.type, msgspec.inspect.Metadata) else field.type
    target = (schema.properties or {}).get(field.encode_name)
    if not isinstance(info, msgspec.inspect.ListType) or target is None or isinstance(target, Reference):
        return
    item, items = info.item_type, target.items
    if isinstance(item, msgspec.inspect.StrType) and items is not None and not isinstance(items, Reference | list):
        items.min_length = item.min_length
        items.max_length = item.max_length
        items.pattern = item.pattern


# msgspec's `Meta(extra_json_schema=...)` keys Litestar does not carry over, and
# the Schema attribute each one sets.
_EXTRA_KEYS = {"minLength": "min_length", "maxLength": "max_length"}


def _document_extra(schema: Schema, field: msgspec.inspect.Field) -> None:
    """Publish a field's `extra_json_schema`: a limit the handler enforces with a
    clearer message than msgspec's (e.g. the query's length after cleaning)."""
    info = field.type
    if not isinstance(info, msgspec.inspect.Metadata) or not info.extra_json_schema:
        return
    target = (schema.properties or {}).get(field.encode_name)
    if target is None or isinstance(target, Reference):
        return
    for key, value in info.extra_json_schema.items():
        if key in _EXTRA_KEYS:  # (msgspec also lists `description` here; Litestar has it)
            setattr(target, _EXTRA_KEYS[key], value)


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


# -- limits that come from the flags ---------------------------------------------

def flag_maximums(flags: Flags) -> dict[tuple[str, str], int]:
    """(component, property) → the maximum the flags in force allow."""
    return {("RetrieveRequest", "top_k"): flags.retrieval.max_top_k}


def _set_maximum(schema: Schema | Reference, maximum: int) -> None:
    # Beside `minimum`, where Litestar puts a nullable int's bounds.
    if not isinstance(schema, Reference):
        schema.maximum = maximum


def publish_flag_limits(app: Litestar, flags: Flags) -> None:
    """Write the flag-bound limits into the served schema (at start-up and after
    a runtime override), so `/schema/openapi.json` states what is enforced."""
    openapi = app.openapi_schema  # built once and cached by Litestar
    components = openapi.components.schemas or {}
    for (component, prop), maximum in flag_maximums(flags).items():
        schema = components.get(component)
        if schema is not None and schema.properties and prop in schema.properties:
            _set_maximum(schema.properties[prop], maximum)
    _document_body_errors(openapi)
    _rendered_anew(app)


def _rendered_anew(app: Litestar) -> None:
    # Litestar also caches the rendered dict; drop it so the next request renders anew.
    plugin = app.plugins.get(OpenAPIPlugin)
    plugin._openapi_schema = None


# -- values that are the corpus's ----------------------------------------------------

CATEGORY_COMPONENTS = (("RetrieveRequest", "category"),)
"""(component, property) of a request body naming a category."""
CATEGORY_PARAMETERS = (("/documents", "category"),)
"""(path, query parameter) of a GET naming a category."""


def publish_categories(app: Litestar, categories: Sequence[str]) -> None:
    """The corpus's categories as the enum of every `category` a request names (after each
    corpus load: a client can know them; another one is refused with a 400 naming them).
    No categories (no corpus loaded yet): no enum."""
    openapi = app.openapi_schema
    targets: list[Schema | Reference] = []
    components = openapi.components.schemas or {}
    for component, prop in CATEGORY_COMPONENTS:
        schema = components.get(component)
        if schema is not None and schema.properties and prop in schema.properties:
            targets.append(schema.properties[prop])
    for path, name in CATEGORY_PARAMETERS:
        item = (openapi.paths or {}).get(path)
        for parameter in (item.get.parameters or []) if item is not None and item.get is not None else []:
            if not isinstance(parameter, Reference) and parameter.name == name and parameter.schema is not None:
                targets.append(parameter.schema)
    for target in targets:
        _set_enum(target, sorted(categories))
    _rendered_anew(app)


def _set_enum(schema: Schema | Reference, values: list[str]) -> None:
    """On the string branch of `string | null` (Litestar's `oneOf` for an optional value)."""
    if isinstance(schema, Reference):
        return
    branches = [b for b in schema.one_of or [schema] if not isinstance(b, Reference) and b.type == OpenAPIType.STRING]
    for branch in branches:
        branch.enum = list(values) or None


def _document_body_errors(openapi: OpenAPI) -> None:
    """413 and 415 on every operation that takes a body (the app-wide body limit
    and `require_json_body` answer them), in our error shape."""
    from litestar.openapi.spec import OpenAPIMediaType, OpenAPIResponse

    for item in (openapi.paths or {}).values():
        for operation in (item.post, item.put, item.patch):
            if operation is None or operation.request_body is None:
                continue
            for status, text in (("413", "Request body too large"),
                                 ("415", "Content-Type is not application/json")):
                (operation.responses or {}).setdefault(status, OpenAPIResponse(
                    description=text, content={"application/json": OpenAPIMediaType(
                        schema=Reference(ref="#/components/schemas/ErrorBody"))}))


# -- the documentation page, offline -----------------------------------------------

ASSETS_PATH = "/schema/assets"
_SWAGGER_ASSETS = {
    "swagger-ui-bundle.js": "text/javascript",
    "swagger-ui-standalone-preset.js": "text/javascript",
    "swagger-ui.css": "text/css",
    "favicon-32x32.png": "image/png",
}


def render_plugins() -> list[OpenAPIRenderPlugin]:
    """Swagger UI at `/schema`, its scripts and styles served by this service
    (from the `swagger-ui-bundle` package): the page works on an offline network."""
    return [SwaggerRenderPlugin(
        path=["/", "/swagger"],
        js_url=f"{ASSETS_PATH}/swagger-ui-bundle.js",
        css_url=f"{ASSETS_PATH}/swagger-ui.css",
        standalone_preset_js_url=f"{ASSETS_PATH}/swagger-ui-standalone-preset.js",
        favicon=f"<link rel='icon' type='image/png' href='{ASSETS_PATH}/favicon-32x32.png'>",
    )]


@get(f"{ASSETS_PATH}/{{name:str}}", include_in_schema=False, sync_to_thread=False,
     cache=3600)
def swagger_asset(name: FromPath[str]) -> Response[bytes]:
    media_type = _SWAGGER_ASSETS.get(name)
    if media_type is None:
        raise NotFoundException(f"no asset {name!r}")
    return Response((swagger_ui_path / name).read_bytes(), media_type=media_type)


# -- PUT /admin/flags: the body names real flags with values of their type ----------

_JSON_SCHEMA_KEYS = {
    "type": "type", "enum": "enum", "const": "const", "minimum": "minimum", "maximum": "maximum",
    "exclusiveMinimum": "exclusive_minimum", "exclusiveMaximum": "exclusive_maximum",
    "minItems": "min_items", "maxItems": "max_items",
    "minLength": "min_length", "maxLength": "max_length", "pattern": "pattern",
}


def _schema_of(json_schema: dict[str, Any]) -> Schema:
    """The subset of JSON Schema msgspec writes for flag values, as Litestar's Schema."""
    from litestar.openapi.spec import Schema

    kwargs: dict[str, Any] = {}
    for key, value in json_schema.items():
        if key == "type":
            kwargs["type"] = OpenAPIType(value)
        elif key == "prefixItems":
            kwargs["prefix_items"] = [_schema_of(item) for item in value]
        elif key in ("items", "contains") and isinstance(value, dict):
            kwargs[key] = _schema_of(value)
        elif key == "anyOf":  # a flag that may be unset (null), e.g. `decision.answer_p`
            kwargs["any_of"] = [_schema_of(item) for item in value]
        elif key in _JSON_SCHEMA_KEYS:
            kwargs[_JSON_SCHEMA_KEYS[key]] = value
    return Schema(**kwargs)


def flag_override_schema() -> Schema:
    """`{"name": <flag>, "value": <its type>}` or a map `{<flag>: <value>, ...}`.

    Only known flags, each with its own type and range; what JSON Schema cannot
    say (the flags must stay consistent as a whole) is a 400 naming the keys.
    """
    from litestar.openapi.spec import Schema

    leaves = leaf_json_schemas()
    pairs = [
        Schema(type=OpenAPIType.OBJECT, required=["name", "value"], additional_properties=False,
               properties={"name": Schema(const=name), "value": _schema_of(schema)})
        for name, schema in leaves.items()
    ]
    mapping = Schema(type=OpenAPIType.OBJECT, min_properties=1, additional_properties=False,
                     properties={name: _schema_of(schema) for name, schema in leaves.items()})
    return Schema(one_of=[*pairs, mapping],
                  description='{"name": "phase", "value": 2} or a map {"phase": 2, "kill_switch.p95_ms": 400}')


@dataclass
class FlagOverrideOperation(Operation):
    """`operation_class=` of PUT /admin/flags: documents the body `flag_override_schema` says."""

    def __post_init__(self) -> None:
        if isinstance(self.request_body, RequestBody):
            for media in self.request_body.content.values():
                media.schema = flag_override_schema()


@dataclass
class ReplayOperation(Operation):
    """`operation_class=` of POST /admin/replay: exactly one of `file` or `yaml`
    (the other absent or null), which a Struct alone cannot say."""

    def __post_init__(self) -> None:
        from litestar.openapi.spec import Schema

        def only(given: str, other: str) -> Schema:
            return Schema(required=[given], properties={
                given: Schema(type=OpenAPIType.STRING), other: Schema(type=OpenAPIType.NULL)})

        if isinstance(self.request_body, RequestBody):
            for media in self.request_body.content.values():
                if media.schema is not None:
                    media.schema = Schema(all_of=[media.schema],
                                          one_of=[only("file", "yaml"), only("yaml", "file")])
