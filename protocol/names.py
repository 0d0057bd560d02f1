"""Player names: what is refused, and what two names count as the same one. Pure.

A name is taken in its NFKC form (``ｆｕｌｌｗｉｄｔｈ`` is ``fullwidth``, ``ﬁ`` is
``fi``) and checked in that form (`check`):

- 1 to 24 characters; printable; no outer spaces, no two spaces in a row, and no
  space but U+0020;
- nothing invisible: no format characters (zero-width space and joiners, bidi
  controls, soft hyphen), no default-ignorable code points (variation selectors,
  Hangul fillers U+3164 / U+FFA0 / U+115F / U+1160), no braille blank U+2800,
  nothing unassigned or private-use;
- at most `MAX_MARKS_IN_A_ROW` combining marks on one letter and never the same one
  twice in a row (zalgo is refused; Vietnamese, Devanagari and the like are not);
- letters of one script, as Unicode TR39's "highly restrictive" level: Latin may
  join Han with Hiragana and Katakana (Japanese), Han with Bopomofo, or Han with Hangul;
  any other mix (Cyrillic ``а`` in a Latin ``аlice``) is refused;
- not a whole-script confusable: a name written wholly in Cyrillic or Greek letters
  that each look like a Latin one (Cyrillic ``асе``, Greek ``ΑΒΕ``) is refused.

`key` is what uniqueness compares: the NFKC form, its confusable letters mapped to the
Latin ones they look like (TR39's skeleton, restricted to the letters above plus
``1``/``|`` -> ``l`` and ``0`` -> ``o``), case-folded. The server's roster and the
store's ``name_key`` column both use it: ``a1ice`` and ``b0b`` are taken by ``alice`` and
``bob``. A mixed-script ``аlice`` is refused by `check` before uniqueness is asked; `key`
still matters for names stored before these rules (a Cyrillic ``аlice`` takes ``alice``).
"""

from __future__ import annotations

import unicodedata

MAX_LENGTH = 24
#: Combining marks allowed on one base character.
MAX_MARKS_IN_A_ROW = 2

#: Code points that render as nothing (Default_Ignorable_Code_Point, and blanks that are letters or symbols).
_INVISIBLE_RANGES: tuple[tuple[int, int], ...] = (
    (0x00AD, 0x00AD),
    (0x034F, 0x034F),
    (0x061C, 0x061C),
    (0x115F, 0x1160),
    (0x17B4, 0x17B5),
    (0x180B, 0x180F),
    (0x200B, 0x200F),
    (0x202A, 0x202E),
    (0x2060, 0x206F),
    (0x2800, 0x2800),
    (0x3164, 0x3164),
    (0xFE00, 0xFE0F),
    (0xFEFF, 0xFEFF),
    (0xFFA0, 0xFFA0),
    (0xFFF0, 0xFFF8),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0000, 0xE0FFF),
)
#: General categories refused anywhere: controls, format, surrogates, private use,
#: unassigned, line and paragraph separators.
_REFUSED_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})

#: Cyrillic and Greek letters that look like a Latin letter (after TR39's confusables).
_LOOKALIKES: dict[str, str] = {
    # Cyrillic
    "а": "a", "е": "e", "о": "o", "р": "p", "с": "c", "у": "y", "х": "x", "і": "i", "ј": "j",
    "ѕ": "s", "һ": "h", "ԁ": "d", "ԛ": "q", "ԝ": "w", "ӏ": "l", "ь": "b",
    "А": "A", "В": "B", "Е": "E", "К": "K", "М": "M", "Н": "H", "О": "O", "Р": "P", "С": "C",
    "Т": "T", "У": "Y", "Х": "X", "Ѕ": "S", "І": "I", "Ј": "J", "Ԁ": "D", "Ԛ": "Q", "Ԝ": "W",
    "Ӏ": "l",
    # Greek
    "α": "a", "ο": "o", "ν": "v", "ρ": "p", "ι": "i", "κ": "k", "υ": "u", "χ": "x", "γ": "y",
    "Α": "A", "Β": "B", "Ε": "E", "Ζ": "Z", "Η": "H", "Ι": "I", "Κ": "K", "Μ": "M", "Ν": "N",
    "Ο": "O", "Ρ": "P", "Τ": "T", "Υ": "Y", "Χ": "X",
}  # fmt: skip
#: ASCII characters TR39's skeleton folds together with a letter.
_ASCII_LOOKALIKES = {"1": "l", "|": "l", "0": "o"}
_SKELETON = str.maketrans({**_LOOKALIKES, **_ASCII_LOOKALIKES})

