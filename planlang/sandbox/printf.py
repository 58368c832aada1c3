"""The fields of a %-template, counted as CPython parses them: what ``sizes.Sizes.mod`` bounds
before ``template % args`` is made."""

from __future__ import annotations

__all__ = ["printf_fields"]


def printf_fields(template: str) -> tuple[int, int, int]:
    """(sum of the numeric widths and precisions, number of '*', number of fields) of a
    %-template, parsed like CPython's ``PyUnicode_Format`` does."""
    widths = stars = fields = 0
    end = len(template)
    i = template.find("%")
    while 0 <= i < end - 1:
        i += 1
        if template[i] == "(":  # a mapping key; CPython counts nested parentheses
            depth = 1
            i += 1
            while i < end and depth:
                depth += {"(": 1, ")": -1}.get(template[i], 0)
                i += 1
        while i < end and template[i] in "-+ #0":
            i += 1
        for _part in range(2):  # width, then precision after '.'
            if i < end and template[i] == "*":
                stars += 1
                i += 1
            else:
                start = i
                while i < end and "0" <= template[i] <= "9":
                    i += 1
                if i > start:
                    widths += int(template[start:i]) if i - start < 19 else 1 << 62
            if _part == 0 and i < end and template[i] == ".":
                i += 1
            else:
                break
        if i < end and template[i] in "hlL":
            i += 1
        if i < end and template[i] != "%":
            fields += 1
        i = template.find("%", i + 1)
    return widths, stars, fields
