"""JSON schemas the stand-in's tests answer: one of each feature it draws for (types, bounds,
enums, references, combinators, formats, patterns). Shared by the price tests and the stand-in's
golden digests, which pin answers to these in this order."""

from __future__ import annotations

from typing import Any

SCHEMAS: list[dict[str, Any]] = [
    {"type": "object", "properties": {"a": {"type": "integer", "minimum": 5, "maximum": 9}},
     "required": ["a"]},
    {"type": "array", "items": {"enum": ["x", "y"]}, "minItems": 2, "maxItems": 4,
     "uniqueItems": True},
    {"type": "string", "minLength": 30, "maxLength": 40},
    {"type": ["integer", "null"], "exclusiveMinimum": 0, "exclusiveMaximum": 3},
    {"$defs": {"p": {"type": "object", "properties": {"q": {"type": "boolean"}},
                     "required": ["q"]}},
     "type": "array", "items": {"$ref": "#/$defs/p"}, "minItems": 1},
    {"anyOf": [{"type": "string", "format": "date"}, {"type": "integer"}]},
    {"allOf": [{"type": "object", "properties": {"a": {"const": 1}}, "required": ["a"]},
               {"properties": {"b": {"type": "number", "multipleOf": 0.5}},
                "required": ["b"]}]},
    {"type": "string", "pattern": "^[0-9]+$"},
]  # fmt: skip