#: Scripts allowed together in one name, beside a single script (TR39 "highly restrictive").
_ALLOWED_MIXES = (
    frozenset({"LATIN", "HAN", "HIRAGANA", "KATAKANA"}),
    frozenset({"LATIN", "HAN", "BOPOMOFO"}),
    frozenset({"LATIN", "HAN", "HANGUL"}),
)
#: First words of Unicode character names that are not a script.
_NOT_SCRIPTS = frozenset({"MODIFIER", "FULLWIDTH", "HALFWIDTH", "SMALL", "COMBINING"})


def normalize(name: str) -> str:
    """The form a name is checked, stored and compared in (NFKC)."""
    return unicodedata.normalize("NFKC", name)


def check(name: str) -> str | None:
    """Why ``name`` (already `normalize`d) is not a valid player name, or None when it is."""
    if not 1 <= len(name) <= MAX_LENGTH:
        return f"a name must be 1 to {MAX_LENGTH} characters"
    if name != name.strip(" ") or "  " in name:
        return "a name must have no outer spaces and no two spaces in a row"
    for char in name:
        if _invisible(char):
            return f"a name must have no invisible or control characters (U+{ord(char):04X})"
        if char != " " and not char.isprintable():  # other spaces are not printable
            return f"a name must have no control characters or spaces but U+0020 (U+{ord(char):04X})"
    problem = _marks(name)
    if problem is not None:
        return problem
    scripts = _scripts(name)
    if len(scripts) > 1 and not any(scripts <= mix for mix in _ALLOWED_MIXES):
        return "a name must not mix letters of different scripts (" + ", ".join(sorted(scripts)).lower() + ")"
    if scripts and scripts <= {"CYRILLIC", "GREEK"} and _all_lookalikes(name):
        return "a name must not be Latin letters' look-alikes from another script"
    return None


def key(name: str) -> str:
    """What two names that count as the same one share: the skeleton of the NFKC form, case-folded."""
    return normalize(name).translate(_SKELETON).casefold()


def _invisible(char: str) -> bool:
    if unicodedata.category(char) in _REFUSED_CATEGORIES:
        return True
    point = ord(char)
    return any(low <= point <= high for low, high in _INVISIBLE_RANGES)


def _marks(name: str) -> str | None:
    """Counted on the decomposed form: NFKC composes ``z`` and an acute into one ``ź``."""
    run, previous = 0, ""
    for char in unicodedata.normalize("NFD", name):
        if unicodedata.category(char) in ("Mn", "Me"):
            run += 1
            if run > MAX_MARKS_IN_A_ROW or char == previous:
                return f"a name may carry at most {MAX_MARKS_IN_A_ROW} different combining marks per letter"
        else:
            run = 0
        previous = char
    if name and unicodedata.category(name[0]) in ("Mn", "Me", "Mc"):
        return "a name must not begin with a combining mark"
    return None


def _script(char: str) -> str | None:
    """The script of a letter, from the first word of its Unicode name (None: no script)."""
    if not unicodedata.category(char).startswith("L"):
        return None
    first = unicodedata.name(char, "").split(" ", 1)[0]
    if first in ("CJK", "IDEOGRAPHIC"):
        return "HAN"
    if first == "KATAKANA-HIRAGANA":
        return "KATAKANA"
    return None if not first or first in _NOT_SCRIPTS else first


def _scripts(name: str) -> set[str]:
    return {s for s in map(_script, name) if s is not None}


def _all_lookalikes(name: str) -> bool:
    return all(char in _LOOKALIKES for char in name if unicodedata.category(char).startswith("L"))
