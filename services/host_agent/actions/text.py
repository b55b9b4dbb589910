"""Text from a host or a request, made printable before it is shown or written into a file.

A scanned SSID is any 32 bytes; a status is read in terminals (`kubectl`); a comment in a
netplan or modprobe.d file ends at the first line break (YAML 1.1, which netplan's libyaml
reads, also breaks lines at U+0085, U+2028 and U+2029). `printable` keeps printable text as it
is and escapes everything else, so nothing can clear a screen, reorder a line (U+202E) or
start a new line of a file:

- `\\xNN`: a byte: an ASCII control character, or a byte that is not UTF-8;
- `\\uNNNN`, `\\UNNNNNNNN`: a character that is not printable (str.isprintable: controls,
  format characters, separators other than the space);
- `\\\\`: a backslash, once anything else is escaped (so escaped text reads back unambiguously).
"""

from __future__ import annotations

_SURROGATE_ESCAPE = 0xDC00
"""bytes.decode("utf-8", "surrogateescape") maps each byte that is not UTF-8 (0x80 to 0xFF) to
U+DC00 + the byte."""


def _byte_of(character: str) -> int | None:
    code = ord(character)
    if code < 0x80 and not character.isprintable():
        return code
    if _SURROGATE_ESCAPE + 0x80 <= code <= _SURROGATE_ESCAPE + 0xFF:
        return code - _SURROGATE_ESCAPE
    return None


def _escape(character: str) -> str:
    byte = _byte_of(character)
    if byte is not None:
        return f"\\x{byte:02x}"
    if character == "\\":
        return "\\\\"
    if character.isprintable():
        return character
    code = ord(character)
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def printable(raw: bytes | str) -> tuple[str, bool]:
    """`raw` as printable text, and whether anything in it had to be escaped. Pure."""
    text = raw.decode("utf-8", errors="surrogateescape") if isinstance(raw, bytes) else raw
    if text.isprintable():
        return text, False
    return "".join(_escape(character) for character in text), True


def one_line(text: str) -> str:
    """`text` with everything that is not printable escaped: safe in a comment or a status. Pure."""
    return printable(text)[0]
